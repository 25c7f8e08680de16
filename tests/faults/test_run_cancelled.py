"""A run cancelled from the API while attempts run: they are killed, their sandboxes cleaned, and the run
marked cancelled."""

from __future__ import annotations

import pytest
from practicum_test_cluster import LEASE_S, SupervisorThread, wait_for

from rl_core.run_spec import RunConfig
from webapp import storage
from webapp.runs import services
from webapp.runs.models import Attempt, Run
from workers.executor import CeleryExecutor

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def cancelled(cluster, iris, owner, sleep_policy, redis_url, client):
    """A run of 20-second attempts, two of them running on two workers, cancelled through the API.
    The checks below allow 5 s, far less than the programs had left to run."""
    sleep_policy(("sleep_20",))
    config = RunConfig(attempts=20, actors=2, batch=2).to_dict()
    run = services.run_create(owner=owner, competitions=[iris], policy="grammar", config=config)
    cluster.start_worker("sandbox-a")
    cluster.start_worker("sandbox-b")
    supervisor = SupervisorThread(
        run.id,
        lambda: CeleryExecutor(
            run_id=run.id, capacity=2, app=cluster.app, redis_url=redis_url, lease_s=LEASE_S
        ),
    ).start()
    wait_for(lambda: len(cluster.sandbox_processes()) >= 2, timeout_s=90, what="two programs to be running")
    client.force_login(owner)
    response = client.post(f"/api/runs/{run.id}/cancel/")
    assert response.status_code == 200, response.content
    supervisor.join(60)
    run.refresh_from_db()
    return run


@pytest.mark.timeout(400)  # waits: 2 worker starts (90 s each), 90 + 60 s in the fixture, 5 + 5 s; a minute
def test_a_run_cancelled_from_the_api_kills_its_attempts_cleans_their_sandboxes_and_is_cancelled(
    cancelled, cluster
):
    """One scenario (slow to set up), checked for each thing cancelling promises."""
    attempts = Attempt.objects.filter(run=cancelled)
    assert cancelled.status == Run.Status.CANCELLED
    assert sorted(attempts.values_list("status", flat=True)) == ["killed", "killed"]
    wait_for(lambda: cluster.sandbox_processes() == [], timeout_s=5, what="the programs to be killed")
    wait_for(
        lambda: not any(storage.attempt_work_dir(cancelled.id, a.key).exists() for a in attempts),
        timeout_s=5, what="the scratch dirs to be removed",
    )  # fmt: skip
