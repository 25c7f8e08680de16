"""The run websocket: who may connect, the snapshot first, then live events through the real Redis layer."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from webapp.asgi import application
from webapp.runs import services

pytestmark = pytest.mark.django_db(transaction=True)
SAMPLE = {"prompt_kind": "solve", "family": "knn", "info": {}, "response": ""}


def communicator_for(run, user) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(
        application,
        f"/ws/runs/{run.id}/",
        headers=[(b"origin", b"http://localhost"), (b"host", b"localhost")],
    )
    communicator.scope["user"] = user
    return communicator


@pytest.mark.parametrize("who", ["stranger", "anonymous"])
def test_the_websocket_refuses_anyone_who_may_not_view_the_run(run, stranger, who):
    user = stranger if who == "stranger" else AnonymousUser()

    async def scenario():
        communicator = communicator_for(run, user)
        connected, code = await communicator.connect()
        await communicator.disconnect()
        return connected, code

    assert async_to_sync(scenario)() == (False, 4403)


def test_the_owner_gets_a_snapshot_then_live_events_in_order(run, owner):
    competition = run.competitions.get()

    async def scenario():
        communicator = communicator_for(run, owner)
        connected, _ = await communicator.connect()
        snapshot = await communicator.receive_json_from(timeout=5)
        await sync_to_async(services.attempt_start)(
            run_id=run.id, key="0-0", competition=competition, sample_fields=SAMPLE, policy_version=0
        )
        event = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return connected, snapshot, event

    connected, snapshot, event = async_to_sync(scenario)()
    assert connected
    assert snapshot["type"] == "snapshot" and snapshot["seq"] == 1 and snapshot["attempts"] == []
    assert event["type"] == "attempt" and event["seq"] == 2 and event["attempt"]["family"] == "knn"


def test_a_public_run_is_open_to_anonymous_viewers(run):
    run.is_public = True
    run.save()

    async def scenario():
        communicator = communicator_for(run, AnonymousUser())
        connected, _ = await communicator.connect()
        await communicator.disconnect()
        return connected

    assert async_to_sync(scenario)()


def test_a_viewer_that_saw_a_gap_can_ask_for_a_fresh_snapshot(run, owner):
    async def scenario():
        communicator = communicator_for(run, owner)
        await communicator.connect()
        await communicator.receive_json_from(timeout=5)
        await communicator.send_json_to({"type": "resync"})
        again = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return again

    assert async_to_sync(scenario)()["type"] == "snapshot"
