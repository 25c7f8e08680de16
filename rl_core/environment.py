"""One attempt end to end: parse the response, instrument the program, run it in the sandbox, grade the
submission against the hidden answers, and compute the reward (DESIGN.md §1, §4).

The hidden answers never enter the sandbox: the program sees only ``task.public_dir`` (at ``./input``); the
grader reads ``task.answers_path`` here, after the program has ended. A submission is graded only when the
program exited with status ``ok``: a crash, timeout or memory kill is a failure even if it left a file.
Δt (``duration_s``) is the program's wall-clock time, and the time limit itself for a timeout.

Call `run_response` with a policy's raw response (the loop, the executors) or `run_program` with a program
(``manage.py execute``). Both are pure apart from the files written under ``work_dir``.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_core.grading import Grade, GradingSpec, grade_submission
from rl_core.instrument import (
    Instrumented,
    accept_lm_markup,
    credited_stages,
    instrument,
    lm_instrument,
)
from rl_core.metrics import get_metric
from rl_core.outcome import AttemptOutcome
from rl_core.responses import parse_response
from rl_core.reward import RewardConfig, compute_reward
from rl_core.sandbox import ExecutionRequest, ExecutionResult, execute, isolation_level

DEFAULT_REWARD = RewardConfig()


@dataclass(frozen=True)
class TaskFiles:
    """A competition as an attempt needs it.

    Attributes:
        slug: the competition's slug.
        public_dir: the public files (train.csv, test.csv, ...), shown read-only at ``./input``.
        answers_path: the hidden answers CSV; must not be inside `public_dir`.
        grading: metric, id column and target columns.
        time_limit_s: default wall-clock limit of an attempt, seconds.
        memory_mb: default address-space limit of an attempt, MiB.
        baseline_score: the trivial baseline's score (normalized reward), None if unknown.
        leaderboard: leaderboard scores (percentile reward), None if there is none.
    """

    slug: str
    public_dir: Path
    answers_path: Path
    grading: GradingSpec
    time_limit_s: float
    memory_mb: int
    baseline_score: float | None
    leaderboard: tuple[float, ...] | None = None


def _reward(task: TaskFiles, grade: Grade, stages: int, config: RewardConfig) -> float:
    metric = get_metric(task.grading.metric)
    return compute_reward(
        valid=grade.valid,
        score=grade.score,
        stages_reached=stages,
        config=config,
        higher_is_better=metric.higher_is_better,
        baseline_score=task.baseline_score,
        perfect_score=metric.perfect,
        leaderboard=task.leaderboard,
    )


def confirmed(stages: tuple[str, ...], result: ExecutionResult) -> tuple[str, ...]:
    """The marked stages that the evidence gathered outside the program agrees with (a program can write a
    marker line, not what the kernel saw it do):

    - data_loaded only when the sandbox saw the program open or read a public file (`inputs_read`; where
      reads could not be observed, None, the marker alone counts);
    - submission_written only when the sandbox found ``submission/submission.csv`` as a regular file.

    The other stages rest on the marker function's checks inside the program (marker_function).

    >>> nothing_done = ExecutionResult("ok", 0, 1.0, "", "", None, "bwrap", inputs_read=())
    >>> confirmed(("imports_done", "data_loaded", "submission_written"), nothing_done)
    ('imports_done',)
    """
    outside = {
        "data_loaded": result.inputs_read is None or bool(result.inputs_read),
        "submission_written": result.submission_path is not None,
    }
    return tuple(s for s in stages if outside.get(s, True))


def _grade(result: ExecutionResult, task: TaskFiles) -> Grade:
    if result.status != "ok":
        return Grade(valid=False, score=None, error=f"The program did not finish (status {result.status}).")
    if result.submission_path is None:
        return Grade(valid=False, score=None, error="The program wrote no submission/submission.csv.")
    return grade_submission(result.submission_path, task.answers_path, task.grading)


def _instrumented(
    program: str, nonce: str, enabled: bool, generate: Callable[[str], str] | None, markup: str | None
) -> Instrumented:
    """The program that runs: uninstrumented, marked by an LM here (`generate`) or elsewhere (`markup`,
    checked here), or by the AST rules."""
    if not enabled:
        return Instrumented(program, (), "none")
    if generate is not None:
        return lm_instrument(program, nonce, generate)
    return accept_lm_markup(program, markup, nonce) if markup is not None else instrument(program, nonce)


def run_program(
    program: str,
    task: TaskFiles,
    work_dir: Path,
    *,
    instrument: bool = True,
    reward: RewardConfig = DEFAULT_REWARD,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
    nonce: str | None = None,
    plan: str = "",
    lm_generate: Callable[[str], str] | None = None,
    lm_markup: str | None = None,
    allow_gpu: bool = False,
    cancel: threading.Event | None = None,
) -> AttemptOutcome:
    """Instrument `program`, run it against `task`'s public files in `work_dir`, grade it and reward it.

    Args:
        work_dir: a fresh scratch dir under PRACTICUM_DATA_DIR (kept: program.py, submission/, output files).
        timeout_s, memory_mb: override the task's limits.
        nonce: the marker nonce (random when None; tests pass one).
        plan: the response's prose plan, recorded on the outcome.
        lm_generate: a frozen LM (prompt -> completion) to insert the markers instead of the AST rules;
            its output is kept only when it passes `rl_core.instrument.lm_instrument`'s check.
        lm_markup: the markers an LM elsewhere inserted (`rl_core.instrument.lm_markup`, shipped with the
            attempt by the run's supervisor): used only if `rl_core.instrument.accept_lm_markup` accepts it
            here, else the AST rules' markers run (instrumentation ``"lm-fallback"``).
        allow_gpu: bind the NVIDIA device nodes into the sandbox (GPU sandbox workers only).
        cancel: set it from another thread to kill the program now (status ``killed``).
    """
    nonce = nonce or secrets.token_hex(8)
    instrumented = _instrumented(program, nonce, instrument, lm_generate, lm_markup)
    result = execute(
        ExecutionRequest(
            program=instrumented.program,
            input_dir=task.public_dir,
            work_dir=work_dir,
            timeout_s=timeout_s if timeout_s is not None else task.time_limit_s,
            memory_mb=memory_mb if memory_mb is not None else task.memory_mb,
            allow_gpu=allow_gpu,
            cancel=cancel,
            marker_nonce=nonce if instrumented.inserted else None,
        )
    )
    stages = confirmed(credited_stages(result.marker_lines, nonce, instrumented.inserted), result)
    grade = _grade(result, task)
    return AttemptOutcome(
        status=result.status,
        exit_code=result.exit_code,
        duration_s=result.duration_s,
        stages=stages,
        valid=grade.valid,
        score=grade.score,
        grade_error=grade.error,
        reward=_reward(task, grade, len(stages), reward),
        isolation=result.isolation,
        stdout_tail=result.stdout,
        stderr_tail=result.stderr,
        plan=plan,
        program=program,
        instrumented_program=instrumented.program,
        instrumentation=instrumented.method,
    )


def run_response(response: str, task: TaskFiles, work_dir: Path, **options: Any) -> AttemptOutcome:
    """Like `run_program`, for a policy's raw response (a plan, then one fenced Python block).

    A response without exactly one Python block runs nothing: status ``parse_error``, the failure reward.
    """
    parsed = parse_response(response)
    if parsed.code is None:
        return _parse_failure(parsed.plan, parsed.error or "unparseable response", task, options)
    return run_program(parsed.code, task, work_dir, plan=parsed.plan, **options)


def _parse_failure(plan: str, error: str, task: TaskFiles, options: dict[str, Any]) -> AttemptOutcome:
    config = options.get("reward", DEFAULT_REWARD)
    return AttemptOutcome(
        status="parse_error",
        exit_code=None,
        duration_s=0.0,
        stages=(),
        valid=False,
        score=None,
        grade_error=error,
        reward=_reward(task, Grade(False, None, error), 0, config),
        isolation=isolation_level(),
        plan=plan,
    )
