"""Retention of attempt scratch dirs: what `manage.py prune_scratch` and the hourly beat task run.

Only runs that are over (finished, failed, cancelled) lose scratch dirs, so a running attempt's working
directory is never touched. Across those runs, dirs older than PRACTICUM_SCRATCH_KEEP_DAYS go first, then
the oldest others until the rest fit in PRACTICUM_SCRATCH_MAX_GB. Attempt rows (program, output tails,
grade) stay: only the files the program wrote are removed, so an attempt bundle then lacks its submission.
A run's results are never pruned: the scratch dirs of its final gradings (`final-<slug>`), of its
`final_attempt` and of its result on each competition keep the submissions its MLE-bench export holds
(webapp.dashboards.exports.mlebench_bundle); they do not count toward PRACTICUM_SCRATCH_MAX_GB.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from rl_core.sandbox import prune_scratch_dirs
from webapp import storage
from webapp.runs import standings
from webapp.runs.models import Run


def scratch_prune(*, keep_days: float | None = None, max_total_gb: float | None = None) -> list[Path]:
    """Remove the scratch dirs the retention policy no longer keeps; returns them (oldest first)."""
    keep_days = settings.PRACTICUM_SCRATCH_KEEP_DAYS if keep_days is None else keep_days
    max_total_gb = settings.PRACTICUM_SCRATCH_MAX_GB if max_total_gb is None else max_total_gb
    run_ids = list(Run.objects.filter(status__in=Run.FINAL_STATUSES).values_list("id", flat=True))
    results = standings.runs_result_attempt_keys(run_ids=run_ids)
    candidates = [
        attempt_dir
        for run_id in run_ids
        if (storage.run_root(run_id) / "attempts").is_dir()
        for attempt_dir in (storage.run_root(run_id) / "attempts").iterdir()
        if (run_id, attempt_dir.name) not in results
    ]
    return prune_scratch_dirs(candidates, keep_days=keep_days, max_total_mb=max_total_gb * 1024)
