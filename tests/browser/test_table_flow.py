"""A competition from one labelled table, in a real browser against real processes: upload a CSV, see
Practicum's proposal and preview, change the target (the metric follows) and the metric, create, and land
on the new competition's page, whose files hold no hidden answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

USERNAME, PASSWORD = "erin", "erin-browser-password-5"
N_ROWS = 60
SELECTED = "s => [...s.selectedOptions].map(o => o.value)"


def text(page, selector: str) -> str:
    """The element's text with runs of whitespace as single spaces, as a reader sees it."""
    return " ".join(page.text_content(selector).split())


@pytest.fixture
def erin(django_user_model):
    """Made before the browser starts: playwright's event loop in this thread forbids ORM calls after."""
    return django_user_model.objects.create_user(USERNAME, password=PASSWORD)


@pytest.fixture
def table_csv(tmp_path):
    """60 penguins: an id, measurements, an island, then three species of 20 each (the last column)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "PassengerId": np.arange(100, 100 + N_ROWS),
            "bill_mm": rng.normal(40, 5, N_ROWS).round(1),
            "island": rng.choice(["Biscoe", "Dream"], N_ROWS),
            "body_mass_g": rng.normal(4000, 300, N_ROWS).round(2),
            "species": np.repeat(["Adelie", "Chinstrap", "Gentoo"], N_ROWS // 3),
        }
    )
    path = tmp_path / "penguins.csv"
    frame.to_csv(path, index=False)
    return path


def test_a_labelled_table_becomes_a_competition_through_the_proposal_page(
    erin, page, screenshot, table_csv, log_in
):
    log_in(page, USERNAME, PASSWORD)
    page.goto("/competitions/")
    page.click("#from-table-link")
    page.set_input_files("#table-upload-form input[type=file]", str(table_csv))
    page.click("#table-upload-form button[type=submit]")
    page.wait_for_url("**/competitions/upload/table/*/")

    # The proposal: the unique id-named column, the last column as target, log loss for three classes.
    assert page.input_value("#id_id_column") == "PassengerId"
    assert page.eval_on_selector("#id_target_columns", SELECTED) == ["species"]
    assert (page.input_value("#id_metric"), page.input_value("#id_test_fraction")) == ("log_loss", "0.2")
    assert page.input_value("#id_slug") == "penguins"
    # The preview: sizes of the split, class counts, column types and the first rows.
    assert "48 rows in train.csv, 12 in test.csv" in text(page, "#split-sizes")
    assert page.locator("#target-summary tbody tr").count() == 3
    assert "20 rows" in page.text_content("#target-summary")
    assert page.locator("#first-rows tbody tr").count() == 5
    assert "number" in page.text_content("#column-types") and "text" in page.text_content("#column-types")
    screenshot("table-proposal")

    # A regression target: the page re-renders at once, with a metric that fits it.
    with page.expect_navigation():
        page.select_option("#id_target_columns", "body_mass_g")
    assert page.input_value("#id_metric") == "rmse"
    assert "is proposed instead" in page.text_content("#table-note")
    assert "mean" in page.text_content("#target-summary") and "regression" in page.text_content("#split")

    page.select_option("#id_metric", "mae")
    page.fill("#id_slug", "penguin-mass")
    page.fill("#id_name", "Penguin mass")
    screenshot("table-proposal-edited")
    page.click("#create-button")
    page.wait_for_url("**/competitions/penguin-mass/")

    assert page.text_content("h1") == "Penguin mass"
    assert "metric mae" in text(page, "main p.muted")
    files = page.locator(".card table tbody tr td:first-child").all_text_contents()
    assert {"train.csv", "test.csv", "sample_submission.csv"} <= set(files)
    assert not any("answers" in name for name in files)
    screenshot("table-competition")
