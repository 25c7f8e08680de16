"""SIGKILL of a run's supervisor (a `supervise_run` task on a gpu worker): a new gpu worker resumes the run
from its newest checkpoint; no attempt is counted twice and the policy version only moves forward."""

from __future__ import annotations

import time

import pytest
import redis
from practicum_test_cluster import wait_for

from rl_core.checkpoint_files import latest_checkpoint
from rl_core.run_spec import RunConfig
from webapp import storage
from webapp.runs import services
from webapp.runs.models import Attempt, LearnerStep, Run
from workers.coordination import supervisor_lease_key
from workers.dispatch import enqueue_supervisor

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

ATTEMPTS, BATCH = 8, 2


def watch_run(run_id: int, until, *, timeout_s: float, versions: list[int]) -> Run:
    """Poll the run every 0.1 s, appending its policy version to `versions`, until `until(run)` holds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = Run.objects.get(id=run_id)
        versions.append(run.policy_version)
        if until(run):
            return run
        time.sleep(0.1)
    pytest.fail(f"run {run_id} did not get there in {timeout_s} s (versions seen: {versions[-5:]})")


@pytest.fixture
def resumed(cluster, iris, redis_url):
    """An 8-attempt grammar run whose first supervisor is killed after its first checkpoint; returns the
    finished run, the policy versions seen while it ran, and the second supervisor's log."""
    config = RunConfig(attempts=ATTEMPTS, actors=2, batch=BATCH, checkpoint_every=1).to_dict()
    run = services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)
    cluster.start_worker("sandbox", "sandbox", concurrency=2)
    first = cluster.start_worker("gpu-1", "gpu")
    enqueue_supervisor(run.id, app=cluster.app)
    versions: list[int] = []
    checkpoints = storage.run_checkpoints(run.id)
    watch_run(
        run.id,
        lambda r: r.policy_version >= 1 and latest_checkpoint(checkpoints) is not None,
        timeout_s=150,
        versions=versions,
    )
    cluster.kill(first)
    broker = redis.Redis.from_url(redis_url)
    wait_for(lambda: not broker.exists(supervisor_lease_key(run.id)), timeout_s=30, what="the lease to lapse")
    second = cluster.start_worker("gpu-2", "gpu")
    finished = watch_run(run.id, lambda r: not r.is_active, timeout_s=240, versions=versions)
    return finished, versions, second.log()


@pytest.mark.timeout(750)  # its fixture's waits: 3 worker starts (90 s each), 150 + 30 + 240 s; and a minute
def test_a_killed_supervisor_is_resumed_from_its_checkpoint_without_recounting_or_going_back(resumed):
    """One scenario (it takes half a minute to set up), checked for each thing the resume promises."""
    run, versions, log = resumed
    keys = sorted(Attempt.objects.filter(run=run).values_list("key", flat=True))
    assert run.status == Run.Status.FINISHED, f"{run.error}\n{log[-3000:]}"
    assert f"run {run.id}: resuming from checkpoint" in log
    assert (run.attempts_done, keys) == (ATTEMPTS, sorted(f"0-{n}" for n in range(ATTEMPTS)))
    assert versions == sorted(versions)
    assert list(LearnerStep.objects.filter(run=run).values_list("version", flat=True)) == [1, 2, 3, 4]
