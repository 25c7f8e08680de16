"""Distributed-execution settings: Django settings first, then the environment, then the default."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from workers.options import DEFAULTS, option


def test_an_unset_option_has_its_default(monkeypatch):
    monkeypatch.delenv("PRACTICUM_MAX_TRIES", raising=False)
    assert option("PRACTICUM_MAX_TRIES") == DEFAULTS["PRACTICUM_MAX_TRIES"]


def test_the_environment_sets_an_option(monkeypatch):
    monkeypatch.setenv("PRACTICUM_MAX_TRIES", "5")
    assert option("PRACTICUM_MAX_TRIES") == 5


def test_a_django_setting_wins_over_the_environment(monkeypatch, settings):
    monkeypatch.setenv("PRACTICUM_MAX_TRIES", "5")
    settings.PRACTICUM_MAX_TRIES = 7
    assert option("PRACTICUM_MAX_TRIES") == 7


def test_a_malformed_option_is_refused_with_its_name(monkeypatch):
    monkeypatch.setenv("PRACTICUM_ATTEMPT_LEASE_S", "soon")
    with pytest.raises(ImproperlyConfigured, match="PRACTICUM_ATTEMPT_LEASE_S"):
        option("PRACTICUM_ATTEMPT_LEASE_S")
