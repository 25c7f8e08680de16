"""The start form in words (issue 26, item 9): labels say what a setting is with its symbol beside it, no
help text or preset description cites a file or unexplained jargon, and competitions are picked by name."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from rl_core.run_spec import settings

pytestmark = pytest.mark.django_db

SYMBOLS = {
    "actors": "Attempts in flight (K)",
    "batch": "Attempts per update (B)",
    "lr": "Learning rate (lr)",
    "kl_coef": "KL coefficient (β)",
    "entropy_coef": "Entropy bonus (entropy coefficient)",
    "temperature": "Sampling temperature (T)",
}
JARGON = ("bench/", ".py", "AST", "lineage", "over-sample", "factorised", "categorical policy", "Kl coef",
          "Lr")  # fmt: skip
"""Words a newcomer cannot parse: file names, abbreviations never spelled out, raw setting keys."""


@pytest.fixture
def form_page(as_user, owner, competition):
    response = as_user(owner).get(reverse("dashboards:run_start"))
    assert response.status_code == 200
    return response


def page_words(response) -> str:
    """The page's visible text and titles (preset descriptions are in a title and the JSON data)."""
    text = re.sub(r"<script\b(?![^>]*json).*?</script>", " ", response.content.decode(), flags=re.S)
    return re.sub(r"<[^>]+title=\"([^\"]*)\"[^>]*>|<[^>]+>", r" \1 ", text)


def test_the_settings_are_labelled_in_words_with_their_symbols(form_page):
    fields = form_page.context["form"].fields
    assert {name: fields[name].label for name in SYMBOLS} == SYMBOLS
    labels = {declared.label for declared in settings().values()}
    assert not labels & {"K", "B", "Lr", "Kl coef", "Improve prob", "Entropy coef"}, "raw keys as labels"


@pytest.mark.parametrize("word", JARGON)
def test_no_help_text_or_preset_cites_a_file_or_unexplained_jargon(form_page, word):
    words = page_words(form_page)
    assert "48 grammar demonstrations" in words and "each takes a sandbox" in words, "presets and help read"
    assert not re.search(rf"(?<![\w.]){re.escape(word)}(?![\w])", words), word


def test_competitions_are_ticked_by_name_with_the_slug_beside_it(form_page, competition):
    body = form_page.content.decode()
    tick = re.search(r'<input type="checkbox" name="competitions" value="(\d+)"[^>]*>\s*Tiny Churn', body)
    assert tick and int(tick.group(1)) == competition.id
    assert '<span class="muted">tiny-churn</span>' in body and 'id="competition-search"' in body
    assert '<select name="competitions"' not in body
