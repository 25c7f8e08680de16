"""CeleryExecutor against real Redis and PostgreSQL: what it sends where, what it reports, and how it treats
attempts that went quiet. Only the first test starts a worker; the others read the broker's queues."""

from __future__ import annotations

import base64
import dataclasses
import json
import time

import pytest
import redis
from practicum_test_cluster import LEASE_S, sleep_program

from rl_core.executors import Job
from rl_core.policy import Prompt, Sample
from rl_core.run_spec import RunConfig
from webapp import storage
from webapp.competitions.agent_inputs import competition_task_info
from webapp.runs import services
from workers.coordination import AttemptKeys
from workers.executor import CeleryExecutor
from workers.outcomes import response_digest, unrunnable_outcome

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def run(iris):
    config = RunConfig(attempts=4).to_dict()
    return services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)


@pytest.fixture
def executor(run, cluster, redis_url):
    made = CeleryExecutor(
        run_id=run.id, capacity=2, app=cluster.app, redis_url=redis_url, lease_s=LEASE_S, poll_s=0.2
    )
    yield made
    made.client.close()


@pytest.fixture
def broker(redis_url):
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def job_for(competition, key: str, response: str) -> Job:
    prompt = Prompt(task=competition_task_info(competition=competition), kind="solve")
    return Job(key, Sample(prompt, response, (0.0,), 0, {}), competition.slug)


def wait_until_finished(executor: CeleryExecutor, timeout_s: float) -> list:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        finished = executor.wait(1.0)
        if finished:
            return finished
    pytest.fail(f"no attempt finished within {timeout_s} s")


def test_it_reports_an_attempt_that_a_sandbox_worker_ran(cluster, executor, iris):
    cluster.start_worker("sandbox-1", "sandbox")
    executor.submit(job_for(iris, "0-0", sleep_program(0)))
    [finished] = wait_until_finished(executor, 90)
    assert (finished.attempt_id, finished.outcome.status, finished.outcome.valid) == ("0-0", "ok", True)


def test_it_reports_an_attempt_that_already_has_an_outcome_without_sending_it(executor, run, iris, broker):
    response = sleep_program(0)
    outcome = unrunnable_outcome(response, "recorded earlier", -1.0)
    path = storage.attempt_outcome_path(run.id, "0-0", response_digest(response))
    storage.write_json_atomic(
        path, {"key": "0-0", "digest": response_digest(response), "outcome": outcome.to_dict()}
    )
    executor.submit(job_for(iris, "0-0", response))
    [finished] = executor.wait(0)
    assert (finished.outcome.grade_error, broker.llen("sandbox")) == ("recorded earlier", 0)


def test_it_does_not_send_an_attempt_again_while_a_message_for_it_waits_in_the_broker(
    executor, run, iris, broker
):
    response = sleep_program(0)
    broker.set(AttemptKeys(run.id, "0-0", response_digest(response)).sent, "1")
    executor.submit(job_for(iris, "0-0", response))
    assert broker.llen("sandbox") == 0


def test_a_resumed_executor_sends_again_an_attempt_whose_worker_died_while_none_watched(
    executor, run, iris, broker
):
    response = sleep_program(0)
    keys = AttemptKeys(run.id, "0-0", response_digest(response))
    broker.set(keys.sent, "1")
    broker.set(keys.starts, 1)  # it started under the previous supervisor; no lease: its worker is gone
    executor.submit(job_for(iris, "0-0", response))
    assert executor.wait(3 * LEASE_S) == []
    assert broker.llen("sandbox") == 1


def test_it_sends_an_attempt_to_the_sandbox_queue(executor, iris, broker):
    executor.submit(job_for(iris, "0-0", sleep_program(0)))
    assert (broker.llen("sandbox"), broker.llen("sandbox-gpu")) == (1, 0)


def test_it_sends_a_program_that_asks_for_a_gpu_to_the_gpu_sandbox_queue(executor, iris, broker):
    response = "Plan.\n```python\nimport torch\nx = torch.zeros(3, device='cuda')\n```\n"
    executor.submit(job_for(iris, "0-0", response))
    assert (broker.llen("sandbox"), broker.llen("sandbox-gpu")) == (0, 1)


