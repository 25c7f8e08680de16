"""A workaround for a kombu Redis-transport race that otherwise kills a worker when Redis goes away.

When the broker connection drops, Celery closes the old connection; closing a channel restores its
unacknowledged messages (with acks_late: every attempt still running), and kombu asks the channel for a
new Redis client to do it. The connection has already been released by then (``connection.client`` is
None), so kombu raises ``AttributeError: 'NoneType' object has no attribute 'hostname'`` from
``Channel._connparams``, which Celery treats as unrecoverable: the worker exits (seen with kombu 5.7 and
redis-py 8 in tests/faults/test_redis_restarted.py; the same race is reported upstream, celery/kombu#582).

`install` wraps ``QoS.restore_unacked`` so that, only when the channel's connection is gone, the restore
is skipped with a warning instead. Nothing is lost by skipping: the messages stay in Redis' unacked set
(restored after the visibility timeout, if Redis kept them), the supervisor re-sends any attempt whose
lease lapses (workers.executor), and attempts are idempotent by id (workers.attempts).
"""

from __future__ import annotations

import functools
import logging

log = logging.getLogger(__name__)


def install() -> None:
    """Patch kombu's Redis QoS once per process (idempotent)."""
    from kombu.transport import redis

    original = redis.QoS.restore_unacked
    if getattr(original, "practicum_patched", False):
        return

    @functools.wraps(original)
    def restore_unacked(self, client=None):
        if client is None and connection_released(self.channel):
            log.warning(
                "broker connection gone: %d unacknowledged messages not restored now "
                "(their supervisors re-send them)",
                len(self._delivered),
            )
            self._delivered.clear()
            return None
        return original(self, client)

    restore_unacked.practicum_patched = True  # type: ignore[attr-defined]
    redis.QoS.restore_unacked = restore_unacked  # type: ignore[method-assign]


def connection_released(channel) -> bool:
    """Whether `channel` can no longer make a Redis client (its connection was released)."""
    connection = getattr(channel, "connection", None)
    return connection is None or getattr(connection, "client", None) is None
