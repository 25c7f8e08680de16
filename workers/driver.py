"""The run driver (a run's supervisor): builds a run's policy, learner and executor from its row, drives
rl_core's actor–learner loop, and persists every attempt and update through webapp's services.

Runs in the foreground (`manage.py train`, through webapp.runs.dispatch), in a thread of the web process
(the embedded mode `make demo` uses: workers.dispatch.ThreadDispatcher), or as a Celery task on the `gpu`
queue (workers.supervision). Imports torch through rl_core, so the web process loads it only in the
embedded mode, once a run starts (never at import: see tests/architecture).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, cast

from rl_core.checkpoint import warm_start
from rl_core.checkpoint_files import latest_checkpoint
from rl_core.evaluation import EVALUATION, Evaluation, evaluate
from rl_core.executors import Executor, LocalExecutor
from rl_core.final_grading import FINAL_PREFIX, Chosen, grade_on_hidden_answers
from rl_core.loop import run_loop
from rl_core.loop_config import LoopSummary
from rl_core.outcome import AttemptOutcome
from rl_core.policy import Policy, Sample, TaskInfo
from rl_core.run_configs import learner_for, lm_policy_config_fields, loop_config
from rl_core.run_spec import RunConfig
from rl_core.stops import RunCancelled, Superseded
from rl_core.warmstart.folders import warm_start_source
from webapp import storage
from webapp.competitions.agent_inputs import competition_task_files, competition_task_info
from webapp.competitions.models import Competition
from webapp.runs import selectors, services
from webapp.runs.models import Attempt, Run
from webapp.runs.warmstarts import run_warm_start_name
from webapp.storage import models_dir
from workers.fine_tuning import run_fine_tune
from workers.run_tasks import run_task_files

log = logging.getLogger(__name__)


def build_policy(config: RunConfig, cache_dir: Path, *, adapter: str | None = None) -> Policy:
    """The run's policy at version 0, where its `warm_start` says it starts: fresh, an earlier run's final
    policy, or (an LM) a stored warm start. `adapter` (a folder) overrides the LM's starting adapter: the
    warm start a run's own fine-tuning stored (workers.fine_tuning.run_fine_tune)."""
    policy = new_policy(config, cache_dir, adapter=adapter)
    if config.warm_start_run_id is not None:
        warm_start(policy, storage.run_checkpoints(config.warm_start_run_id))
        policy.version = 0
    return policy


def start_policy(
    run_id: int, config: RunConfig, tasks: list[TaskInfo], competitions: list[Competition],
    executor: Executor, *, resuming: bool,
) -> Policy:  # fmt: skip
    """The policy the loop starts (or resumes) with. A run that fine-tunes before RL does so now, unless it
    resumes from a checkpoint (which holds the tuned adapter) or its warm start was already stored (the
    supervisor died between fine-tuning and the first checkpoint)."""
    if not config.fine_tunes or resuming:
        return build_policy(config, models_dir())
    stored = selectors.warm_start_dir(name_or_path=run_warm_start_name(run_id))
    if stored.exists():
        return build_policy(config, models_dir(), adapter=str(stored))
    policy = build_policy(config, models_dir())
    run_fine_tune(
        run_id=run_id, config=config, policy=policy, tasks=tasks, competitions=competitions, executor=executor
    )
    return policy


def new_policy(config: RunConfig, cache_dir: Path, *, adapter: str | None = None) -> Policy:
    if config.policy == "grammar":
        from rl_core.policies.grammar import GrammarPolicy

        return GrammarPolicy()
    from rl_core.policies.lm.config import LMPolicyConfig
    from rl_core.policies.lm.policy import LMPolicy

    model, adapter_path = config.model, adapter
    if config.warm_start and config.warm_start_run_id is None:
        source = warm_start_source(selectors.warm_start_dir(name_or_path=config.warm_start))
        model, adapter_path = source.model or config.model, source.adapter_path
    fields = lm_policy_config_fields(config) | {"model": model, "adapter_path": adapter_path}
    return LMPolicy(LMPolicyConfig(**fields, cache_dir=str(cache_dir)))


def baseline_responses(config: RunConfig, tasks: list[TaskInfo]) -> dict[str, str] | None:
    """slug -> the baseline response to seed each improve pool with (`seed_baseline`): the user's
    `baseline_program`, or else the simplest grammar program of the competition."""
    if not config.seed_baseline:
        return None
    from rl_core.policies.grammar import simplest_program
    from rl_core.warmstart.demonstrations import format_response

    if config.baseline_program.strip():
        response = format_response("The baseline program given with the run.", config.baseline_program)
        return {task.slug: response for task in tasks}
    return {task.slug: simplest_program(task) for task in tasks}


