"""The supervise_run task's body: one supervisor per run at a time, none for a run that is over, and one
that was presumed dead stops once another has taken its run over."""

from __future__ import annotations

import time

import pytest
import redis
from practicum_test_cluster import LEASE_S, wait_for

from rl_core.run_spec import RunConfig
from webapp.runs import services, studies, study_reads
from webapp.runs.models import Attempt, Run
from webapp.runs.study_plan import Arm
from workers.coordination import supervisor_lease_key, supervisor_queued_key
from workers.dispatch import enqueue_supervisor
from workers.recovery import recover_orphaned_runs
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


def a_study(iris):
    """Arms static and rl on one seed, 2 attempts each; its first run queued (and sent to the gpu queue)."""
    arms = [Arm("static", {"updates": False}), Arm("rl")]
    config = {"attempts": 2, "actors": 1, "batch": 2}
    return studies.study_start(owner=None, competitions=[iris], config=config, arms=arms, seeds=1)


def test_a_supervisor_that_drives_a_study_run_to_its_end_starts_the_studys_next(iris, redis_url):
    study = a_study(iris)
    first = study.runs.get()
    assert supervise(first.id, distributed=False) == "done"
    second = study.runs.exclude(id=first.id).get()
    assert (second.study_arm, second.status) == ("rl", Run.Status.QUEUED)
    sent = redis.Redis.from_url(redis_url).exists(supervisor_queued_key(second.id))
    assert sent, "the second run's supervisor was sent to the gpu queue (workers.dispatch marks it)"
    assert supervise(second.id, distributed=False) == "done"
    assert study_reads.study_status(study) == "finished" and study.runs.count() == 2


def test_a_supervisor_leaving_a_study_run_that_is_over_starts_the_next_unless_the_study_is_cancelled(
    iris, redis_url
):
    study = a_study(iris)
    first = study.runs.get()
    services.run_cancel(run_id=first.id)
    assert supervise(first.id) == "inactive" and study.runs.count() == 2
    studies.study_cancel(study_id=study.id)
    second = study.runs.exclude(id=first.id).get()
    assert supervise(second.id) == "inactive" and study.runs.count() == 2


def test_a_supervisor_that_finds_a_study_run_busy_starts_nothing(iris, redis_url):
    first = a_study(iris).runs.get()
    redis.Redis.from_url(redis_url).set(supervisor_lease_key(first.id), "the first supervisor")
    assert supervise(first.id) == "busy" and Run.objects.count() == 1


TAKEN_OVER_ATTEMPTS = 16


@pytest.mark.faults
@pytest.mark.timeout(500)  # its waits: 2 worker starts (90 s each), 120 + 10 + 6 + 120 s; and a minute
def test_a_supervisor_whose_lease_another_takes_over_stops_and_leaves_it_the_run(cluster, iris, redis_url):
    """One scenario: a gpu worker's supervisor, its lease overwritten as a supervisor that took the run over
    would; then that new holder hands the run back through recovery and it completes."""
    cluster.start_worker("sandbox", "sandbox", concurrency=2)
    gpu = cluster.start_worker("gpu", "gpu")
    config = RunConfig(attempts=TAKEN_OVER_ATTEMPTS, actors=2, batch=2, checkpoint_every=1).to_dict()
    run = services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)
    broker = redis.Redis.from_url(redis_url, decode_responses=True)
    enqueue_supervisor(run.id, app=cluster.app)
    wait_for(lambda: Run.objects.get(id=run.id).attempts_done >= 2, timeout_s=120, what="two attempts")
    broker.set(supervisor_lease_key(run.id), "the new supervisor", ex=3600)
    wait_for(lambda: "took it over" in gpu.log(), timeout_s=10, what="the supervisor to stop")
    started = Attempt.objects.filter(run=run).count()
    time.sleep(3 * LEASE_S)
    run.refresh_from_db()
    assert (run.status, run.error) == (Run.Status.RUNNING, "")
    assert Attempt.objects.filter(run=run).count() == started
    assert broker.get(supervisor_lease_key(run.id)) == "the new supervisor"
    assert list(broker.scan_iter(f"practicum:run:{run.id}:attempt:*:cancel")) == []
    assert "'superseded'" in gpu.log() and "Traceback" not in gpu.log()

    broker.delete(supervisor_lease_key(run.id))  # the new holder lets go; recovery hands the run on
    assert recover_orphaned_runs(app=cluster.app) == [run.id]
    wait_for(lambda: not Run.objects.get(id=run.id).is_active, timeout_s=120, what="the run to end")
    run.refresh_from_db()
    assert (run.status, run.attempts_done) == (Run.Status.FINISHED, TAKEN_OVER_ATTEMPTS), gpu.log()[-3000:]
