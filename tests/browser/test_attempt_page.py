"""The attempt page in a real browser (issue 26, item 10): an improve attempt names its parent and shows the
coloured diff from it, the score at its metric's precision with the metric's name and direction, previous
and next walk the run's attempts, and the bundle link downloads. The run is made in the database."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PARENT = "import pandas as pd\nmodel = 'knn'\nprint('fit')\n"
CHILD = "import pandas as pd\nmodel = 'forest'\nprint('fit')\n"


@pytest.fixture
def improve_run(django_user_model) -> int:
    """A public run with three attempts: 1 solves, 2 improves 1 (rmsle 0.219401837), 3 solves again."""
    from django.utils import timezone

    from webapp.competitions.models import Competition
    from webapp.runs.models import Attempt, Run

    owner = django_user_model.objects.create_user("dora", password="dora-browser-password-5")
    competition = Competition.objects.create(
        slug="house-prices-attempts", name="House prices", owner=owner, is_public=True, description="Prices.",
        metric="rmsle", id_column="id", target_columns=["price"], time_limit_s=60, memory_mb=512,
    )  # fmt: skip
    run = Run.objects.create(owner=owner, name="attempts", is_public=True, status="finished", config={})
    run.competitions.add(competition)
    rows = [("0-0", "solve", "", PARENT, 0.5), ("0-1", "improve", "0-0", CHILD, 0.219401837),
            ("0-2", "solve", "", PARENT, 0.4)]  # fmt: skip
    for number, (key, kind, parent, program, score) in enumerate(rows, start=1):
        Attempt.objects.create(
            run=run, key=key, competition=competition, status="ok", prompt_kind=kind, parent_key=parent,
            policy_version=0, program=program, valid=True, score=score, reward=1.2, duration_s=1.0,
            started_at=timezone.now(), finished_at=timezone.now(), number=number,
        )  # fmt: skip
    return run.id


def test_an_improve_attempt_shows_the_coloured_diff_from_its_parent(improve_run, page, screenshot):
    page.goto(f"/runs/{improve_run}/attempts/2/")
    screenshot("attempt-improve")
    assert "Changes from attempt 1 (its parent)" in page.inner_text("#parent-changes h2")
    added = page.locator("#parent-diff .diff-added").first
    removed = page.locator("#parent-diff .diff-removed").first
    assert added.inner_text() == "+model = 'forest'" and removed.inner_text() == "-model = 'knn'"
    background = "el => getComputedStyle(el).backgroundColor"
    assert added.evaluate(background) == "rgb(230, 255, 236)"  # green
    assert removed.evaluate(background) == "rgb(255, 235, 233)"  # red
    assert page.inner_text("#score") == "rmsle 0.21940 (lower is better)"
    page.click("#parent-changes h2 a")
    page.wait_for_url(f"**/runs/{improve_run}/attempts/1/")
    assert "A fresh solution (solve prompt)." in page.inner_text("#origin")


def test_previous_and_next_walk_the_runs_attempts_and_the_bundle_downloads(improve_run, page):
    page.goto(f"/runs/{improve_run}/attempts/2/")
    bundle = page.get_attribute("#bundle", "href")
    assert bundle == f"/runs/{improve_run}/attempts/2/bundle.zip"
    response = page.request.get(bundle)
    assert response.status == 200 and response.body()[:2] == b"PK"  # a zip file
    page.click("#next-attempt")
    page.wait_for_url("**/attempts/3/")
    assert page.locator("#next-attempt").count() == 0, "the last attempt has no next"
    page.click("#previous-attempt")
    page.wait_for_url("**/attempts/2/")
    page.click("#previous-attempt")
    page.wait_for_url("**/attempts/1/")
    assert page.locator("#previous-attempt").count() == 0, "the first attempt has no previous"
