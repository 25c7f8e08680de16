"""What a sandbox worker does with one attempt: the body of the `practicum.execute_attempt` task.

One delivery of the task, in order:
  1. Skip it when the run is no longer active or the supervisor cancelled this attempt.
  2. Take the attempt's lease (one execution of an attempt key at a time, cluster-wide). A second delivery
     of the same program finds the lease held and leaves (the holder reports). A different program under
     the same key (a resumed supervisor re-sampled it) asks the holder to stop and waits for it.
  3. Reuse an existing result instead of running again: the Attempt row already finished with this very
     program, or the outcome file this program's execution wrote. It is pushed to the supervisor again.
  4. Count the execution (`starts`); past PRACTICUM_MAX_TRIES it is not run but recorded as `lost`.
  5. Run it in a fresh scratch dir through rl_core.environment.run_response, renewing the lease and
     watching for a cancel request meanwhile. A cancelled execution kills the sandbox's process tree
     (`kill_children`) and removes its scratch dir; nothing is reported. An execution that reaches the
     task's soft time limit (Celery raises SoftTimeLimitExceeded in it: the competition's limit plus the
     grading margin, so the program or its grading hung past the sandbox's own limit) has its sandbox
     killed and is recorded once as ``timeout``, Δt = that limit, not left to be re-run and then `lost`.
  6. Write the outcome file (webapp.storage), then push it onto the run's results list.

Steps 3 and 6 make the task safe to redeliver (acks_late and reject_on_worker_lost redeliver it whenever
its worker dies). The lease makes a worker's death visible to the supervisor within one lease period.
Killing the sandbox assumes the prefork (or solo) pool: the sandbox's processes are the only children of
the process running the task.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import redis
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from rl_core.environment import run_response
from rl_core.outcome import FIELDS, AttemptOutcome
from rl_core.reward import failure_reward
from webapp import storage
from webapp.competitions.models import Competition
from webapp.competitions.selectors import competition_get
from webapp.runs import selectors, services
from workers.coordination import REDIS_ERRORS, AttemptKeys, Heartbeat, Lease, results_list, shared_client
from workers.outcomes import lost_outcome, over_time_outcome, response_digest, unrunnable_outcome
from workers.run_tasks import run_task_files

log = logging.getLogger(__name__)

CLAIM_POLL_S = 0.2


@dataclass(frozen=True)
class AttemptOrder:
    """What the supervisor asks a worker to run: the task's keyword arguments."""

    run_id: int
    key: str
    slug: str
    response: str
    lease_s: float
    max_tries: int
    allow_gpu: bool = False
    """Routed to the `sandbox-gpu` queue: the sandbox binds /dev/nvidia*."""
    soft_limit_s: float | None = None
    """The Celery soft time limit the supervisor sent the task with (the message's, not a keyword argument):
    the Δt of an attempt that it stops."""
    lm_markup: str | None = None
    """The supervisor's LM instrumentation of the program (rl_core.instrument.lm_markup), or None for the
    AST rules. Untrusted until rl_core.instrument.accept_lm_markup has checked it here; refused, the rules'
    markers run (instrumentation "lm-fallback")."""
    on_hidden_answers: bool = False
    """Run on the real competition and grade on its hidden answers: a validation run's final grading (the
    run's other attempts run on its validation split: workers.run_tasks)."""

    @cached_property
    def digest(self) -> str:
        return response_digest(self.response)

    @cached_property
    def keys(self) -> AttemptKeys:
        return AttemptKeys(self.run_id, self.key, self.digest)

    @property
    def outcome_path(self) -> Path:
        return storage.attempt_outcome_path(self.run_id, self.key, self.digest)


