"""The execute_attempt task's body, called in this process against real Redis, PostgreSQL and the sandbox:
when it runs an attempt, when it does not, and what it reports."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import time

import pytest
import redis
from practicum_test_cluster import LEASE_S, sleep_program

from rl_core.outcome import AttemptOutcome
from rl_core.run_spec import RunConfig
from rl_core.testing import opened_files
from webapp import storage
from webapp.competitions import storage as competition_storage
from webapp.runs import services
from webapp.runs.models import Attempt
from workers.attempts import AttemptOrder, execute_attempt, kill_children
from workers.coordination import results_list

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def run(iris, redis_url):
    config = RunConfig(attempts=4).to_dict()
    return services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)


@pytest.fixture
def broker(redis_url):
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


def order_for(run, response: str, *, key: str = "0-0", max_tries: int = 3) -> AttemptOrder:
    return AttemptOrder(run.id, key, "iris-species", response, LEASE_S, max_tries)


def pushed(broker, run) -> list[dict]:
    return [json.loads(raw) for raw in broker.lrange(results_list(run.id), 0, -1)]


def test_it_runs_the_attempt_and_pushes_its_outcome_to_the_run(run, broker):
    assert execute_attempt(order_for(run, sleep_program(0))) == "ran"
    [result] = pushed(broker, run)
    assert (result["key"], result["outcome"]["status"], result["outcome"]["valid"]) == ("0-0", "ok", True)


def test_a_validation_runs_attempts_are_graded_on_its_split_and_only_its_final_grading_on_the_answers(
    iris, broker
):
    config = RunConfig(attempts=4, reward_source="validation").to_dict()
    run = services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)
    hidden = competition_storage.answers_path("iris-species").resolve()
    with opened_files() as opened:
        assert execute_attempt(order_for(run, sleep_program(0))) == "ran"
    assert hidden not in opened
    final = dataclasses.replace(
        order_for(run, sleep_program(0), key="final-iris-species"), on_hidden_answers=True
    )
    with opened_files() as opened:
        assert execute_attempt(final) == "ran"
    assert opened.count(hidden) == 1
    assert [r["outcome"]["valid"] for r in pushed(broker, run)] == [True, True]


def test_it_writes_the_outcome_file_outside_the_scratch_dir(run):
    order = order_for(run, sleep_program(0))
    execute_attempt(order)
    assert storage.read_json(order.outcome_path)["outcome"]["status"] == "ok"
    assert storage.attempt_work_dir(run.id, "0-0") not in order.outcome_path.parents


def test_a_redelivered_attempt_with_an_outcome_is_not_run_again(run, broker):
    order = order_for(run, sleep_program(0))
    execute_attempt(order)
    assert execute_attempt(order) == "reused"
    assert broker.get(order.keys.starts) == "1"


def test_an_attempt_whose_row_finished_with_this_program_is_not_run(run, broker):
    response = sleep_program(0)
    services.attempt_start(
        run_id=run.id, key="0-0", competition=run.competitions.get(), policy_version=0,
        sample_fields={"response": response},
    )  # fmt: skip
    services.attempt_finish(
        run_id=run.id,
        key="0-0",
        outcome=AttemptOutcome.from_dict({"status": "error", "reward": -1.0}),
        staleness=0,
    )
    assert execute_attempt(order_for(run, response)) == "reused"
    assert (
        broker.get(order_for(run, response).keys.starts),
        pushed(broker, run)[0]["outcome"]["status"],
    ) == (
        None,
        "error",
    )


def test_a_second_delivery_leaves_while_the_first_holds_the_lease(run, broker):
    order = order_for(run, sleep_program(0))
    broker.set(order.keys.lease, f"{order.digest} elsewhere:1 token", px=10_000)
    assert execute_attempt(order) == "busy"
    assert pushed(broker, run) == []


def test_an_attempt_started_more_than_max_tries_times_is_recorded_lost_and_not_run(run, broker):
    order = order_for(run, sleep_program(0), max_tries=2)
    broker.set(order.keys.starts, 2)
    assert execute_attempt(order) == "lost"
    outcome = pushed(broker, run)[0]["outcome"]
    assert (outcome["status"], outcome["reward"]) == ("lost", None)
    assert not storage.attempt_work_dir(run.id, "0-0").exists()


def test_a_redelivery_raises_the_attempts_tries(run, broker):
    response = sleep_program(0)
    services.attempt_start(
        run_id=run.id, key="0-0", competition=run.competitions.get(), policy_version=0,
        sample_fields={"response": response},
    )  # fmt: skip
    broker.set(order_for(run, response).keys.starts, 1)
    execute_attempt(order_for(run, response))
    assert Attempt.objects.get(run=run, key="0-0").tries == 2


def test_a_worker_that_cannot_see_the_competition_files_fails_the_attempt_with_that_reason(run, broker):
    shutil.rmtree(competition_storage.public_dir("iris-species"))
    assert execute_attempt(order_for(run, sleep_program(0))) == "ran"
    outcome = pushed(broker, run)[0]["outcome"]
    assert (outcome["status"], outcome["valid"]) == ("error", False)
    assert "not visible" in outcome["grade_error"] and "Traceback" not in outcome["stderr_tail"]


def test_an_attempt_of_a_cancelled_run_is_not_run(run, broker):
    services.run_cancel(run_id=run.id)
    assert execute_attempt(order_for(run, sleep_program(0))) == "cancelled"
    assert not storage.attempt_work_dir(run.id, "0-0").exists()


def test_a_cancelled_attempt_is_not_run(run, broker):
    order = order_for(run, sleep_program(0))
    broker.set(order.keys.cancel, "1")
    assert execute_attempt(order) == "cancelled"


def test_kill_children_kills_the_process_group_of_each_child():
    child = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60"], start_new_session=True)
    time.sleep(0.2)
    assert child.pid in kill_children()
    assert child.wait(timeout=10) == -9
