"""The execute_attempt task on a real sandbox worker when Celery's soft time limit stops it (the program or
its grading hung past the sandbox's own limit): recorded once as a `timeout`, not failed and run again."""

from __future__ import annotations

import json
import time

import pytest
import redis
from practicum_test_cluster import LEASE_S, sleep_program, wait_for

from rl_core.run_spec import RunConfig
from webapp import storage
from webapp.runs import services
from workers.coordination import AttemptKeys, results_list
from workers.outcomes import response_digest

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

SOFT_LIMIT_S = 3


@pytest.fixture
def run(iris):
    config = RunConfig(attempts=4).to_dict()
    return services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)


@pytest.fixture
def broker(redis_url):
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


def send_attempt(cluster, run, key: str, response: str, *, soft_limit_s: float) -> None:
    """What CeleryExecutor sends, with a soft time limit of our choosing."""
    kwargs = {
        "run_id": run.id, "key": key, "slug": "iris-species", "response": response, "lease_s": LEASE_S,
        "max_tries": 3, "allow_gpu": False,
    }  # fmt: skip
    cluster.app.send_task(
        "practicum.execute_attempt", kwargs=kwargs, soft_time_limit=soft_limit_s, time_limit=soft_limit_s + 60
    )


def next_result(broker, run, *, timeout_s: float) -> dict:
    """The next result a worker pushed for the run (short BLPOPs: the client's socket timeout is 5 s)."""
    popped = wait_for(
        lambda: broker.blpop([results_list(run.id)], timeout=1), timeout_s=timeout_s, what="a result"
    )
    return json.loads(popped[1])


@pytest.mark.timeout(280)  # its waits: a worker start (90 s), 60 + 60 s for results, 3 leases; a minute
def test_an_attempt_stopped_by_its_soft_time_limit_is_recorded_once_as_a_timeout_lasting_that_limit(
    cluster, run, broker
):
    """One scenario (a worker to start), checked for each thing the limit promises."""
    worker = cluster.start_worker("sandbox")
    send_attempt(cluster, run, "0-0", sleep_program(0), soft_limit_s=60)  # warms up the pool process
    next_result(broker, run, timeout_s=60)
    hung = sleep_program(120)
    send_attempt(cluster, run, "0-1", hung, soft_limit_s=SOFT_LIMIT_S)
    outcome = next_result(broker, run, timeout_s=60)["outcome"]
    assert cluster.sandbox_processes() == []
    assert (outcome["status"], outcome["duration_s"], outcome["valid"]) == ("timeout", SOFT_LIMIT_S, False)
    assert f"{SOFT_LIMIT_S} s time limit" in outcome["stderr_tail"] and isinstance(outcome["reward"], float)
    time.sleep(3 * LEASE_S)
    starts = broker.get(AttemptKeys(run.id, "0-1", response_digest(hung)).starts)
    assert (starts, broker.llen(results_list(run.id))) == ("1", 0)
    stored = storage.read_json(storage.attempt_outcome_path(run.id, "0-1", response_digest(hung)))
    assert stored["outcome"]["status"] == "timeout"
    assert "SoftTimeLimitExceeded" not in worker.log(), worker.log()[-3000:]
