"""What CI relies on: the suite refuses SQLite for database tests, and .ci/run gates on lint and tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_suite_refuses_to_run_database_tests_against_sqlite(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["PRACTICUM_DATA_DIR"] = str(tmp_path)
    command = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"]
    found = subprocess.run(
        [*command, "tests/webapp/runs/test_train.py"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert found.returncode == 2
    assert "need the database, and DATABASE_URL is not PostgreSQL" in found.stdout + found.stderr


def test_ci_runs_the_linters_before_the_tests():
    script = (ROOT / ".ci" / "run").read_text()
    assert script.index("make lint") < script.index("make test")
