"""The run storage layer under PRACTICUM_DATA_DIR."""

from __future__ import annotations

import pytest

from webapp import storage


def test_attempt_files_live_under_the_data_dir(data_dir):
    assert storage.attempt_work_dir(3, "0-1") == data_dir / "runs" / "3" / "attempts" / "0-1"


def test_an_attempt_key_cannot_escape_its_run_folder():
    with pytest.raises(ValueError, match="not a safe file name"):
        storage.attempt_outcome_path(3, "../../etc", "abc")


def test_a_json_document_written_atomically_reads_back(data_dir):
    path = storage.attempt_outcome_path(3, "0-1", "abc")
    storage.write_json_atomic(path, {"outcome": {"status": "ok"}})
    assert storage.read_json(path) == {"outcome": {"status": "ok"}}


def test_an_atomic_write_leaves_no_temporary_file_behind(data_dir):
    path = storage.attempt_outcome_path(3, "0-1", "abc")
    storage.write_json_atomic(path, [1])
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_reading_a_missing_or_half_written_document_gives_none(data_dir):
    path = data_dir / "half.json"
    path.write_text('{"outcome": ')
    assert (storage.read_json(path), storage.read_json(data_dir / "missing.json")) == (None, None)


def test_a_fresh_dir_holds_nothing_an_earlier_try_left(data_dir):
    work = storage.attempt_work_dir(3, "0-1")
    work.mkdir(parents=True)
    (work / "submission.csv").write_text("stale")
    assert list(storage.fresh_dir(work).iterdir()) == []
