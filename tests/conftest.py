"""Shared fixtures: an isolated data directory for every test and a named cast of users."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def data_dir(tmp_path, settings):
    """Every test stores its files in its own PRACTICUM_DATA_DIR."""
    path = tmp_path / "data"
    path.mkdir()
    settings.DATA_DIR = path
    return path


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-password-1")


@pytest.fixture
def teammate(django_user_model):
    return django_user_model.objects.create_user("bob", password="bob-password-1")


@pytest.fixture
def stranger(django_user_model):
    return django_user_model.objects.create_user("mallory", password="mallory-password-1")
