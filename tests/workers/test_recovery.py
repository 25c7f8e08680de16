"""Which runs get a new supervisor: active ones with no live supervisor and none waiting in the broker."""

from __future__ import annotations

import pytest
import redis

from webapp.runs import services
from webapp.runs.config import RunConfig
from workers.coordination import supervisor_lease_key, supervisor_queued_key
from workers.recovery import orphaned_runs, recover_orphaned_runs

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker(redis_url):
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def make_run(iris):
    def make():
        config = RunConfig(attempts=4).to_dict()
        return services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)

    return make


def test_an_active_run_without_a_supervisor_is_orphaned(make_run):
    run = make_run()
    assert orphaned_runs() == [run.id]


def test_a_run_whose_supervisor_holds_its_lease_is_not_orphaned(make_run, broker):
    run = make_run()
    broker.set(supervisor_lease_key(run.id), "alive")
    assert orphaned_runs() == []


def test_a_run_whose_supervisor_waits_in_the_broker_is_not_orphaned(make_run, broker):
    run = make_run()
    broker.set(supervisor_queued_key(run.id), "1")
    assert orphaned_runs() == []


def test_a_finished_run_is_not_orphaned(make_run):
    run = make_run()
    services.run_set_status(run_id=run.id, status="finished")
    assert orphaned_runs() == []


def test_recovering_an_orphan_sends_it_a_supervisor_on_the_gpu_queue(make_run, broker, cluster):
    run = make_run()
    assert recover_orphaned_runs(app=cluster.app) == [run.id]
    assert (broker.llen("gpu"), bool(broker.exists(supervisor_queued_key(run.id)))) == (1, True)
