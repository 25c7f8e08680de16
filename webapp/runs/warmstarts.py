"""Warm starts from the web layer: where a run's policy starts, and supervised fine-tuning (SFT) of an LM on
demonstrations before RL (rl_core.warmstart), stored under PRACTICUM_DATA_DIR/adapters/<name>/ with a
manifest of what it was trained on (rl_core.adapters), so later runs can start from it by name.

Two ways to fine-tune, one pipeline (`fine_tune_and_save`): the demonstrations for some competitions
(GrammarPolicy programs, a few of them run once in the sandbox so that improve demonstrations show a real
earlier solution with its output and score; and the best valid attempts of earlier runs), SFT, an atomic
save. `warm_start_create` is `manage.py warmstart`'s entry point; `run_fine_tune` is a run's own warm-start
phase (``RunConfig.warm_start_demos``), which the supervisor calls before RL and which reports every step on
the run's page (`services.run_warm_start_progress`: a progress bar and the loss curve).

`warm_start_check` validates what a config's warm start names (another run, a stored adapter, the runs to
imitate) before a run is created. This module imports torch only inside function bodies, so the web
process may import it.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_core.adapters import warm_start_source
from rl_core.checkpoint import latest_checkpoint
from rl_core.prompts import PromptStyle
from webapp import storage
from webapp.competitions.models import Competition
from webapp.runs import selectors
from webapp.runs.config import RunConfig
from webapp.runs.models import Run

Say = Callable[[str], None]
"""Receives one line of human progress."""
Step = Callable[[int, int, float], None]
"""Receives (step, total steps, loss) after each training step."""


@dataclass(frozen=True)
class WarmStartRequest:
    """What to warm-start and how (validated by the caller: names, ids and counts)."""

    name: str
    """The folder name under PRACTICUM_DATA_DIR/adapters; must not exist yet."""
    competitions: Sequence[Competition]
    """The target competitions: grammar demonstrations are made for each."""
    run_ids: Sequence[int] = ()
    """Earlier runs whose best valid attempts on these competitions become demonstrations too."""
    demonstrations: int = 48
    """Grammar demonstrations in all, split evenly over the competitions (48 x 3 epochs: about 20 minutes
    with SmolLM2-135M on 2 CPU cores)."""
    epochs: int = 3
    """Passes over the demonstrations."""
    full: bool = False
    """Fine-tune every weight (a merged model is stored) instead of a LoRA adapter."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass: about half the memory, about 40% more time."""
    model: str = "smollm2-135m"
    """The base model: the embedded name, a local folder, or a cached Hugging Face name."""
    pool: int = 3
    """Grammar programs run per competition as earlier solutions of improve demonstrations (0: none)."""
    per_competition: int = 8
    """The most attempts taken per earlier run and competition, best first."""
    lr: float | None = None
    """Learning rate; None keeps rl_core.warmstart's default (LoRA) or 1e-5 (full)."""
    seed: int = 0
    """Seeds the adapters' initialisation, the grammar draws and the minibatch order."""
    prompt_style: PromptStyle = "compact"
    """The prompt style (rl_core.prompts) the demonstrations are written in; runs must use the same."""


# ------------------------------------------------------------------------------------------ checks


def warm_start_check(*, config: RunConfig, owner: Any) -> Run | None:
    """Check what `config`'s warm start and `imitate_runs` name, for a run of `owner` (None: the operator,
    who sees every run). Returns the run it starts from (``warm_start = "run:ID"``), or None.

    Raises:
        ValueError: one sentence naming the field and what is wrong.
    """
    for run_id in config.imitate_runs:
        if visible_run(run_id, owner) is None:
            raise ValueError(
                f"config: imitate_runs names run {run_id}, which does not exist or is not yours."
            )
    if not config.warm_start:
        return None
    if config.warm_start_run_id is not None:
        return check_source_run(config, owner)
    check_stored_warm_start(config, owner)
    return None


def visible_run(run_id: int, owner: Any) -> Run | None:
    runs = Run.objects.all() if owner is None else selectors.runs_visible_to(user=owner)
    return runs.filter(id=run_id).first()


def check_source_run(config: RunConfig, owner: Any) -> Run:
    """The earlier run a config starts from: visible, of the same policy and model, with a checkpoint."""
    run_id = config.warm_start_run_id
    source = visible_run(run_id, owner) if run_id is not None else None
    if source is None:
        raise ValueError(f"config: warm_start names run {run_id}, which does not exist or is not yours.")
    theirs = RunConfig.from_dict(source.config)
    if (theirs.policy, theirs.model if theirs.policy == "lm" else "") != (
        config.policy,
        config.model if config.policy == "lm" else "",
    ):
        raise ValueError(
            f"config: warm_start run {run_id} trained a {theirs.policy} policy"
            f"{f' on {theirs.model!r}' if theirs.policy == 'lm' else ''}; this run needs the same."
        )
    if latest_checkpoint(storage.run_checkpoints(source.id)) is None:
        raise ValueError(f"config: warm_start run {run_id} has no checkpoint to start from yet.")
    return source