def local_executor(
    run_id: int, config: RunConfig, competitions: list[Competition], scratch: Path
) -> Executor:
    """Attempts run in threads of this process, on the run's task files (workers.run_tasks): the validation
    splits for a validation run, whose final gradings alone run on the real competitions."""
    tasks = {c.slug: run_task_files(run_id=run_id, competition=c, config=config) for c in competitions}
    real = {c.slug: competition_task_files(competition=c) for c in competitions}
    return LocalExecutor(
        tasks, capacity=config.actors, scratch_root=scratch, reward=config.reward_config(),
        instrument=config.instrument, hidden_tasks=real,
    )  # fmt: skip


def instrumenting_executor(config: RunConfig, policy: Policy, executor: Executor) -> Executor:
    """`executor`, or with ``instrumenter="lm"`` `executor` behind the paper's instrumenter: the policy's
    frozen base model marks up each program before it is dispatched (rl_core.lm_instrumenting)."""
    if config.instrumenter != "lm":
        return executor
    from rl_core.lm_instrumenting import LMInstrumentingExecutor

    return LMInstrumentingExecutor(executor, cast(Any, policy).generate_frozen)  # an LMPolicy: RunConfig says


class PersistingObserver:
    """Persists and publishes each loop event; stops the loop once the run is cancelled or deleted
    (selectors.run_is_cancelled), or, before it writes anything, once `superseded` is set (another
    supervisor holds the run: see rl_core.stops.Superseded)."""

    def __init__(
        self, run_id: int, competitions: dict[str, Competition], superseded: threading.Event | None = None,
        *, answers: str = "hidden",
    ) -> None:  # fmt: skip
        self.run_id = run_id
        self.competitions = competitions
        self.answers = answers  # which answers grade the loop's attempts: the run's reward source
        self.superseded = superseded or threading.Event()
        self.t0 = time.monotonic()
        self.in_flight: set[str] = set()

    def on_attempt_started(self, attempt_id: str, sample: Sample, started_at: float) -> None:
        self.raise_if_superseded()
        self.raise_if_cancelled()
        services.attempt_start(
            run_id=self.run_id,
            key=attempt_id,
            competition=self.competitions[sample.prompt.task.slug],
            policy_version=sample.policy_version,
            sample_fields=sample_fields(sample) | {"answers": self.answers},
        )
        self.in_flight.add(attempt_id)

    def on_attempt_finished(
        self, attempt_id: str, sample: Sample, outcome: AttemptOutcome, finished_at: float, staleness: int
    ) -> None:
        self.raise_if_superseded()
        self.in_flight.discard(attempt_id)
        try:
            services.attempt_finish(run_id=self.run_id, key=attempt_id, outcome=outcome, staleness=staleness)
        except Attempt.DoesNotExist:
            raise RunCancelled() from None  # the run was deleted, and its attempts with it
        self.raise_if_cancelled()

    def on_update(self, version: int, metrics: dict[str, float]) -> None:
        self.raise_if_superseded()  # before the loop writes this version's checkpoint, too
        wall_s = time.monotonic() - self.t0
        services.learner_step_record(run_id=self.run_id, version=version, metrics=metrics, wall_s=wall_s)

    def raise_if_cancelled(self) -> None:
        if selectors.run_is_cancelled(run_id=self.run_id):
            raise RunCancelled()

    def raise_if_superseded(self) -> None:
        if self.superseded.is_set():
            raise Superseded()


def sample_fields(sample: Sample) -> dict[str, Any]:
    info = {k: v for k, v in sample.info.items() if isinstance(v, str | int | float | bool | dict | list)}
    return {
        "prompt_kind": prompt_kind(sample),
        "parent_key": parent_key(sample),
        "family": str(sample.info.get("family", ""))[:40],
        "info": info,
        "response": sample.response,
    }


def parent_key(sample: Sample) -> str:
    """The loop's id of the attempt an improve prompt's program came from; "" for a solve prompt."""
    previous = sample.prompt.previous
    return previous.attempt_id if previous is not None else ""


def prompt_kind(sample: Sample) -> str:
    """The stored prompt kind: solve or improve, and eval-solve or eval-improve in the final evaluation."""
    kind = sample.prompt.kind
    return f"{selectors.EVAL_PREFIX}{kind}" if sample.info.get(EVALUATION) else kind


