"""Issue 28 in a real browser: a run started from the form with the validation split as its reward source
shows the clean badge and its one final grade on its run page, and its competition's leaderboard row shows
the same badge with that grade as its result."""

from __future__ import annotations

import re

import pytest

pytestmark = [
    pytest.mark.browser,
    pytest.mark.workers,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

USERNAME, PASSWORD = "erin", "erin-browser-password-5"
SLUG = "iris-species"
RUN_PATH = re.compile(r"/runs/(\d+)/$")
SETTINGS = {"attempts": 4, "actors": 2, "batch": 2, "seed": 3}
RUN_TIMEOUT_MS = 150_000  # a supervisor imports torch before its first attempt: slow on a busy machine
FINISHED = "document.getElementById('stat-status').textContent === 'finished'"


@pytest.fixture
def erin(django_user_model):
    """Made before the browser starts: playwright's event loop in this thread forbids ORM calls after."""
    return django_user_model.objects.create_user(USERNAME, password=PASSWORD)


def start_validation_run(page) -> int:
    """Start a small run on iris from the form with the validation split as its reward source; its id."""
    page.goto(f"/runs/new/?competition={SLUG}")
    page.select_option("#id_reward_source", "validation")
    if not page.locator("#advanced").evaluate("details => details.open"):
        page.click("#advanced > summary")
    for field, value in SETTINGS.items():
        page.fill(f"#id_{field}", str(value))
    page.focus("#start")  # from the keyboard: see test_journey.start_run for why not a click
    page.keyboard.press("Enter")
    page.wait_for_url(RUN_PATH)
    return int(RUN_PATH.search(page.url).group(1))


def test_a_validation_run_from_the_form_shows_its_clean_badge_on_its_page_and_on_the_leaderboard(
    erin, iris, page, screenshot, log_in
):
    log_in(page, USERNAME, PASSWORD)
    run_id = start_validation_run(page)
    page.wait_for_function(FINISHED, timeout=RUN_TIMEOUT_MS)
    page.reload()  # the result line is drawn by the server, once the run has one
    assert page.locator("h1 .reward-source-validation").inner_text() == "validation · clean"
    result = page.locator("#final-grade")
    assert "Result:" in result.inner_text() and "graded once on the hidden answers" in result.inner_text()
    grade = result.locator("strong").nth(1).inner_text()
    assert re.fullmatch(r"\d\.\d+", grade), f"a valid final grade, not {grade!r}"
    budget = str(SETTINGS["attempts"])
    page.wait_for_function(f"document.getElementById('stat-attempts').textContent === {budget!r}")
    assert page.inner_text("#stat-after") == "(+1 after training)", "its final grading is no training attempt"
    screenshot("reward-source-run-page")

    page.goto(f"/competitions/{SLUG}/")
    row = page.locator(f"#leaderboard-run-{run_id}")
    assert row.locator(".reward-source-validation").inner_text() == "validation · clean"
    assert row.locator("td.result").inner_text() == grade
    page.click("#source-hidden")
    page.wait_for_url(re.compile(r"\?source=hidden"))
    assert page.locator(f"#leaderboard-run-{run_id}").count() == 0, "the hidden filter leaves it out"
    page.click("#source-validation")
    page.wait_for_url(re.compile(r"\?source=validation"))
    assert page.locator(f"#leaderboard-run-{run_id}").count() == 1
    screenshot("reward-source-leaderboard")