def queued_kwargs(broker, queue: str) -> dict:
    """The keyword arguments of the task message waiting in `queue` (Celery's protocol 2, JSON body)."""
    message = json.loads(broker.lindex(queue, 0))
    _args, kwargs, _embed = json.loads(base64.b64decode(message["body"]))
    return kwargs


def test_only_an_attempt_sent_to_the_gpu_sandbox_queue_may_use_the_gpu(executor, iris, broker):
    executor.submit(job_for(iris, "0-0", sleep_program(0)))
    executor.submit(
        job_for(iris, "0-1", "Plan.\n```python\nimport torch\nprint(torch.cuda.is_available())\n```\n")
    )
    assert queued_kwargs(broker, "sandbox")["allow_gpu"] is False
    assert queued_kwargs(broker, "sandbox-gpu")["allow_gpu"] is True


def test_only_a_final_grading_is_sent_to_run_on_the_hidden_answers(executor, iris, broker):
    executor.submit(job_for(iris, "0-0", sleep_program(0)))
    assert "on_hidden_answers" not in queued_kwargs(broker, "sandbox")
    broker.delete("sandbox")
    executor.submit(
        dataclasses.replace(job_for(iris, "final-iris", sleep_program(0)), on_hidden_answers=True)
    )
    assert queued_kwargs(broker, "sandbox")["on_hidden_answers"] is True


def test_it_sends_an_attempt_again_once_the_worker_that_started_it_went_quiet(executor, run, iris, broker):
    response = sleep_program(0)
    executor.submit(job_for(iris, "0-0", response))
    broker.set(
        AttemptKeys(run.id, "0-0", response_digest(response)).starts, 1
    )  # started, then its lease lapsed
    assert executor.wait(3 * LEASE_S) == []
    assert broker.llen("sandbox") == 2


def test_it_reports_an_attempt_lost_once_it_was_started_max_tries_times_without_a_result(
    executor, run, iris, broker
):
    response = sleep_program(0)
    executor.submit(job_for(iris, "0-0", response))
    broker.set(AttemptKeys(run.id, "0-0", response_digest(response)).starts, executor.max_tries)
    [finished] = executor.wait(3 * LEASE_S)
    assert (finished.outcome.status, finished.outcome.reward, broker.llen("sandbox")) == ("lost", None, 1)


def test_it_leaves_an_attempt_alone_while_its_lease_is_held(executor, run, iris, broker):
    response = sleep_program(0)
    executor.submit(job_for(iris, "0-0", response))
    keys = AttemptKeys(run.id, "0-0", response_digest(response))
    broker.set(keys.starts, executor.max_tries)
    broker.set(keys.lease, f"{keys.digest} host:1 token", px=int(4 * LEASE_S * 1000))
    assert executor.wait(3 * LEASE_S) == []
    assert broker.llen("sandbox") == 1


def test_it_raises_run_cancelled_once_the_run_is_cancelled(executor, run, iris):
    from rl_core.stops import RunCancelled

    executor.submit(job_for(iris, "0-0", sleep_program(0)))
    services.run_cancel(run_id=run.id)
    with pytest.raises(RunCancelled):
        executor.wait(5)


def test_it_sets_the_cancel_key_of_a_cancelled_attempt(executor, run, iris, broker):
    response = sleep_program(0)
    executor.submit(job_for(iris, "0-0", response))
    executor.cancel("0-0")
    assert broker.exists(AttemptKeys(run.id, "0-0", response_digest(response)).cancel)


def test_it_returns_nothing_at_once_when_nothing_is_in_flight(executor):
    started = time.monotonic()
    assert executor.wait(None) == []
    assert time.monotonic() - started < 1


def test_a_superseded_executor_stops_waiting_and_leaves_its_attempts_to_the_new_supervisor(
    executor, run, iris, broker
):
    from rl_core.stops import Superseded

    response = sleep_program(0)
    executor.submit(job_for(iris, "0-0", response))
    executor.superseded.set()
    with pytest.raises(Superseded):
        executor.wait(5)
    executor.close()
    assert not broker.exists(AttemptKeys(run.id, "0-0", response_digest(response)).cancel)
