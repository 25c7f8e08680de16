"""CeleryExecutor: the loop's Executor (rl_core.executors) with each attempt a Celery task on sandbox workers.

How results reach the supervisor without a `.get()`: the worker writes the outcome file (webapp.storage)
and pushes the outcome onto a Redis list per run; `wait()` BLPOPs that list with a timeout. The task's
own Celery result is ignored. PostgreSQL rows are still written by the supervisor's observer, which
alone knows each attempt's staleness.

What survives what (the keys are in workers.coordination; the worker's side is workers.attempts):
- A sandbox worker dies mid-attempt. Its lease (renewed every lease/4 s) expires; one lease period later
  the supervisor checks the outcome file, finds none, and sends the attempt again, or, once it has been
  executed PRACTICUM_MAX_TRIES times, reports it `lost` (status "lost", reward None). A pool child killed
  under a living worker is redelivered at once by Celery (reject_on_worker_lost); the worker then counts
  the try itself. Either way the message left behind in Redis is harmless when it comes back after the
  visibility timeout: its attempt has a result, so it is not run again.
- The supervisor dies. A new one (workers.recovery) re-submits the in-flight attempts of its newest
  checkpoint: those with an outcome file are reported at once, those already in the broker or running
  (their `sent` key is set) are not sent twice, the rest are sent.
- Redis restarts empty. Leases come back with the next heartbeat; queued messages are gone, so their
  `sent` keys are too, and they are sent again after one lease period; results pushed during the outage
  are read from their outcome files.
- Another supervisor takes the run over (this one stalled past its lease and was presumed dead). The
  supervisor's heartbeat sets `superseded`; `wait()` then raises rl_core.stops.Superseded before it
  pops another result, and `close()` leaves the attempts in flight alone: they are the new supervisor's.
- The run is cancelled (or deleted). `wait()` checks the run every poll (selectors.run_is_cancelled) and
  raises rl_core.stops.RunCancelled, whose handler in the driver cancels every attempt in flight: a cancel
  key that the worker's heartbeat sees (it kills the sandbox and removes its scratch dir) and a revoke for
  messages not yet started.

Programs that ask for a GPU (`needs_gpu`) go to the `sandbox-gpu` queue, the rest to `sandbox`.
Celery's time limits are a backstop to the sandbox's own wall-clock limit: soft = the competition's
time limit + GRADING_MARGIN_S, hard = soft + 30 s.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from celery import Celery
from django.conf import settings
from kombu.exceptions import OperationalError

from rl_core.executors import Finished, Job
from rl_core.outcome import AttemptOutcome
from rl_core.responses import parse_response
from rl_core.stops import RunCancelled, Superseded
from webapp import storage
from webapp.runs import selectors
from workers.celery import app as default_app
from workers.coordination import REDIS_ERRORS, AttemptKeys, redis_client, results_list
from workers.outcomes import lost_outcome, response_digest

log = logging.getLogger(__name__)

GRADING_MARGIN_S = 120.0
SEND_ERRORS = (*REDIS_ERRORS, OperationalError, OSError)
_CUDA = re.compile(r"\bcuda\b|\bgpu\b", re.IGNORECASE)


def needs_gpu(job: Job) -> bool:
    """Whether the attempt's program asks for a GPU: the policy said so (`info["needs_gpu"]`), or its code
    mentions cuda or a GPU."""
    if job.sample.info.get("needs_gpu"):
        return True
    code = parse_response(job.sample.response).code or ""
    return bool(_CUDA.search(code))


def queue_for(job: Job) -> str:
    return "sandbox-gpu" if needs_gpu(job) else "sandbox"


def task_id_for(run_id: int, key: str, digest: str) -> str:
    return f"practicum-attempt-{run_id}-{key}-{digest}"


@dataclass
class _Flight:
    """The supervisor's view of one attempt in flight."""

    job: Job
    keys: AttemptKeys
    sent: bool = False  # a message has been accepted by the broker
    starts_at_send: int = 0  # the worker-side execution count when it was last sent
    alive_at: float = 0.0  # monotonic time it was last known queued or running
    submitted_at: float = field(default_factory=time.monotonic)


