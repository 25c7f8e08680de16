"""The run page reads top-down in a real browser (issue 26, items 2, 5 and 6): a summary that names the
metric and its direction, the budget, the duration and the best attempt; the charts that matter on their own
axes (score apart from reward, the valid rate on 0–1); learner diagnostics folded and drawn when opened, with
legends in words; and every chart says what it waits for before the first attempt."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ATTEMPTS, BUDGET = 6, 10  # finished_run's (tests/browser/conftest.py): attempt 5 of 6 is the best


@pytest.fixture
def queued_run(owner, rmsle_competition) -> int:
    """A queued run; no worker runs here to start it (the test is not marked `workers`)."""
    from webapp.runs.models import Run

    run = Run.objects.create(owner=owner, name="waiting", is_public=True, config={"attempts": BUDGET})
    run.competitions.add(rmsle_competition)
    return run.id


def chart(page, element_id: str) -> dict:
    """A drawn chart's traces (name and point count) and its axes' titles and ranges."""
    return page.evaluate(
        """(id) => { const el = document.getElementById(id); const lay = el.layout || {};
        return { traces: (el.data || []).map((t) => ({ name: t.name, n: (t.x || []).length })),
                 y: lay.yaxis && lay.yaxis.title && lay.yaxis.title.text,
                 yrange: lay.yaxis && lay.yaxis.range,
                 notes: (lay.annotations || []).map((a) => a.text) }; }""",
        element_id,
    )


def test_the_summary_names_the_metric_budget_duration_and_best_attempt(finished_run, page):
    page.goto(f"/runs/{finished_run}/")
    page.wait_for_function("window.practicum.charts >= 1")
    assert page.inner_text("#stat-metric") == "rmsle, lower is better"
    assert page.inner_text("#stat-best") == "0.30000"
    assert page.get_attribute("#stat-best-link", "href") == f"/runs/{finished_run}/attempts/5/"
    assert page.inner_text("#stat-attempts") == str(ATTEMPTS) and page.inner_text("#stat-budget") == str(
        BUDGET
    )
    assert page.inner_text("#stat-duration") == "2 min 5 s"
    assert "rmsle" in page.inner_text("#metric-lines") and "lower is better" in page.inner_text(
        "#metric-lines"
    )
    assert "can reach 1.6" in page.inner_text("#reward-words")
    page.click("#settings summary")
    assert "Attempts per update (B)" in page.inner_text("#settings")


def test_score_and_reward_have_their_own_axes_and_the_valid_rate_runs_from_0_to_1(finished_run, page):
    page.goto(f"/runs/{finished_run}/")
    page.wait_for_function("window.practicum.charts >= 1")
    score = chart(page, "chart-score")
    assert score["y"] == "rmsle (lower is better)"
    assert [t["n"] for t in score["traces"]] == [4, 4], (
        "four valid scores; best improves at 1, 3, 5, carried to 6"
    )
    assert chart(page, "chart-reward")["traces"][0]["n"] == ATTEMPTS
    valid = chart(page, "chart-valid")
    assert valid["yrange"][0] == 0 and valid["yrange"][1] <= 1.05
    funnel = page.evaluate("document.getElementById('chart-funnel').data[0].y")
    assert funnel[0] == "imports done", "stages in words, not ids"


def test_diagnostics_are_folded_drawn_when_opened_and_named_in_words(finished_run, page):
    page.goto(f"/runs/{finished_run}/")
    page.wait_for_function("window.practicum.charts >= 1")
    assert not page.locator("#chart-learner").is_visible()
    assert page.locator("#chart-sampler").count() == 0, "a grammar run has no language-model charts"
    page.click("#diagnostics summary")
    page.wait_for_function("(document.getElementById('chart-learner').data || []).length > 0")
    names = [t["name"] for t in chart(page, "chart-learner")["traces"]]
    assert "policy loss" in names and "policy entropy" in names and "losses/policy" not in names
    assert page.evaluate("document.getElementById('chart-learner').offsetWidth") > 300


def test_before_the_first_attempt_every_chart_says_what_it_waits_for(queued_run, page):
    page.goto(f"/runs/{queued_run}/")
    page.wait_for_function("window.practicum.charts >= 1")
    for element_id in ("chart-score", "chart-reward", "chart-valid", "chart-duration", "chart-funnel"):
        assert chart(page, element_id)["notes"] == ["waiting for the first finished attempt…"], element_id
    page.click("#diagnostics summary")
    page.wait_for_function("(document.getElementById('chart-learner').layout || {}).annotations")
    assert chart(page, "chart-learner")["notes"] == ["waiting for the first policy update…"]