def run_supervise(
    *, run_id: int, executor: Executor | None = None, observer_wrapper: Any = None,
    superseded: threading.Event | None = None,
) -> LoopSummary | None:  # fmt: skip
    """Run (or resume) a run to its end. Returns the loop's summary, or None if it was cancelled.

    `observer_wrapper(observer) -> observer` decorates the persisting observer (a progress bar, say).
    `superseded`, once set (by the lease's heartbeat: workers.supervision), stops the loop with Superseded,
    leaving the run's status and attempts alone; the executor should watch the same event."""
    config = selectors.run_config(run_id=run_id)
    competitions = selectors.run_competitions(run_id=run_id)
    root = storage.run_root(run_id)
    checkpoints = storage.run_checkpoints(run_id)
    checkpoints.mkdir(parents=True, exist_ok=True)
    observer = PersistingObserver(
        run_id, {c.slug: c for c in competitions}, superseded, answers=config.reward_source
    )
    outer = observer_wrapper(observer) if observer_wrapper else observer
    resuming = latest_checkpoint(checkpoints) is not None
    services.run_set_status(run_id=run_id, status=Run.Status.RUNNING)
    services.run_record_hardware(run_id=run_id, hardware=hardware(config))
    policy: Policy | None = None
    try:
        executor = executor or local_executor(run_id, config, competitions, root / "attempts")
        for competition in competitions:  # a validation split is made once, here, before any worker needs it
            run_task_files(run_id=run_id, competition=competition, config=config)
        tasks = [competition_task_info(competition=c) for c in competitions]
        policy = start_policy(run_id, config, tasks, competitions, executor, resuming=resuming)
        executor = instrumenting_executor(config, policy, executor)
        summary = run_loop(
            policy=policy,
            learner=learner_for(policy, config),
            executor=executor,
            tasks=tasks,
            config=loop_config(config),
            observer=outer,
            checkpoints=checkpoints,
            resume=checkpoints if resuming else None,
            baselines=baseline_responses(config, tasks),
        )
        evaluations: dict[str, Evaluation] = {}
        if config.final_evaluation:
            for task in tasks:
                evaluations[task.slug] = evaluate(policy, executor, task, seed=config.seed, observer=outer)
        chosen = chosen_programs(summary, evaluations, seed=config.seed)
        record_final(run_id, config, executor, tasks, chosen, policy.version)
    except RunCancelled:
        if executor is not None:
            abandon_in_flight(run_id, observer.in_flight, executor)
        return None
    except Superseded:
        raise  # not a failure: the run goes on under its new supervisor
    except Exception as error:
        log.exception("run %s failed", run_id)
        services.run_set_status(
            run_id=run_id, status=Run.Status.FAILED, error=f"{type(error).__name__}: {error}"
        )
        raise
    finally:
        if executor is not None:
            executor.close()
        getattr(policy, "close", lambda: None)()  # an LM's vLLM engine: its memory back to the process
        getattr(outer, "close", lambda: None)()
    services.run_set_status(run_id=run_id, status=Run.Status.FINISHED)
    return summary


def chosen_programs(
    summary: LoopSummary, evaluations: dict[str, Evaluation], *, seed: int
) -> dict[str, Chosen]:
    """slug -> the program the run stands by: the final evaluation's kept one where the run was evaluated
    (PAPER.md's protocol), else the loop's best; a competition with neither has none."""
    chosen = {slug: Chosen(best.attempt_id, best.response) for slug, best in summary.best_by_task.items()}
    for slug, result in evaluations.items():
        if result.best.valid:
            kept = "improve" if result.best is result.improve else "solve"
            chosen[slug] = Chosen(f"eval-{slug}-{seed}-{kept}", result.best_response)  # evaluate()'s ids
    return chosen


def record_final(
    run_id: int, config: RunConfig, executor: Executor, tasks: list[TaskInfo], chosen: dict[str, Chosen],
    version: int,
) -> None:  # fmt: skip
    """The run's result: a hidden-answer run's best score; a validation run's chosen programs graded once
    each on the hidden answers (rl_core.final_grading), each stored as a "final" attempt."""
    if config.reward_source != "validation":
        services.run_final_from_best(run_id=run_id)
        return
    by_slug = {task.slug: task for task in tasks}
    competitions = {c.slug: c for c in selectors.run_competitions(run_id=run_id)}
    for slug, grade in grade_on_hidden_answers(executor, by_slug, chosen, policy_version=version).items():
        services.final_grade_record(
            run_id=run_id, competition=competitions[slug], key=f"{FINAL_PREFIX}{slug}",
            parent_key=grade.chosen.attempt_id, response=grade.chosen.response, outcome=grade.outcome,
            policy_version=version,
        )  # fmt: skip


def hardware(config: RunConfig) -> str:
    """Where the run's policy computes: a language model on the GPU when there is one, else the CPU."""
    import torch

    if config.policy == "lm" and torch.cuda.is_available():
        return f"GPU ({torch.cuda.get_device_name(0)})"
    return f"CPU ({os.cpu_count()} cores)"


def abandon_in_flight(run_id: int, in_flight: set[str], executor: Executor) -> None:
    """Kill a cancelled run's attempts in flight and close their rows as `killed`; a deleted run's rows
    went with it, so there is nothing to close."""
    exists = selectors.run_get(run_id=run_id) is not None
    for key in list(in_flight):
        executor.cancel(key)
        if exists:
            services.attempt_abandon(run_id=run_id, key=key, status="killed", reason="The run was cancelled.")
