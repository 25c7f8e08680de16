"""Imports at real size stay within a memory bound: 20,000 files, and a 2 GB zip.

Each import runs in a child process (bench/import_scale.py's `measure_import`, on this test's PostgreSQL
database), whose peak resident memory is read with getrusage. The bound: the import adds at most
MEMORY_BOUND_MB (200 MB) to the memory of the child once Django has started (about 200 MB itself): a
whole member (512 MB) or the whole zip in memory would break it. Each test takes about 25 s here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from django.db import connection

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BENCH = Path(__file__).resolve().parents[3] / "bench"


@pytest.fixture(scope="module")
def scale():
    """bench/import_scale.py as a module (bench/ is scripts, not a package)."""
    import sys

    sys.path.insert(0, str(BENCH))  # it imports bench/_common.py
    try:
        spec = importlib.util.spec_from_file_location("import_scale", BENCH / "import_scale.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture
def test_database_env() -> dict[str, str]:
    """DATABASE_URL of the database this test runs on, for the child process."""
    db = connection.settings_dict
    url = f"postgresql://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    return {"DATABASE_URL": url}


def import_in_child(scale, zip_path, tmp_path, env):
    data_dir = tmp_path / "child-data"
    data_dir.mkdir()
    measured = scale.measure_import(zip_path, data_dir=data_dir, env=env)
    return measured, data_dir


def test_an_import_of_20000_small_files_stays_within_the_memory_bound(scale, tmp_path, test_database_env):
    zip_path = scale.write_scale_zip(tmp_path / "many.zip", files=20_000)
    measured, data_dir = import_in_child(scale, zip_path, tmp_path, test_database_env)
    assert measured["public_files"] == 20_001  # and the sample submission
    assert measured["peak_mb"] - measured["started_mb"] <= scale.MEMORY_BOUND_MB, measured
    assert (data_dir / "competitions/scale/public/images/019/019999.txt").read_text() == "file 19999\n"


def test_an_import_of_a_2_gb_zip_stays_within_the_memory_bound(scale, tmp_path, test_database_env):
    zip_path = scale.write_scale_zip(tmp_path / "big.zip", files=4, total_bytes=2 * 1024**3)
    measured, data_dir = import_in_child(scale, zip_path, tmp_path, test_database_env)
    zip_path.unlink()
    stored = sum(p.stat().st_size for p in (data_dir / "competitions/scale/public/images").rglob("*.bin"))
    assert stored == 2 * 1024**3
    assert measured["peak_mb"] - measured["started_mb"] <= scale.MEMORY_BOUND_MB, measured