def check_stored_warm_start(config: RunConfig, owner: Any) -> None:
    """A stored warm start must exist, be one the owner may see (trained only on competitions they can
    see; a folder path is the operator's alone) and, for an adapter, adapt the run's model."""
    try:
        folder = selectors.warm_start_dir(name_or_path=config.warm_start)
        source = warm_start_source(folder)
    except (ValueError, FileNotFoundError) as error:
        raise ValueError(f"config: warm_start: {error}") from None
    visible = {w["path"] for w in selectors.warm_starts_visible_to(user=owner)}
    if owner is not None and str(folder) not in visible:
        raise ValueError(f"config: warm_start: {config.warm_start!r} is not a warm start you may use.")
    if source.adapter_path and source.base_model and source.base_model != config.model:
        raise ValueError(
            f"config: warm_start {config.warm_start!r} adapts {source.base_model!r}, "
            f"not the run's model {config.model!r}."
        )
    style = warm_start_prompt_style(folder)
    if style and style != config.prompt_style:
        raise ValueError(
            f"config: warm_start {config.warm_start!r} learned {style} prompts; "
            f"set prompt_style to {style!r}."
        )


def warm_start_prompt_style(folder: Path) -> str | None:
    """The prompt style a stored warm start was trained in (None for one that does not say)."""
    from rl_core.adapters import read_manifest

    return ((read_manifest(folder) or {}).get("prompt") or {}).get("style")


def warm_start_model(name_or_path: str) -> str | None:
    """The model a stored warm start was trained from, per its manifest (None when there is none)."""
    from rl_core.adapters import read_manifest

    if not name_or_path or name_or_path.startswith("run:"):
        return None
    try:
        manifest = read_manifest(selectors.warm_start_dir(name_or_path=name_or_path))
    except ValueError:
        return None  # a bad name: warm_start_check says so
    return (manifest or {}).get("base_model")


# ------------------------------------------------------------------------------------------ the pipeline


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
    from rl_core.warmstart import describe, save_warm_start, warm_start_policy

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
    from rl_core.executors import LocalExecutor

    tasks = task_infos(request.competitions)
    say(f"Loading {request.model} ...")
    policy = load_policy(request)
    files = {c.slug: competition_task_files(c) for c in request.competitions}
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


def run_warm_start_name(run_id: int) -> str:
    """The name under which a run's own fine-tuning is stored, for later runs to start from."""
    return f"run-{run_id}"


def run_fine_tune(
    *, run_id: int, config: RunConfig, policy: Any, tasks: list[Any], competitions: list[Competition],
    executor: Any,
) -> Path:  # fmt: skip
    """A run's warm-start phase: fine-tune `policy` in place on its demonstrations before RL, reporting
    each step on the run's page, and store it as `run_warm_start_name`; returns the adapter folder."""
    from webapp.runs import services

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
    from webapp.competitions.agent_inputs import competition_task_info

    return [competition_task_info(competition=c) for c in competitions]


def competition_task_files(competition: Competition) -> Any:
    from webapp.competitions.agent_inputs import competition_task_files as task_files

    return task_files(competition=competition)


def grammar_pools(
    request: WarmStartRequest, tasks: list[Any], executor: Any, say: Say
) -> dict[str, list[Any]]:
    """slug -> the valid ones of `request.pool` grammar programs run once on `executor` (their output and
    score are what improve demonstrations show)."""
    from rl_core.baselines import previous_solutions
    from rl_core.demonstrations import grammar_pool_responses

    if request.pool <= 0:
        return {}
    say(f"Running {request.pool} grammar programs per competition for improve demonstrations ...")
    responses = grammar_pool_responses(tasks, request.pool, seed=request.seed)
    pools = previous_solutions(executor, tasks, responses, prefix=f"pool-{request.name}")
    say(f"Valid earlier solutions: {', '.join(f'{t.slug} {len(pools.get(t.slug, []))}' for t in tasks)}")
    return pools


def past_demonstrations(request: WarmStartRequest, tasks: dict[str, Any]) -> list[Any]:
    """Self-imitation demonstrations from the earlier runs' best valid attempts on these competitions."""
    from rl_core.demonstrations import PastAttempt, format_response, imitation_demonstrations

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
    from rl_core.policies.lm import LMPolicy, LMPolicyConfig
    from webapp.runs.supervisor import models_dir

    config = LMPolicyConfig(
        model=request.model, cache_dir=str(models_dir()), seed=request.seed, prompt_style=request.prompt_style
    )
    return LMPolicy(config)


def train_config(request: WarmStartRequest) -> Any:
    from rl_core.warmstart import WarmStartConfig

    lr = request.lr if request.lr is not None else (1e-5 if request.full else WarmStartConfig.lr)
    return WarmStartConfig(
        epochs=request.epochs,
        full=request.full,
        gradient_checkpointing=request.gradient_checkpointing,
        lr=lr,
        seed=request.seed,
    )
