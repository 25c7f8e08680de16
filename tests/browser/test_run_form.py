"""The start-a-run form in a real browser: the settings a newcomer needs first, language-model settings only
for a language model, everything else collapsed, and presets that fill in measured settings."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

USERNAME, PASSWORD = "dora", "dora-browser-password-3"


@pytest.fixture
def dora(django_user_model):
    """Made before the browser starts: playwright's event loop in this thread forbids ORM calls after."""
    return django_user_model.objects.create_user(USERNAME, password=PASSWORD)


def sign_in(page) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_load_state()


def test_lm_settings_show_only_for_a_language_model_and_a_preset_fills_its_settings(dora, page, screenshot):
    sign_in(page)
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
