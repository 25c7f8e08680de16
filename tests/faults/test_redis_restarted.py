"""Redis restarted (empty: no persistence, like CI's) in the middle of a run: the workers and the supervisor
reconnect, attempts whose messages were lost are sent again, and the run completes. The test runs its own
redis-server on a free port, so the machine's Redis is never touched."""

from __future__ import annotations

import time

import pytest
from practicum_test_cluster import Cluster, cluster_env, free_port, redis_server, wait_for

from rl_core.run_spec import RunConfig
from webapp.env import RedisConfig
from webapp.runs import services
from webapp.runs.models import Attempt, Run
from workers.dispatch import enqueue_supervisor

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

ATTEMPTS = 12


@pytest.fixture
def private_cluster(transactional_db, data_dir, tmp_path, settings):
    """A cluster whose broker is a redis-server of its own; yields (cluster, that server, its port)."""
    port = free_port()
    (tmp_path / "logs").mkdir()
    url = f"redis://127.0.0.1:{port}/0"
    running = Cluster(cluster_env(url, data_dir), tmp_path / "logs")
    try:
        server = redis_server(running, port, tmp_path / "redis")
        settings.REDIS = RedisConfig(url=url)
        yield running, server, port
    finally:
        running.close()


@pytest.mark.timeout(720)  # waits: 3 redis starts (30 s), 2 worker starts (90 s), 150 + 1 + 240 s; a minute
def test_a_run_survives_a_redis_restart(private_cluster, iris, tmp_path):
    cluster, server, port = private_cluster
    config = RunConfig(attempts=ATTEMPTS, actors=2, batch=4).to_dict()
    run = services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)
    cluster.start_worker("sandbox", "sandbox", concurrency=2)
    cluster.start_worker("gpu", "gpu")
    enqueue_supervisor(run.id, app=cluster.app)
    wait_for(lambda: Run.objects.get(id=run.id).attempts_done >= 3, timeout_s=150, what="three attempts")
    cluster.kill(server)
    done_when_killed = Run.objects.get(id=run.id).attempts_done
    time.sleep(1)
    redis_server(cluster, port, tmp_path / "redis")
    wait_for(lambda: not Run.objects.get(id=run.id).is_active, timeout_s=240, what="the run to end")
    run.refresh_from_db()
    statuses = set(Attempt.objects.filter(run=run).values_list("status", flat=True))
    assert done_when_killed < ATTEMPTS
    assert (run.status, run.attempts_done, "lost" in statuses) == (Run.Status.FINISHED, ATTEMPTS, False)
