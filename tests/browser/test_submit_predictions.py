"""Grading your own submission.csv in a real browser (issue 26): sign in, open a competition, follow
"Submit predictions", upload a file, and see its score and the row it added to your submissions."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

USERNAME, PASSWORD = "fern", "fern-browser-password-5"


@pytest.fixture
def fern(django_user_model):
    """Made before the browser starts: playwright's event loop in this thread forbids ORM calls after."""
    return django_user_model.objects.create_user(USERNAME, password=PASSWORD)


@pytest.fixture
def tiny_churn(fern, bundle_zip) -> str:
    """tiny-churn (accuracy; answers 10:0, 11:1, 12:0, 13:1), fern's, imported into this test's data dir."""
    from webapp.competitions import services

    return services.competition_import(path=bundle_zip, owner=fern).slug


def test_a_user_grades_a_submission_and_sees_its_score_and_history(
    fern, tiny_churn, page, screenshot, tmp_path, log_in
):
    submission = tmp_path / "submission.csv"
    submission.write_text("id,churned\n10,0\n11,1\n12,0\n13,0\n")  # three of four right
    log_in(page, USERNAME, PASSWORD)
    page.goto(f"/competitions/{tiny_churn}/")
    page.click("#submit-predictions")
    page.wait_for_url(f"**/competitions/{tiny_churn}/submit/")
    page.set_input_files("#submit-form input[type=file]", str(submission))
    page.click("#submit-button")
    page.wait_for_selector("#result-score")
    assert page.inner_text("#result-score") == "accuracy 0.75000 (higher is better)"
    rows = page.locator("#history tbody tr")
    assert rows.count() == 1 and "submission.csv" in rows.first.inner_text()
    assert "0.75000" in rows.first.inner_text()
    screenshot("submit-predictions")
