"""Which runs get a new supervisor: active ones with no live supervisor and none waiting in the broker; and
celery beat finds them even while every supervisor is busy."""

from __future__ import annotations

import pytest
import redis
from practicum_test_cluster import wait_for

from rl_core.run_spec import RunConfig
from webapp.runs import services
from workers.coordination import supervisor_lease_key, supervisor_queued_key
from workers.dispatch import enqueue_supervisor
from workers.recovery import orphaned_runs, recover_orphaned_runs

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker(redis_url):
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def make_run(iris):
    def make(attempts: int = 4):
        config = RunConfig(attempts=attempts).to_dict()
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


@pytest.mark.faults
@pytest.mark.timeout(420)  # its waits: 2 worker starts (90 s each), beat's start (60 s), 60 + 60 s; a minute
def test_beat_finds_an_orphaned_run_while_the_only_gpu_worker_is_busy_supervising(make_run, broker, cluster):
    """The gpu worker's one process drives a long run; the sandbox worker runs its attempts and, between
    two of them, beat's recovery task, which sends the orphan a supervisor to wait for a free gpu worker."""
    cluster.start_worker("gpu", "gpu,control")  # before the runs exist: its start-up recovery finds none
    cluster.start_worker("sandbox", "sandbox,control")
    busy, orphan = make_run(attempts=100_000), make_run()
    enqueue_supervisor(busy.id, app=cluster.app)
    wait_for(lambda: broker.exists(supervisor_lease_key(busy.id)), timeout_s=60, what="a busy supervisor")
    assert not broker.exists(supervisor_queued_key(orphan.id))
    cluster.start_beat(interval_s=1)
    wait_for(lambda: broker.exists(supervisor_queued_key(orphan.id)), timeout_s=60, what="beat's recovery")
    # enqueue_supervisor marks the run before it sends the message (so recovery never sees it unmarked while
    # the message is on its way): wait for the message itself, which stays queued while the worker is busy.
    wait_for(lambda: broker.llen("gpu") == 1, timeout_s=10, what="the orphan's supervisor in the gpu queue")
    assert bool(broker.exists(supervisor_lease_key(busy.id)))
