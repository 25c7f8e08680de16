"""`/ws/runs/<id>/`: authorizes the viewer, sends a snapshot, then forwards the run's live events."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from webapp.runs import selectors
from webapp.runs.events import run_group_name

FORBIDDEN = 4403


@database_sync_to_async
def run_is_visible_to(*, user, run_id: int) -> bool:
    return selectors.run_is_visible_to(run_id=run_id, user=user)


@database_sync_to_async
def run_snapshot(*, run_id: int) -> dict:
    return selectors.run_snapshot(run=selectors.Run.objects.get(id=run_id))


class RunConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        self.group = run_group_name(self.run_id)
        if not await run_is_visible_to(user=self.scope["user"], run_id=self.run_id):
            await self.close(code=FORBIDDEN)
            return
        # Join before the snapshot, so no event falls between them; the page drops events with
        # seq <= the snapshot's.
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json(await run_snapshot(run_id=self.run_id))

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs) -> None:
        """The page asks for a fresh snapshot after it noticed a gap in the sequence numbers."""
        if content.get("type") == "resync":
            await self.send_json(await run_snapshot(run_id=self.run_id))

    async def dispatch(self, message: dict) -> None:
        """Forward live events without Channels' per-message database housekeeping.

        Channels' own dispatch first runs close_old_connections in its one shared sync thread, for
        every message; with many viewers that thread carries every event to every one of them (100
        viewers x 20 events/s = 2,000 hops a second) and delivery falls seconds behind. Forwarding an
        event touches no database, and the handlers that do (connect, resync) go through
        database_sync_to_async, which closes stale connections itself.
        """
        if message["type"] == "run.event":
            await self.run_event(message)
        else:
            await super().dispatch(message)

    async def run_event(self, event: dict) -> None:
        await self.send_json(event["payload"])