def execute_attempt(order: AttemptOrder) -> str:
    """Deliver one attempt as the module docstring says. Returns what it did, for logs and tests:
    "cancelled", "busy" (another execution holds it), "superseded" (another took over while it ran),
    "reused", "lost", "timeout" (stopped at the task's soft time limit) or "ran"."""
    client = shared_client()
    if not selectors.run_is_active(run_id=order.run_id) or client.exists(order.keys.cancel):
        return "cancelled"
    lease = Lease(
        client, order.keys.lease, order.lease_s, value=f"{order.digest} {socket.gethostname()}:{os.getpid()}"
    )
    if not claim(client, lease, order):
        return "busy"
    try:
        return execute_claimed(client, lease, order)
    finally:
        with contextlib.suppress(*REDIS_ERRORS):
            lease.release()


def claim(client: redis.Redis, lease: Lease, order: AttemptOrder) -> bool:
    """Take the attempt's lease; wait up to two lease periods for an execution of another program to stop."""
    if lease.acquire():
        return True
    holder = str(client.get(order.keys.lease) or "").split(" ")[0]
    if holder in ("", order.digest):
        return False  # the same program is running elsewhere: it will report
    other = AttemptKeys(order.run_id, order.key, holder)
    client.set(other.cancel, "1", ex=settings.PRACTICUM_VISIBILITY_TIMEOUT_S)
    deadline = time.monotonic() + 2 * order.lease_s
    while time.monotonic() < deadline:
        time.sleep(CLAIM_POLL_S)
        if lease.acquire():
            return True
    client.delete(order.keys.sent)  # the supervisor sends it again once it notices
    return False


def execute_claimed(client: redis.Redis, lease: Lease, order: AttemptOrder) -> str:
    previous = previous_result(order)
    if previous is not None:
        push_result(client, order, previous)
        return "reused"
    starts = int(client.incr(order.keys.starts))
    client.expire(order.keys.starts, settings.PRACTICUM_VISIBILITY_TIMEOUT_S)
    if starts > 1:
        services.attempt_note_try(run_id=order.run_id, key=order.key, tries=starts)
    if starts > order.max_tries:
        reason = f"Lost: its worker died during each of its {order.max_tries} tries."
        record(client, order, {"outcome": lost_outcome(order.response, reason).to_dict()})
        return "lost"
    return run_and_record(client, lease, order)


def run_and_record(client: redis.Redis, lease: Lease, order: AttemptOrder) -> str:
    work_dir = storage.fresh_dir(storage.attempt_work_dir(order.run_id, order.key))
    watch = CancelWatch(client, order.keys.cancel)
    started, done = time.monotonic(), "ran"
    with Heartbeat(lease, order.lease_s / 4, on_beat=watch.check, on_lost=watch.supersede):
        try:
            outcome, exec_s = run_in_sandbox(order, work_dir)
        except SoftTimeLimitExceeded:
            exec_s, done = time.monotonic() - started, "timeout"
            outcome = over_time_limit(order, exec_s)
    if watch.superseded:
        return "superseded"  # another execution owns the scratch dir now, and will report
    if watch.cancelled or watch.requested():
        storage.remove_tree(work_dir)
        return "cancelled"
    record(client, order, {"outcome": outcome.to_dict(), "exec_s": exec_s})
    return done


def run_in_sandbox(order: AttemptOrder, work_dir: Path) -> tuple[AttemptOutcome, float]:
    """The attempt's AttemptOutcome: run_response with the run's settings on the run's task files (the
    validation split, for a validation run's attempts but its final gradings), or `unrunnable_outcome` when
    this worker cannot see the competition's files (the reason names the folder it looked in); and the seconds
    run_response took (what the LocalExecutor would spend too; the rest is the Celery path's overhead)."""
    config = selectors.run_config(run_id=order.run_id)
    reward = config.reward_config()
    competition = competition_get(slug=order.slug)
    if competition is None:
        raise Competition.DoesNotExist(f"No competition {order.slug!r}.")
    try:
        task = run_task_files(
            run_id=order.run_id,
            competition=competition,
            config=config,
            on_hidden_answers=order.on_hidden_answers,
        )
    except FileNotFoundError as error:
        return unrunnable_outcome(order.response, str(error), failure_reward(reward)), 0.0
    started = time.monotonic()
    outcome = run_response(
        order.response, task, work_dir, instrument=config.instrument, reward=reward,
        allow_gpu=order.allow_gpu, lm_markup=order.lm_markup,
    )  # fmt: skip
    return outcome, time.monotonic() - started


