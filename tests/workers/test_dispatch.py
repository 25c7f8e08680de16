"""Handing a run to a supervisor through the broker."""

from __future__ import annotations

import json

import pytest
import redis

from rl_core.run_spec import RunConfig
from webapp.runs import services
from workers.coordination import supervisor_queued_key
from workers.dispatch import enqueue_supervisor

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_supervisor_is_sent_to_the_gpu_queue_and_marked_as_waiting(iris, cluster, redis_url):
    run = services.run_create(
        owner=None, competitions=[iris], policy="grammar", config=RunConfig(attempts=4).to_dict()
    )
    enqueue_supervisor(run.id, app=cluster.app)
    broker = redis.Redis.from_url(redis_url)
    message = json.loads(broker.lindex("gpu", 0))
    assert (message["headers"]["task"], message["headers"]["argsrepr"]) == (
        "practicum.supervise_run",
        f"[{run.id}]",
    )
    assert broker.exists(supervisor_queued_key(run.id))
