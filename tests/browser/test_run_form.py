"""The start-a-run form in a real browser: the settings a newcomer needs first, language-model settings only
for a language model, everything else collapsed, presets that fill in measured settings, and competitions
picked by name from a list a search box filters."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

USERNAME, PASSWORD = "dora", "dora-browser-password-3"


@pytest.fixture
def dora(django_user_model):
    """Made before the browser starts: playwright's event loop in this thread forbids ORM calls after."""
    return django_user_model.objects.create_user(USERNAME, password=PASSWORD)


def test_lm_settings_show_only_for_a_language_model_and_a_preset_fills_its_settings(
    dora, page, screenshot, log_in
):
    log_in(page, USERNAME, PASSWORD)
    page.goto("/runs/new/")
    assert page.locator("#id_attempts").is_visible() and page.locator("#id_actors").is_visible()
    assert page.locator("#lm-settings").is_hidden(), "the grammar policy is chosen: no LM settings"
    assert page.locator("#id_seed").is_hidden(), "the advanced settings start collapsed"
    page.select_option("#id_policy", "lm")
    assert page.locator("#id_temperature").is_visible()
    page.select_option("#id_policy", "grammar")
    assert page.locator("#id_temperature").is_hidden()

    page.click("button.preset[data-preset=lm-warm-start]")
    screenshot("run-form-lm-preset")
    assert page.input_value("#id_policy") == "lm" and page.locator("#id_temperature").is_visible()
    assert (page.input_value("#id_temperature"), page.input_value("#id_warm_start_demos")) == ("0.3", "48")
    assert not page.is_checked("#id_sync") and page.is_checked("#id_seed_baseline")
    assert "48 grammar demonstrations" in page.text_content("#preset-description")

    page.click("button.preset[data-preset=grammar-quick]")
    assert page.input_value("#id_policy") == "grammar" and page.locator("#lm-settings").is_hidden()
    assert (page.input_value("#id_attempts"), page.is_checked("#id_sync")) == ("64", False)


COMPETITIONS = {"tiny-churn": "Tiny Churn", "iris-petals": "Iris Petals", "house-prices": "House Prices"}


def write_bundle(root: Path, **overrides) -> Path:
    """tests/webapp/conftest.py's valid bundle (the browser tests do not see that conftest's fixtures)."""
    path = Path(__file__).resolve().parents[1] / "webapp" / "conftest.py"
    spec = importlib.util.spec_from_file_location("practicum_test_bundles", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_bundle(root, **overrides)


@pytest.fixture
def three_competitions(dora, tmp_path):
    """Three public competitions, imported before the browser starts (see `dora`)."""
    from webapp.competitions import services

    for slug, name in COMPETITIONS.items():
        bundle = write_bundle(tmp_path / slug, spec={"slug": slug, "name": name})
        services.competition_import(path=bundle, owner=dora, is_public=True)


def shown_competitions(page) -> list[str]:
    labels = page.locator("#id_competitions label")
    return [" ".join(label.inner_text().split()) for label in labels.all() if label.is_visible()]


def test_the_competition_search_filters_the_names_and_the_ticked_one_starts_the_run(
    dora, three_competitions, page, screenshot, log_in
):
    log_in(page, USERNAME, PASSWORD)
    page.goto("/runs/new/")
    assert shown_competitions(page) == ["House Prices house-prices", "Iris Petals iris-petals",
                                        "Tiny Churn tiny-churn"], "by name, each with its slug"  # fmt: skip
    page.fill("#competition-search", "iris")
    assert shown_competitions(page) == ["Iris Petals iris-petals"]
    page.check("#id_competitions label:has-text('Iris Petals') input")
    page.fill("#competition-search", "churn")
    assert shown_competitions(page) == ["Iris Petals iris-petals", "Tiny Churn tiny-churn"], "ticked: kept"
    assert page.text_content("#competition-count") == "1 ticked · 2 of 3 shown"
    page.press("#competition-search", "Enter")
    assert page.url.endswith("/runs/new/"), "Enter in the search box does not submit the form"
    screenshot("run-form-competition-search")
    page.fill("#id_attempts", "2")
    page.focus("#start")  # from the keyboard, as test_journey.start_run explains
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run_id = int(re.search(r"/runs/(\d+)/$", page.url).group(1))
    assert page.request.get(f"/api/runs/{run_id}/").json()["competitions"] == ["iris-petals"]
