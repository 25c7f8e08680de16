"""The scratch retention policy: old scratch dirs of runs that are over go; running runs keep theirs."""

from __future__ import annotations

import os
import time

import pytest

from webapp import storage
from webapp.runs import services
from webapp.runs.models import Run
from webapp.runs.retention import scratch_prune

pytestmark = pytest.mark.django_db


def scratch_dir(run, key: str, *, age_days: float):
    path = storage.attempt_work_dir(run.id, key)
    path.mkdir(parents=True)
    (path / "submission.csv").write_text("id,y\n1,0\n")
    stamp = time.time() - age_days * 86400
    os.utime(path, (stamp, stamp))
    return path


def test_old_scratch_dirs_of_a_finished_run_are_removed_and_recent_ones_kept(run):
    old, recent = scratch_dir(run, "0-0", age_days=30), scratch_dir(run, "0-1", age_days=1)
    services.run_set_status(run_id=run.id, status=Run.Status.FINISHED)
    assert scratch_prune(keep_days=14, max_total_gb=1) == [old]
    assert (not old.exists(), recent.exists()) == (True, True)


def test_a_running_runs_scratch_dirs_are_never_removed(run):
    old = scratch_dir(run, "0-0", age_days=30)
    services.run_set_status(run_id=run.id, status=Run.Status.RUNNING)
    assert scratch_prune(keep_days=14, max_total_gb=1) == []
    assert old.exists()
