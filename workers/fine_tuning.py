"""Supervised fine-tuning (SFT) of an LM on demonstrations before RL (rl_core.warmstart): the workers'
half of warm starts (the web half, the request and the checks, is webapp.runs.warmstarts).

Two ways to fine-tune, one pipeline (`fine_tune_and_save`): the demonstrations for some competitions
(GrammarPolicy programs, a few of them run once in the sandbox so that improve demonstrations show a real
earlier solution with its output and score; and the best valid attempts of earlier runs), SFT, an atomic
save under PRACTICUM_DATA_DIR/adapters/<name>/ with a manifest. `warm_start_create` is `manage.py
warmstart`'s (through webapp.runs.dispatch); `run_fine_tune` is a run's own warm-start phase
(``RunConfig.warm_start_demos``), which the driver (workers.driver) calls before RL and which reports every
step on the run's page (`services.run_warm_start_progress`: a progress bar and the loss curve).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rl_core.executors import LocalExecutor
from rl_core.run_spec import RunConfig
from rl_core.seed_programs import previous_solutions
from rl_core.warmstart.demonstrations import (
    PastAttempt,
    format_response,
    grammar_pool_responses,
    imitation_demonstrations,
)
from webapp import storage
from webapp.competitions.agent_inputs import competition_task_files, competition_task_info
from webapp.competitions.models import Competition
from webapp.runs import selectors, services
from webapp.runs.warmstarts import WarmStartRequest, run_warm_start_name
from webapp.storage import models_dir

Say = Callable[[str], None]
"""Receives one line of human progress."""
Step = Callable[[int, int, float], None]
"""Receives (step, total steps, loss) after each training step."""


def fine_tune_and_save(
    *,
    request: WarmStartRequest,
    policy: Any,
    tasks: list[Any],
    executor: Any,
    say: Say,
    on_step: Step | None = None,
) -> dict[str, Any]:
    """Build the demonstrations, fine-tune `policy` in place, save it as the warm start `request.name`;
    return the manifest. `executor` runs the grammar programs of improve demonstrations (nothing else may
    be in flight on it). Raises FileExistsError when the name is taken."""
    from rl_core.warmstart.fine_tune import (  # transformers: only here
        describe,
        save_warm_start,
        warm_start_policy,
    )

    folder = selectors.warm_start_dir(name_or_path=request.name)
    if folder.exists():
        raise FileExistsError(f"A warm start called {request.name!r} exists already ({folder}).")
    pools = grammar_pools(request, tasks, executor, say)
    extra = past_demonstrations(request, {task.slug: task for task in tasks})
    config = train_config(request)
    say(f"Fine-tuning on {request.demonstrations} grammar and {len(extra)} earlier-run demonstrations ...")
    demos, result = warm_start_policy(
        policy, tasks, demonstrations=request.demonstrations, pools=pools, extra=extra, config=config,
        progress=on_step,
    )  # fmt: skip
    manifest = describe(demos, result, policy=policy, config=config)
    manifest |= {"name": request.name, "run_ids": list(request.run_ids)}
    save_warm_start(policy, folder, manifest)
    return manifest | {"adapter": str(folder)}


def warm_start_create(*, request: WarmStartRequest, say: Say, on_step: Step | None = None) -> dict[str, Any]:
    """`manage.py warmstart`: fine-tune a fresh LM on a LocalExecutor of this machine; return {"adapter",
    "name", "demonstrations", "steps", "loss_first", "loss_last", "wall_s"}."""
    tasks = task_infos(request.competitions)
    say(f"Loading {request.model} ...")
    policy = load_policy(request)
    files = {c.slug: competition_task_files(competition=c) for c in request.competitions}
    scratch = storage.fresh_dir(storage.data_root() / "warmstarts" / storage.safe_name(request.name))
    executor = LocalExecutor(files, capacity=2, scratch_root=scratch)
    try:
        manifest = fine_tune_and_save(
            request=request, policy=policy, tasks=tasks, executor=executor, say=say, on_step=on_step
        )
    finally:
        executor.close()
        shutil.rmtree(scratch, ignore_errors=True)
    keys = ("adapter", "name", "demonstrations", "steps", "loss_first", "loss_last", "wall_s")
    return {key: manifest[key] for key in keys}


def run_fine_tune(
    *, run_id: int, config: RunConfig, policy: Any, tasks: list[Any], competitions: list[Competition],
    executor: Any,
) -> Path:  # fmt: skip
    """A run's warm-start phase: fine-tune `policy` in place on its demonstrations before RL, reporting
    each step on the run's page, and store it as `run_warm_start_name`; returns the adapter folder."""
    name = run_warm_start_name(run_id)
    request = WarmStartRequest(
        prompt_style=config.prompt_style,
        name=name, competitions=competitions, run_ids=config.imitate_runs,
        demonstrations=config.warm_start_demos, model=config.model,
        pool=3 if config.warm_start_demos else 0, seed=config.seed,
    )  # fmt: skip
    progress = WarmStartProgress(run_id, services.run_warm_start_progress)
    progress.phase("demonstrations")
    manifest = fine_tune_and_save(
        request=request, policy=policy, tasks=tasks, executor=executor, say=progress.say,
        on_step=progress.step,
    )  # fmt: skip
    progress.done(manifest)
    return Path(manifest["adapter"])


