"""The supervise_run task's body: one supervisor per run at a time, none for a run that is over."""

from __future__ import annotations

import pytest
import redis

from webapp.runs import services
from webapp.runs.config import RunConfig
from workers.coordination import supervisor_lease_key
from workers.supervision import supervise

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def run(iris, redis_url):
    config = RunConfig(attempts=4).to_dict()
    return services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)


def test_a_second_supervisor_leaves_a_run_whose_lease_is_held(run, redis_url):
    redis.Redis.from_url(redis_url).set(supervisor_lease_key(run.id), "the first supervisor")
    assert supervise(run.id) == "busy"


def test_a_supervisor_leaves_a_run_that_is_over(run):
    services.run_cancel(run_id=run.id)
    assert supervise(run.id) == "inactive"


def test_a_supervisor_in_a_thread_of_this_process_runs_the_attempts_here(run, redis_url):
    from webapp.runs.models import Run
    from workers.dispatch import supervise_in_thread

    supervise_in_thread(run.id)
    run.refresh_from_db()
    assert (run.status, run.attempts_done) == (Run.Status.FINISHED, 4)
    assert redis.Redis.from_url(redis_url).llen("sandbox") == 0
