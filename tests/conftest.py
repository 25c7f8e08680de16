"""Shared fixtures: an isolated data directory for every test and a named cast of users. A run that would
test the web layer against SQLite is refused: the suite's database tests are for PostgreSQL (make test).
Passwords are hashed at one PBKDF2 iteration in the test process (`pytest_configure`), and vLLM's compile
cache lives in a folder of the session's, removed at its end."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

DATABASE_FIXTURES = frozenset({"db", "transactional_db", "django_db_setup", "client", "django_user_model"})


def pytest_configure(config) -> None:
    """Hash the test process's passwords with one PBKDF2 iteration instead of a million (0.4 s each here,
    paid for every user a test creates and every login it checks). The hashes keep Django's format, which
    names its iteration count, so the servers the browser tests start verify them with their own hasher."""
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    PBKDF2PasswordHasher.iterations = 1
    if "VLLM_CACHE_ROOT" not in os.environ:  # each tiny model compiles anew: keep ~/.cache/vllm from growing
        os.environ["VLLM_CACHE_ROOT"] = config._vllm_cache = tempfile.mkdtemp(prefix="practicum-vllm-")


def pytest_unconfigure(config) -> None:
    if getattr(config, "_vllm_cache", None):
        shutil.rmtree(config._vllm_cache, ignore_errors=True)


def pytest_collection_modifyitems(config, items) -> None:
    """Stop before running anything when a collected test needs the database and it is SQLite."""
    from django.conf import settings

    if "sqlite" not in settings.DATABASES["default"]["ENGINE"]:
        return
    needing = [item for item in items if needs_database(item)]
    if needing:
        pytest.exit(
            f"{len(needing)} collected tests (e.g. {needing[0].nodeid}) need the database, and DATABASE_URL "
            "is not PostgreSQL: run `make test`, or set DATABASE_URL=postgresql://... (and REDIS_URL).",
            returncode=2,
        )


def needs_database(item: pytest.Item) -> bool:
    return item.get_closest_marker("django_db") is not None or bool(
        DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
    )


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
