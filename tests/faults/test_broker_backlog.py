"""Restart with a backlog in the broker: the supervisor dies while its attempts still wait in the `sandbox`
queue, a new one takes over, workers come up and drain the queue, and no attempt runs twice."""

from __future__ import annotations

import pytest
import redis
from practicum_test_cluster import wait_for

from rl_core.run_spec import RunConfig
from webapp.runs import services
from webapp.runs.models import Attempt, Run
from workers.coordination import AttemptKeys, supervisor_lease_key, supervisor_queued_key
from workers.dispatch import enqueue_supervisor
from workers.outcomes import response_digest

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]


@pytest.mark.timeout(780)  # its waits: 3 worker starts (90 s each), 90 + 30 + 90 + 240 s; and a minute
def test_a_restart_with_attempts_waiting_in_the_broker_runs_each_attempt_once(cluster, iris, redis_url):
    # gpu-1 starts before the run exists, so its start-up recovery has no run to restart: the one supervisor
    # is the one enqueued here (with the run made first, recovery could enqueue a second beside it).
    first = cluster.start_worker("gpu-1", "gpu")
    config = RunConfig(attempts=8, actors=4, batch=4).to_dict()
    run = services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)
    broker = redis.Redis.from_url(redis_url, decode_responses=True)
    enqueue_supervisor(run.id, app=cluster.app)
    wait_for(lambda: broker.llen("sandbox") == 4, timeout_s=90, what="a backlog of four attempts")
    cluster.kill(first)
    wait_for(lambda: not broker.exists(supervisor_lease_key(run.id)), timeout_s=30, what="the lease to lapse")
    cluster.start_worker("gpu-2", "gpu")
    wait_for(
        lambda: list(Attempt.objects.filter(run=run).values_list("tries", flat=True)) == [2] * 4,
        timeout_s=90, what="the new supervisor to re-dispatch the four attempts",
        state=lambda: broker_state(broker, run.id),
    )  # fmt: skip
    assert broker.llen("sandbox") == 4  # none was sent again
    cluster.start_worker("sandbox", "sandbox", concurrency=2)
    wait_for(lambda: not Run.objects.get(id=run.id).is_active, timeout_s=240, what="the run to end")
    attempts = Attempt.objects.filter(run=run)
    executions = [
        int(broker.get(AttemptKeys(run.id, a.key, response_digest(a.response)).starts)) for a in attempts
    ]
    assert (Run.objects.get(id=run.id).status, executions) == (Run.Status.FINISHED, [1] * 8)


def broker_state(broker: redis.Redis, run_id: int) -> dict:
    """What a failed wait reports: the run's attempts and status, its supervisor keys, the queues."""
    return {
        "attempts": list(Attempt.objects.filter(run_id=run_id).values_list("key", "tries", "status")),
        "run": Run.objects.get(id=run_id).status,
        "lease": broker.get(supervisor_lease_key(run_id)),
        "queued": broker.get(supervisor_queued_key(run_id)),
        "gpu": broker.llen("gpu"), "sandbox": broker.llen("sandbox"), "unacked": broker.hlen("unacked"),
    }  # fmt: skip
