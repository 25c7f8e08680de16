"""A workaround for a kombu Redis-transport race that otherwise kills a worker when Redis goes away.

When the broker connection drops, Celery closes the old connection and opens a new one. Two things then
still touch the old channel, whose connection has been released (``channel.connection.client`` is None):
closing it restores its unacknowledged messages (with acks_late: every attempt still running), and an
attempt that finishes after the reconnect acknowledges its message on it. Either asks the old channel for
a Redis client, and kombu raises ``AttributeError: 'NoneType' object has no attribute 'client'`` (or
``'hostname'``) from ``Channel._connparams``, which Celery treats as unrecoverable: the worker exits. Seen
with kombu 5.7 and redis-py 8 in tests/faults/test_redis_restarted.py; the same race is reported upstream
(celery/kombu#582).

`install` wraps ``QoS.restore_unacked``, ``QoS.ack`` and ``QoS.reject`` so that, only when the channel's
connection is gone, they are skipped with a warning. Nothing is lost by skipping: a message delivered on a
dead connection stays in Redis' unacked set (restored after the visibility timeout, if Redis kept it), the
supervisor re-sends any attempt whose lease lapses (workers.executor), and attempts are idempotent by id,
so one already reported is not run again (workers.attempts).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def install() -> None:
    """Patch kombu's Redis QoS once per process (idempotent)."""
    from kombu.transport import redis

    for name in ("restore_unacked", "ack", "reject"):
        method = getattr(redis.QoS, name)
        if not getattr(method, "practicum_patched", False):
            setattr(redis.QoS, name, skipped_when_released(method))


def skipped_when_released(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` of a QoS, or a logged no-op when its channel's connection was released."""

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        restoring = method.__name__ == "restore_unacked"
        client = (args[0] if args else kwargs.get("client")) if restoring else None
        if connection_released(self.channel) and client is None:  # a given client can still restore
            log.warning(
                "broker connection gone: %s skipped (the message is delivered again)", method.__name__
            )
            if restoring:
                self._delivered.clear()
            return None
        return method(self, *args, **kwargs)

    guarded.practicum_patched = True  # type: ignore[attr-defined]
    return guarded


def connection_released(channel: Any) -> bool:
    """Whether `channel` can no longer make a Redis client (its connection was released)."""
    connection = getattr(channel, "connection", None)
    return connection is None or getattr(connection, "client", None) is None