class CeleryExecutor:
    """Runs a run's attempts as `practicum.execute_attempt` tasks; see the module docstring.

    Args:
        run_id: the run whose attempts these are (its Run row exists).
        capacity: attempts the loop keeps in flight (informational: the workers' slots are the real limit).
        app: the Celery app to send with (workers.celery.app by default).
        redis_url: the Redis holding the coordination keys (settings.REDIS_URL by default).
        lease_s, max_tries, poll_s: PRACTICUM_ATTEMPT_LEASE_S, PRACTICUM_MAX_TRIES, PRACTICUM_RESULT_POLL_S.
        superseded: set once another supervisor holds the run (see the module docstring).
    `timings` holds, per attempt id reported, (seconds from submit to report, seconds the worker spent
    running it), for benchmarks.
    """

    def __init__(
        self,
        *,
        run_id: int,
        capacity: int,
        app: Celery | None = None,
        redis_url: str | None = None,
        lease_s: float | None = None,
        max_tries: int | None = None,
        poll_s: float | None = None,
        superseded: threading.Event | None = None,
    ) -> None:
        self.run_id, self.capacity, self.app = run_id, capacity, app or default_app
        self.client = redis_client(redis_url)
        self.lease_s = float(lease_s or settings.PRACTICUM_ATTEMPT_LEASE_S)
        self.max_tries = int(max_tries or settings.PRACTICUM_MAX_TRIES)
        self.poll_s = float(poll_s or settings.PRACTICUM_RESULT_POLL_S)
        self.superseded = superseded or threading.Event()
        self.expire_s = settings.PRACTICUM_VISIBILITY_TIMEOUT_S
        self.timings: dict[str, tuple[float, float | None]] = {}
        self._flights: dict[str, _Flight] = {}
        self._ready: list[Finished] = []
        self._t0 = time.monotonic()
        self._next_poll = 0.0

    def submit(self, job: Job) -> None:
        keys = AttemptKeys(self.run_id, job.attempt_id, response_digest(job.sample.response))
        flight = _Flight(job, keys, alive_at=time.monotonic())
        self._flights[job.attempt_id] = flight
        stored = storage.read_json(storage.attempt_outcome_path(self.run_id, job.attempt_id, keys.digest))
        if stored is not None:  # it finished while no supervisor was listening
            self._arrive(stored)
        elif self._quiet(self.client.exists, keys.sent):  # in the broker, running, or died while unwatched
            flight.sent = True  # starts_at_send stays 0: if it ever started, it must be running now
        else:
            self._send(flight)

    def _send(self, flight: _Flight) -> None:
        job, keys = flight.job, flight.keys
        limit_s = float(job.sample.prompt.task.time_limit_s or 0) or 3600.0
        try:
            starts = self._starts(keys)
            self.app.send_task(
                "practicum.execute_attempt",
                kwargs=self._order(job),
                queue=queue_for(job),
                task_id=task_id_for(self.run_id, job.attempt_id, keys.digest),
                soft_time_limit=limit_s + GRADING_MARGIN_S,
                time_limit=limit_s + GRADING_MARGIN_S + 30,
            )
            self.client.set(keys.sent, "1", ex=self.expire_s)
        except SEND_ERRORS as error:
            log.warning("could not send attempt %s (%s); retrying at the next poll", job.attempt_id, error)
            flight.sent = False
            return
        flight.sent, flight.starts_at_send, flight.alive_at = True, starts, time.monotonic()

    def _order(self, job: Job) -> dict[str, Any]:
        """The execute_attempt task's keyword arguments (workers.attempts.AttemptOrder); the LM's markup of
        the program only when the job has one (rl_core.lm_instrumenting), for the worker to check; the
        final grading's flag (rl_core.final_grading) only when set."""
        return {
            "run_id": self.run_id, "key": job.attempt_id, "slug": job.task_slug,
            "response": job.sample.response, "lease_s": self.lease_s, "max_tries": self.max_tries,
            "allow_gpu": queue_for(job) == "sandbox-gpu",
        } | ({"lm_markup": job.lm_markup} if job.lm_markup is not None else {}) | (
            {"on_hidden_answers": True} if job.on_hidden_answers else {}
        )  # fmt: skip

    def _starts(self, keys: AttemptKeys) -> int:
        return int(self.client.get(keys.starts) or 0)

    def wait(self, timeout_s: float | None) -> list[Finished]:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            self._raise_if_superseded()
            if self._ready:
                ready, self._ready = self._ready, []
                return ready
            if not self._flights:
                return []
            now = time.monotonic()
            if now >= self._next_poll:
                self._poll()
                self._next_poll = time.monotonic() + self.poll_s
                continue
            if deadline is not None and now >= deadline:
                return []
            self._receive(min(self._next_poll, deadline or self._next_poll) - now)

    def _receive(self, block_s: float) -> None:
        """Pop whatever results have arrived, blocking up to `block_s` for the first one."""
        name = results_list(self.run_id)
        try:
            first = self.client.blpop([name], timeout=max(block_s, 0.01))
            rest = self.client.lpop(name, 100) if first else None
        except REDIS_ERRORS as error:
            log.warning("results of run %s unreadable (%s); retrying", self.run_id, error)
            time.sleep(min(max(block_s, 0.0), 0.5))
            return
        for raw in ([first[1]] if first else []) + list(rest or []):
            self._arrive(json.loads(str(raw)))

    def _arrive(self, payload: dict[str, Any]) -> None:
        flight = self._flights.get(payload.get("key", ""))
        if flight is None or payload.get("digest") != flight.keys.digest:
            return  # a duplicate, a cancelled attempt, or another program under a re-used key
        del self._flights[flight.job.attempt_id]
        self.timings[flight.job.attempt_id] = (time.monotonic() - flight.submitted_at, payload.get("exec_s"))
        self._ready.append(Finished(flight.job.attempt_id, AttemptOutcome.from_dict(payload["outcome"])))

    def _poll(self) -> None:
        """Stop if the run was cancelled; send what could not be sent; check on attempts gone quiet."""
        self._raise_if_cancelled()
        flights = list(self._flights.values())
        for flight in flights:
            if not flight.sent:
                self._send(flight)
        try:
            states = self._states([f for f in flights if f.sent])
        except REDIS_ERRORS as error:
            log.warning("cannot check attempts of run %s (%s)", self.run_id, error)
            return
        for flight, (lease, starts, sent) in states:
            self._check(flight, lease or "", int(starts or 0), bool(sent))

    def _states(self, flights: list[_Flight]) -> list[tuple[_Flight, tuple[Any, Any, Any]]]:
        pipe = self.client.pipeline(transaction=False)
        for flight in flights:
            pipe.get(flight.keys.lease)
            pipe.get(flight.keys.starts)
            pipe.exists(flight.keys.sent)
        values = pipe.execute()
        return [(f, tuple(values[3 * i : 3 * i + 3])) for i, f in enumerate(flights)]

    def _check(self, flight: _Flight, lease: str, starts: int, sent: bool) -> None:
        now = time.monotonic()
        running = lease.split(" ")[0] == flight.keys.digest
        queued = sent and starts <= flight.starts_at_send
        if running or queued:
            flight.alive_at = now
            return
        path = storage.attempt_outcome_path(self.run_id, flight.job.attempt_id, flight.keys.digest)
        stored = storage.read_json(path)
        if stored is not None:
            self._arrive(stored)
        elif now - flight.alive_at >= self.lease_s:
            self._give_up(flight, starts) if starts >= self.max_tries else self._send(flight)

    def _give_up(self, flight: _Flight, starts: int) -> None:
        reason = f"Lost: its worker died during each of its {starts} tries (the limit is {self.max_tries})."
        payload = {
            "key": flight.job.attempt_id, "digest": flight.keys.digest,
            "outcome": lost_outcome(flight.job.sample.response, reason).to_dict(),
        }  # fmt: skip
        storage.write_json_atomic(
            storage.attempt_outcome_path(self.run_id, flight.job.attempt_id, flight.keys.digest), payload
        )
        self._arrive(payload)

    def _raise_if_superseded(self) -> None:
        if self.superseded.is_set():
            raise Superseded()

    def _raise_if_cancelled(self) -> None:
        if selectors.run_is_cancelled(run_id=self.run_id):
            raise RunCancelled()

    def cancel(self, attempt_id: str) -> None:
        """Kill the attempt wherever it is: queued (revoked, and skipped when delivered) or running."""
        self._ready = [f for f in self._ready if f.attempt_id != attempt_id]
        flight = self._flights.pop(attempt_id, None)
        if flight is None:
            return
        self._quiet(self.client.set, flight.keys.cancel, "1", ex=self.expire_s)
        try:
            self.app.control.revoke(task_id_for(self.run_id, attempt_id, flight.keys.digest))
        except SEND_ERRORS as error:
            log.warning("could not revoke attempt %s: %s", attempt_id, error)

    def _quiet(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        """`call(...)`, or None when Redis cannot be reached (the next poll tries again)."""
        try:
            return call(*args, **kwargs)
        except REDIS_ERRORS as error:
            log.warning("redis unavailable: %s", error)
            return None

    def now(self) -> float:
        return time.monotonic() - self._t0

    def close(self) -> None:
        """Cancel the attempts still in flight, unless the run has a new supervisor: they are its now."""
        if not self.superseded.is_set():
            for attempt_id in list(self._flights):
                self.cancel(attempt_id)
        self.client.close()


def celery_executor_for(run_id: int, *, superseded: threading.Event | None = None) -> CeleryExecutor:
    """The executor a run's supervisor uses when a broker is configured: its actors as capacity."""
    config = selectors.run_config(run_id=run_id)
    return CeleryExecutor(run_id=run_id, capacity=config.actors, superseded=superseded)
