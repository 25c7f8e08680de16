"""Issue 27 in a real browser: a study of the grammar policy, 2 seeds × arms `static: updates=off` and `rl`,
started from the start form's Study part with the "RL against static" button; its page follows the four runs
as they run one after another and ends with both arms' mean curves and bands, the valid rate per window, the
test of rl against static, and the run table."""

from __future__ import annotations

import re

import pytest

pytestmark = [
    pytest.mark.browser,
    pytest.mark.workers,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

USERNAME, PASSWORD = "flora", "flora-browser-password-7"
SLUG = "iris-species"
STUDY_PATH = re.compile(r"/studies/(\d+)/$")
SETTINGS = {"attempts": 4, "actors": 1, "batch": 2}
STUDY_TIMEOUT_MS = 240_000  # four runs one after another; a supervisor imports torch before its first attempt
FINISHED = "document.getElementById('study-status').textContent === 'finished'"
LEGEND = "(id) => document.getElementById(id).data.filter((t) => t.name).map((t) => t.name)"
BANDS = "(id) => document.getElementById(id).data.filter((t) => t.fill === 'tonexty').length"


@pytest.fixture
def flora(django_user_model):
    """Made before the browser starts: playwright's event loop in this thread forbids ORM calls after."""
    return django_user_model.objects.create_user(USERNAME, password=PASSWORD)


def start_study(page) -> int:
    """Fill in a small grammar run, press "RL against static", submit; the study's id once its page opens."""
    page.goto(f"/runs/new/?competition={SLUG}")
    for field, value in SETTINGS.items():
        page.fill(f"#id_{field}", str(value))
    page.click("#rl-against-static")
    assert page.input_value("#id_study_arms") == "static: updates=off\nrl"
    assert page.input_value("#id_study_seeds") == "2"
    page.focus("#start")  # from the keyboard: see test_journey.start_run for why not a click
    page.keyboard.press("Enter")
    page.wait_for_url(STUDY_PATH)
    return int(STUDY_PATH.search(page.url).group(1))


def test_a_study_started_from_the_form_shows_both_arms_bands_and_the_test(
    flora, iris, page, screenshot, log_in
):
    log_in(page, USERNAME, PASSWORD)
    study_id = start_study(page)
    assert page.locator("#study-arms").inner_text().startswith("static (the reference): updates = False")
    page.wait_for_function(FINISHED, timeout=STUDY_TIMEOUT_MS)
    screenshot("study-page")
    for chart in ("chart-reward-attempts", "chart-reward-time", "chart-valid-attempts"):
        assert page.evaluate(LEGEND, chart) == [
            "static: mean over 2 seeds, band: 95% interval", "rl: mean over 2 seeds, band: 95% interval"
        ]  # fmt: skip
        assert page.evaluate(BANDS, chart) == 2, "a filled band per arm"
    assert page.evaluate("document.getElementById('chart-windows').data.map((t) => t.name)") == [
        "static",
        "rl",
    ]
    assert page.locator("#study-waiting").is_hidden()
    row = page.locator("#study-tests tr.study-test")
    assert row.count() == 1 and row.locator("td").first.inner_text() == "rl vs static"
    assert re.fullmatch(r"\d+/\d+ vs \d+/\d+", row.locator("td").nth(1).inner_text())
    assert "after the first policy update" in page.inner_text("#study-counted")
    runs = page.locator("#study-runs tbody tr")
    assert [runs.nth(i).locator("td").nth(1).inner_text() for i in range(4)] == [
        "static",
        "rl",
        "static",
        "rl",
    ]
    assert all(runs.nth(i).locator("td").nth(2).inner_text() == "finished" for i in range(4))

    updates = page.evaluate("window.practicum.updates")
    page.locator("#smoothing").fill("0")
    page.wait_for_function(f"window.practicum.updates > {updates}")
    assert page.request.get(f"/studies/{study_id}/data.json?smoothing=0").json()["smoothing"] == 0.0
