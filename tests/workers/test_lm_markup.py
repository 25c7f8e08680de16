"""A sandbox worker and the LM's markup the supervisor ships with an attempt: run when it passes the
worker's own AST check, refused for the AST rules' markers when it does not."""

from __future__ import annotations

import json

import pytest
import redis
from practicum_test_cluster import LEASE_S, sleep_program

from rl_core.run_spec import RunConfig
from webapp.runs import services
from workers.attempts import AttemptOrder, execute_attempt
from workers.coordination import results_list

pytestmark = pytest.mark.django_db(transaction=True)

PROGRAM = sleep_program(0).split("```python\n")[1].split("```")[0]


@pytest.fixture
def run(iris, redis_url):
    config = RunConfig(policy="lm", instrumenter="lm", attempts=4).to_dict()
    return services.run_create(owner=None, competitions=[iris], policy="lm", config=config)


def outcome_with(run, redis_url, markup: str) -> dict:
    order = AttemptOrder(run.id, "0-0", "iris-species", sleep_program(0), LEASE_S, 3, lm_markup=markup)
    assert execute_attempt(order) == "ran"
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    [raw] = client.lrange(results_list(run.id), 0, -1)
    client.close()
    return json.loads(raw)["outcome"]


def test_a_worker_runs_the_lms_markup_when_it_passes_its_ast_check(run, redis_url):
    markup = PROGRAM.replace("import time\n", "import time\n__practicum_mark__('imports_done')\n")
    outcome = outcome_with(run, redis_url, markup)
    assert (outcome["instrumentation"], outcome["stages"], outcome["valid"]) == ("lm", ["imports_done"], True)


def test_a_worker_refuses_a_markup_that_changes_the_program_and_runs_the_rules_markers(run, redis_url):
    changed = PROGRAM.replace("time.sleep(0)", "time.sleep(0); print('extra')")
    outcome = outcome_with(run, redis_url, changed + "__practicum_mark__('model_trained')\n")
    assert outcome["instrumentation"] == "lm-fallback"
    assert "print('extra')" not in outcome["instrumented_program"] and outcome["stdout_tail"] == ""
    assert "model_trained" not in outcome["stages"] and outcome["valid"]