def over_time_limit(order: AttemptOrder, elapsed_s: float) -> AttemptOutcome:
    """The `timeout` outcome of an execution stopped by the task's soft time limit (`elapsed_s` stands in
    for the limit when the message named none), once its sandbox is killed. The sandbox's own cleanup has
    usually done that while the exception passed through it; killing what is left makes sure."""
    killed = kill_children()
    limit_s = order.soft_limit_s or round(elapsed_s, 3)
    log.warning("attempt %s of run %s: %g s time limit; killed %s", order.key, order.run_id, limit_s, killed)
    reason = (
        f"Timed out: the worker stopped this attempt at its task's {limit_s:g} s time limit (Celery's soft "
        "limit), before the program and its grading had finished."
    )
    reward = failure_reward(selectors.run_config(run_id=order.run_id).reward_config())
    return over_time_outcome(order.response, reason, reward, limit_s)


def previous_result(order: AttemptOrder) -> dict[str, Any] | None:
    """A result this very program already has: its finished Attempt row, else its outcome file."""
    row = selectors.attempt_get_by_key(run_id=order.run_id, key=order.key)
    if row is not None and row.is_finished and row.response == order.response:
        return {"outcome": AttemptOutcome.from_dict({name: getattr(row, name) for name in FIELDS}).to_dict()}
    return storage.read_json(order.outcome_path)


def record(client: redis.Redis, order: AttemptOrder, result: dict[str, Any]) -> None:
    """Write the outcome file, then push the result to the supervisor."""
    payload = {"key": order.key, "digest": order.digest, "worker": socket.gethostname(), **result}
    storage.write_json_atomic(order.outcome_path, payload)
    push_result(client, order, payload)


def push_result(client: redis.Redis, order: AttemptOrder, payload: dict[str, Any]) -> None:
    """RPUSH the result onto the run's list, retrying through a Redis outage for a few lease periods;
    after that the supervisor still finds the outcome file when it checks on the attempt."""
    payload = {"key": order.key, "digest": order.digest, **payload}
    name, deadline = results_list(order.run_id), time.monotonic() + 3 * order.lease_s
    while True:
        try:
            client.rpush(name, json.dumps(payload))
            client.expire(name, settings.PRACTICUM_VISIBILITY_TIMEOUT_S)
            return
        except REDIS_ERRORS as error:
            if time.monotonic() > deadline:
                log.warning("result of %s not pushed (%s); it is in %s", order.key, error, order.outcome_path)
                return
            time.sleep(0.5)


class CancelWatch:
    """Called on each heartbeat: once the supervisor sets the attempt's cancel key, kill the sandbox."""

    def __init__(self, client: redis.Redis, cancel_key: str) -> None:
        self.client, self.cancel_key = client, cancel_key
        self.cancelled = self.superseded = False

    def requested(self) -> bool:
        """Whether the cancel key is set; False when Redis cannot say (a result nobody wants is ignored)."""
        try:
            return bool(self.client.exists(self.cancel_key))
        except REDIS_ERRORS:
            return False

    def check(self) -> None:
        if not self.cancelled and self.requested():
            self.cancelled = True
            log.warning("attempt cancelled: killed sandbox processes %s", kill_children())

    def supersede(self) -> None:
        """Another execution took the lease over (this one was presumed dead): stop, leave it the rest."""
        if not self.superseded:
            self.superseded = True
            log.warning("attempt taken over elsewhere: killed sandbox processes %s", kill_children())


def kill_children(parent: int | None = None) -> list[int]:
    """SIGKILL the process group of every child of `parent` (this process by default); returns their pids.

    The sandbox starts each program in its own session (so its own process group), under bwrap as the
    init of a PID namespace: killing that group ends every process of the attempt.
    """
    parent = os.getpid() if parent is None else parent
    children = [pid for pid in _pids() if _parent_of(pid) == parent]
    for pid in children:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return children


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the command name may contain spaces and parentheses
