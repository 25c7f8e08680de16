"""The Redis keys through which a run's supervisor and the workers running its attempts coordinate, and the
leases (keys with a time to live, renewed by a heartbeat thread) that tell a live process from a dead one.

Per attempt (run R, attempt key K, program digest D; see workers.executor for how they are used):

| key                                   | value                 | written by                             |
|---------------------------------------|-----------------------|----------------------------------------|
| practicum:run:R:attempt:K:lease       | "D token", TTL lease  | the worker running it (heartbeat)      |
| practicum:run:R:attempt:K:D:sent      | "1"                   | the supervisor, when it enqueues it    |
| practicum:run:R:attempt:K:D:starts    | executions so far     | the worker, before each execution      |
| practicum:run:R:attempt:K:D:cancel    | "1"                   | the supervisor, to kill it             |
| practicum:run:R:results               | list of outcome JSON  | workers push, the supervisor pops      |
| practicum:run:R:supervisor            | token, TTL lease      | the run's supervisor (heartbeat)       |
| practicum:run:R:supervisor-queued     | "1"                   | whoever enqueues a supervise_run task  |

Every key but the leases expires after the visibility timeout, so nothing accumulates. Nothing here is
the truth about a run (PostgreSQL and the outcome files are): losing all of Redis costs re-runs, not results.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

import redis
from django.conf import settings

log = logging.getLogger(__name__)

REDIS_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)

_ACQUIRE = """
local current = redis.call('GET', KEYS[1])
if current == false or current == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def redis_client(url: str | None = None) -> redis.Redis:
    """A client for `url` (settings.REDIS_URL by default) that gives up on a dead server within seconds."""
    target = url or settings.REDIS.url
    return redis.Redis.from_url(
        target, decode_responses=True, socket_timeout=15, socket_connect_timeout=3, health_check_interval=15
    )


_SHARED: dict[tuple[int, str], redis.Redis] = {}


def shared_client() -> redis.Redis:
    """This process's client for settings.REDIS_URL, made once (per process: forked workers get their own).
    Never close it; use `redis_client` for a client of your own."""
    key = (os.getpid(), settings.REDIS.url)
    if key not in _SHARED:
        _SHARED[key] = redis_client(key[1])
    return _SHARED[key]


def run_prefix(run_id: int) -> str:
    return f"practicum:run:{int(run_id)}"


def results_list(run_id: int) -> str:
    return f"{run_prefix(run_id)}:results"


def supervisor_lease_key(run_id: int) -> str:
    return f"{run_prefix(run_id)}:supervisor"


def supervisor_queued_key(run_id: int) -> str:
    return f"{run_prefix(run_id)}:supervisor-queued"


@dataclass(frozen=True)
class AttemptKeys:
    """The Redis keys of one attempt of a run, for the program with `digest` (see the table above)."""

    run_id: int
    key: str
    digest: str

    @property
    def lease(self) -> str:
        return f"{run_prefix(self.run_id)}:attempt:{self.key}:lease"

    def _own(self, what: str) -> str:
        return f"{run_prefix(self.run_id)}:attempt:{self.key}:{self.digest}:{what}"

    @property
    def sent(self) -> str:
        return self._own("sent")

    @property
    def starts(self) -> str:
        return self._own("starts")

    @property
    def cancel(self) -> str:
        return self._own("cancel")


class Lease:
    """A key that says "I am alive" for `ttl_s` seconds; only its holder can renew or release it.

    `value` is what other processes read (the attempt lease's starts with the program digest).
    """

    def __init__(self, client: redis.Redis, name: str, ttl_s: float, *, value: str = "") -> None:
        self.client, self.name, self.ttl_ms = client, name, max(1, int(ttl_s * 1000))
        self.value = f"{value} {secrets.token_hex(8)}".strip()

    def acquire(self) -> bool:
        """Take the lease if nobody holds it (or we already do); renewing is the same call."""
        return bool(self.client.eval(_ACQUIRE, 1, self.name, self.value, self.ttl_ms))

    renew = acquire

    def release(self) -> None:
        self.client.eval(_RELEASE, 1, self.name, self.value)


class Heartbeat:
    """A daemon thread that renews `lease` every `interval_s` and then calls `on_beat()`, until stopped;
    `on_lost()` instead when another process has taken the lease meanwhile (we were presumed dead).

    Redis being down is not fatal: the beat is retried at the next interval (the lease reappears when
    Redis is back). Use as a context manager around the work the lease covers.
    """

    def __init__(
        self,
        lease: Lease,
        interval_s: float,
        on_beat: Callable[[], None] | None = None,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self.lease, self.interval_s, self.on_beat, self.on_lost = lease, interval_s, on_beat, on_lost
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat {lease.name}", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._beat()
            except REDIS_ERRORS as error:
                log.warning("heartbeat of %s missed: %s", self.lease.name, error)

    def _beat(self) -> None:
        if not self.lease.renew():
            if self.on_lost is not None:
                self.on_lost()
            return
        if self.on_beat is not None:
            self.on_beat()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval_s + 5)
