"""SIGKILL of a sandbox worker in the middle of an attempt: the attempt runs again on another worker or,
after its executions kept dying, is marked `lost`; the run completes either way."""

from __future__ import annotations

import pytest
import redis
from practicum_test_cluster import LEASE_S, SupervisorThread, lease_holder_pid, wait_for

from rl_core.run_spec import RunConfig
from webapp.runs import services
from webapp.runs.models import Attempt, Run
from workers.coordination import AttemptKeys
from workers.executor import CeleryExecutor

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]


def supervise_in_thread(run, cluster, redis_url, *, max_tries: int) -> SupervisorThread:
    def executor() -> CeleryExecutor:
        return CeleryExecutor(
            run_id=run.id, capacity=2, app=cluster.app, redis_url=redis_url, lease_s=LEASE_S,
            max_tries=max_tries, poll_s=0.5,
        )  # fmt: skip

    return SupervisorThread(run.id, executor).start()


def kill_the_worker_running(cluster, workers, run, key: str, redis_url: str) -> None:
    broker = redis.Redis.from_url(redis_url, decode_responses=True)
    lease = wait_for(
        lambda: broker.get(AttemptKeys(run.id, key, "").lease), timeout_s=90, what=f"{key} to start"
    )
    holder = lease_holder_pid(lease)
    [worker] = [w for w in workers if w.owns(holder)]
    cluster.kill(worker)


@pytest.mark.timeout(480)  # its waits: 2 worker starts (90 s each), 90 + 150 s; and a minute
def test_an_attempt_whose_worker_is_killed_runs_again_on_another_worker_and_the_run_completes(
    cluster, iris, sleep_policy, redis_url
):
    sleep_policy(("sleep_3",))
    config = RunConfig(attempts=4, actors=2, batch=2).to_dict()
    run = services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)
    workers = [cluster.start_worker("sandbox-a"), cluster.start_worker("sandbox-b")]
    supervisor = supervise_in_thread(run, cluster, redis_url, max_tries=3)
    kill_the_worker_running(cluster, workers, run, "0-0", redis_url)
    supervisor.join(150)
    run.refresh_from_db()
    rerun = Attempt.objects.get(run=run, key="0-0")
    assert (run.status, run.attempts_done, rerun.status, rerun.tries) == (Run.Status.FINISHED, 4, "ok", 2)


@pytest.mark.timeout(480)  # its waits: 2 worker starts (90 s each), 90 + 150 s; and a minute
def test_an_attempt_whose_workers_keep_dying_is_marked_lost_and_the_run_completes(
    cluster, iris, sleep_policy, redis_url
):
    sleep_policy(("sleep_3",))
    config = RunConfig(attempts=4, actors=2, batch=2).to_dict()
    run = services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)
    workers = [cluster.start_worker("sandbox-a"), cluster.start_worker("sandbox-b")]
    supervisor = supervise_in_thread(run, cluster, redis_url, max_tries=1)
    kill_the_worker_running(cluster, workers, run, "0-0", redis_url)
    supervisor.join(150)
    run.refresh_from_db()
    lost = Attempt.objects.get(run=run, key="0-0")
    assert (run.status, run.attempts_done, lost.status, lost.reward) == (Run.Status.FINISHED, 4, "lost", None)