class WarmStartProgress:
    """What a run's page shows of its warm-start phase: {"status", "phase", "step", "total", "losses",
    "message", "adapter", "demonstrations", "wall_s"}, sent to `publish(run_id=, progress=)` as it moves."""

    def __init__(self, run_id: int, publish: Callable[..., Any]) -> None:
        self.run_id, self.publish = run_id, publish
        self.state: dict[str, Any] = {"status": "running", "phase": "", "step": 0, "total": 0, "losses": []}
        self.started = time.monotonic()

    def send(self, **changes: Any) -> None:
        self.state |= changes | {"wall_s": round(time.monotonic() - self.started, 1)}
        self.publish(run_id=self.run_id, progress=dict(self.state))

    def phase(self, name: str) -> None:
        self.send(phase=name)

    def say(self, message: str) -> None:
        self.send(message=message)

    def step(self, step: int, total: int, loss: float) -> None:
        self.send(phase="training", step=step, total=total, losses=[*self.state["losses"], round(loss, 5)])

    def done(self, manifest: dict[str, Any]) -> None:
        self.send(
            status="done", phase="done", adapter=manifest["name"], demonstrations=manifest["demonstrations"]
        )


# ------------------------------------------------------------------------------------------ parts


def task_infos(competitions: Sequence[Competition]) -> list[Any]:
    """The competitions as a policy sees them (rl_core TaskInfo, features filled)."""
    return [competition_task_info(competition=c) for c in competitions]


def grammar_pools(
    request: WarmStartRequest, tasks: list[Any], executor: Any, say: Say
) -> dict[str, list[Any]]:
    """slug -> the valid ones of `request.pool` grammar programs run once on `executor` (their output and
    score are what improve demonstrations show)."""
    if request.pool <= 0:
        return {}
    say(f"Running {request.pool} grammar programs per competition for improve demonstrations ...")
    responses = grammar_pool_responses(tasks, request.pool, seed=request.seed)
    pools = previous_solutions(executor, tasks, responses, prefix=f"pool-{request.name}")
    say(f"Valid earlier solutions: {', '.join(f'{t.slug} {len(pools.get(t.slug, []))}' for t in tasks)}")
    return pools


def past_demonstrations(request: WarmStartRequest, tasks: dict[str, Any]) -> list[Any]:
    """Self-imitation demonstrations from the earlier runs' best valid attempts on these competitions."""
    if not request.run_ids:
        return []
    attempts = selectors.runs_best_valid_attempts(
        run_ids=list(request.run_ids), per_competition=request.per_competition
    )
    past = [
        PastAttempt(
            task=tasks[a.competition.slug],
            response=format_response(a.plan, a.program),
            output=a.stdout_tail,
            score=float(a.score),
            source=f"run:{a.run_id}",
        )
        for a in attempts
        if a.competition.slug in tasks and a.program.strip()
    ]
    return imitation_demonstrations(past, style=request.prompt_style)


def load_policy(request: WarmStartRequest) -> Any:
    """A fresh LMPolicy on the base model (the embedded one converted into the supervisor's cache)."""
    from rl_core.policies.lm.config import LMPolicyConfig  # transformers: only when a run needs it
    from rl_core.policies.lm.policy import LMPolicy

    config = LMPolicyConfig(
        model=request.model, cache_dir=str(models_dir()), seed=request.seed, prompt_style=request.prompt_style
    )
    return LMPolicy(config)


def train_config(request: WarmStartRequest) -> Any:
    from rl_core.warmstart.fine_tune import WarmStartConfig  # transformers: only here

    lr = request.lr if request.lr is not None else (1e-5 if request.full else WarmStartConfig.lr)
    return WarmStartConfig(
        epochs=request.epochs,
        full=request.full,
        gradient_checkpointing=request.gradient_checkpointing,
        lr=lr,
        seed=request.seed,
    )
