"""Configuration: Practicum boots with no environment at all (embedded defaults), and a malformed variable
stops start-up with a message that names it. Each case starts a fresh interpreter, as a server would."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPORT = """
import json, django
django.setup()
from django.conf import settings
print(json.dumps({
    "engine": settings.DATABASES["default"]["ENGINE"], "db": settings.DATABASES["default"]["NAME"],
    "redis": bool(settings.REDIS), "layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "broker": settings.CELERY_BROKER_URL, "debug": settings.DEBUG, "data_dir": str(settings.DATA_DIR),
}))
"""


def boot(tmp_path: Path, **variables: str) -> subprocess.CompletedProcess:
    """Start Django in a new interpreter whose environment holds only `variables` (and what Python needs)."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    env.setdefault("PRACTICUM_DATA_DIR", str(tmp_path / "data"))
    return subprocess.run(
        [sys.executable, "-c", REPORT], cwd=ROOT, env=env | variables, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def test_it_boots_with_no_environment_on_the_embedded_defaults(tmp_path):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    done = subprocess.run([sys.executable, "-c", REPORT], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["engine"] == "django.db.backends.sqlite3" and report["data_dir"] == str(ROOT / "var")
    assert (report["redis"], report["broker"]) == (False, "memory://")
    assert report["layer"] == "channels.layers.InMemoryChannelLayer" and report["debug"] is False


def test_without_a_secret_key_an_installation_makes_one_keeps_it_private_and_reuses_it(tmp_path):
    report = REPORT.replace(
        '"debug": settings.DEBUG,', '"debug": settings.DEBUG, "key": settings.SECRET_KEY,'
    )
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "DJANGO_SETTINGS_MODULE": "webapp.settings",
           "PRACTICUM_DATA_DIR": str(tmp_path / "data")}  # fmt: skip
    keys = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", report], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        keys.append(json.loads(done.stdout)["key"])
    stored = tmp_path / "data" / "secret_key"
    assert keys[0] == keys[1] == stored.read_text() and len(keys[0]) >= 50
    assert stored.stat().st_mode & 0o077 == 0  # nobody but its owner can read it
    with_key = subprocess.run([sys.executable, "-c", report], cwd=ROOT, env=env | {"SECRET_KEY": "given"},
                              capture_output=True, text=True)  # fmt: skip
    assert json.loads(with_key.stdout)["key"] == "given"


def test_database_and_redis_urls_select_postgresql_and_redis(tmp_path):
    done = boot(
        tmp_path, DATABASE_URL="postgresql://u:p@db.example:5433/practicum", REDIS_URL="redis://r:6379/2"
    )
    report = json.loads(done.stdout)
    assert (report["engine"], report["db"]) == ("django.db.backends.postgresql", "practicum")
    assert report["redis"] and report["layer"] == "channels_redis.core.RedisChannelLayer"


def test_a_sqlite_url_names_the_database_file(tmp_path):
    report = json.loads(boot(tmp_path, DATABASE_URL=f"sqlite:///{tmp_path}/other.db").stdout)
    assert report["db"] == f"{tmp_path}/other.db"


def test_a_sqlite_url_with_three_slashes_is_relative_to_the_working_directory(tmp_path):
    report = json.loads(boot(tmp_path, DATABASE_URL="sqlite:///relative.db").stdout)
    assert report["db"] == str(ROOT / "relative.db")  # boot() runs in ROOT


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("DEBUG", "yes", "DEBUG must be True or False, not 'yes'."),
        ("DATABASE_URL", "mysql://db/x", "DATABASE_URL must start with postgresql:// or sqlite:///"),
        ("DATABASE_URL", "postgresql://host:port/db", "DATABASE_URL has a malformed port"),
        ("DATABASE_URL", "postgresql://host/", "DATABASE_URL must name a database"),
        ("REDIS_URL", "http://localhost:6379", "REDIS_URL must look like redis://host:6379/0"),
        ("PRACTICUM_BUNDLE_MAX_MB", "lots", "PRACTICUM_BUNDLE_MAX_MB must be an integer, not 'lots'."),
        ("PRACTICUM_ZIP_MAX_RATIO", "0", "PRACTICUM_ZIP_MAX_RATIO must be at least 1, not 0."),
        (
            "LOG_LEVEL",
            "chatty",
            "LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, not 'chatty'.",
        ),
        ("PRACTICUM_DATA_DIR", "/etc/hostname", "PRACTICUM_DATA_DIR must name a directory"),
        ("PRACTICUM_ATTEMPT_LEASE_S", "soon", "PRACTICUM_ATTEMPT_LEASE_S must be an integer, not 'soon'."),
        ("PRACTICUM_MAX_RUNS_PER_USER", "0", "PRACTICUM_MAX_RUNS_PER_USER must be at least 1, not 0."),
        ("PRACTICUM_RECOVERY_INTERVAL_S", "1.5", "PRACTICUM_RECOVERY_INTERVAL_S must be an integer"),
    ],
)
def test_a_malformed_variable_stops_start_up_naming_it(tmp_path, variable, value, message):
    done = boot(tmp_path, **{variable: value})
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and message in done.stderr


def test_an_empty_stored_secret_key_stops_start_up_naming_its_file(tmp_path):
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "secret_key").write_text("\n")
    done = boot(tmp_path)
    assert done.returncode != 0
    assert "secret_key holds no secret key: delete it, or set SECRET_KEY." in done.stderr


PRACTICUM_SETTINGS = {
    "PRACTICUM_MAX_RUNS_PER_USER": 2, "PRACTICUM_MAX_IN_FLIGHT_PER_USER": 8, "PRACTICUM_ATTEMPT_LEASE_S": 30,
    "PRACTICUM_SUPERVISOR_LEASE_S": 60, "PRACTICUM_MAX_TRIES": 3, "PRACTICUM_VISIBILITY_TIMEOUT_S": 172800,
    "PRACTICUM_RESULT_POLL_S": 1, "PRACTICUM_RECOVERY_INTERVAL_S": 60,
}  # fmt: skip
"""The quota and distributed-path variables, with their defaults."""
READ_SETTINGS = f"""
import json, django
django.setup()
from django.conf import settings
print(json.dumps({{name: getattr(settings, name) for name in {sorted(PRACTICUM_SETTINGS)!r}}}))
"""


def test_the_quota_and_worker_variables_are_read_at_start_up_with_their_defaults(tmp_path):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "DJANGO_SETTINGS_MODULE": "webapp.settings",
           "PRACTICUM_DATA_DIR": str(tmp_path / "data"), "PRACTICUM_MAX_TRIES": "5"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", READ_SETTINGS], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == PRACTICUM_SETTINGS | {"PRACTICUM_MAX_TRIES": 5}


def test_only_the_settings_read_the_environment_through_the_strict_readers():
    """One place reads the variables: no other module imports webapp.env's readers (as the quotas and the
    workers' options once did, on first use) or reads a PRACTICUM_* variable from os.environ itself (the
    sandbox's marker channel, PRACTICUM_MARKER_FD, is a descriptor handed to a program, not a setting)."""
    direct = re.compile(r"(?:environ\.get|environ\[|getenv)\W+[\"']PRACTICUM_")
    readers = sorted(
        str(path.relative_to(ROOT))
        for package in ("rl_core", "webapp", "workers")
        for path in (ROOT / package).rglob("*.py")
        if path.name != "env.py"
        and ("webapp.env import" in (text := path.read_text()) or direct.search(text))
    )
    assert readers == ["webapp/settings.py"]
