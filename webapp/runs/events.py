"""Live events: every state change of a run is pushed to `/ws/runs/<id>/` viewers after it commits.

Each event carries the run's next sequence number (`seq`), taken inside the same transaction as the
change, so a browser that sees a gap knows it missed something and resynchronises. Taking it updates the
run row, whose lock the transaction then holds until it commits: events commit in seq order, and a
database snapshot holds a change exactly when it holds that change's seq (what makes a run page's
snapshot, webapp.runs.selectors.run_snapshot, agree with its seq).
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from webapp.runs.models import Run

log = logging.getLogger(__name__)


def run_group_name(run_id: int) -> str:
    return f"run-{run_id}"


def next_seq(run_id: int) -> int:
    """Reserve the next sequence number; call inside the transaction that makes the change (RuntimeError
    outside one: a seq committed apart from its change would let a snapshot count the change twice)."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError(
            f"run {run_id}: an event's seq must be taken inside the transaction of its change."
        )
    Run.objects.filter(id=run_id).update(event_seq=F("event_seq") + 1)
    return Run.objects.filter(id=run_id).values_list("event_seq", flat=True).get()


def publish(run_id: int, kind: str, payload: dict[str, Any]) -> None:
    """Queue `{"type": kind, "seq": n, **payload}` for the run's viewers once the transaction commits."""
    message = {"type": kind, "seq": next_seq(run_id), **payload}
    transaction.on_commit(lambda: send(run_id, message))


def send(run_id: int, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(run_group_name(run_id), {"type": "run.event", "payload": message})
    except Exception:  # a viewer-side outage must never fail the run; the API has the truth
        log.exception("could not publish %s event %s of run %s", message["type"], message["seq"], run_id)
