"""Warm starts from the web layer: demonstrations for some competitions (and the best attempts of earlier
runs), supervised fine-tuning of an LM on them (rl_core.warmstart), stored under
PRACTICUM_DATA_DIR/adapters/<name>/ with a manifest of what it was trained on (rl_core.adapters).

`warm_start_create` is the one entry point (`manage.py warmstart` calls it; a worker task could). It imports
torch only inside its body, so the web process may import this module. Steps: the competitions'
TaskInfos; a few grammar programs per competition run once in the sandbox, whose valid ones become the
earlier solutions of improve demonstrations; the earlier runs' best valid attempts on those competitions;
the policy (the embedded model is converted once into the supervisor's cache folder); SFT; an atomic save.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from webapp import storage
from webapp.competitions.models import Competition
from webapp.runs import selectors

Say = Callable[[str], None]
"""Receives one line of human progress."""


@dataclass(frozen=True)
class WarmStartRequest:
    """What to warm-start and how (validated by the caller: names, ids and counts)."""

    name: str
    """The folder name under PRACTICUM_DATA_DIR/adapters; must not exist yet."""
    competitions: Sequence[Competition]
    """The target competitions: grammar demonstrations are made for each."""
    run_ids: Sequence[int] = ()
    """Earlier runs whose best valid attempts on these competitions become demonstrations too."""
    demonstrations: int = 32
    """Grammar demonstrations in all, split evenly over the competitions."""
    epochs: int = 2
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


def warm_start_create(*, request: WarmStartRequest, say: Say, on_step: Any = None) -> dict[str, Any]:
    """Build the demonstrations, fine-tune, save; return {"adapter", "name", "demonstrations", "steps",
    "loss_first", "loss_last", "wall_s"}. `on_step(step, total, loss)` follows the training steps.

    Raises:
        FileExistsError: a warm start called `request.name` exists.
    """
    from rl_core.warmstart import describe, save_warm_start, warm_start_policy

    folder = selectors.warm_start_dir(name_or_path=request.name)
    if folder.exists():
        raise FileExistsError(f"A warm start called {request.name!r} exists already ({folder}).")
    tasks = task_infos(request.competitions)
    pools = grammar_pools(request, tasks, say)
    extra = past_demonstrations(request, {task.slug: task for task in tasks})
    say(f"Loading {request.model} ...")
    policy = load_policy(request)
    config = train_config(request)
    say(f"Fine-tuning on {request.demonstrations} grammar and {len(extra)} earlier-run demonstrations ...")
    demos, result = warm_start_policy(
        policy, tasks, demonstrations=request.demonstrations, pools=pools, extra=extra, config=config,
        progress=on_step,
    )  # fmt: skip
    manifest = describe(demos, result, policy=policy, config=config)
    save_warm_start(policy, folder, manifest | {"name": request.name, "run_ids": list(request.run_ids)})
    return {
        "adapter": str(folder),
        "name": request.name,
        "demonstrations": result.demonstrations,
        "steps": result.steps,
        "loss_first": result.loss_first,
        "loss_last": result.loss_last,
        "wall_s": round(result.wall_s, 3),
    }


def task_infos(competitions: Sequence[Competition]) -> list[Any]:
    """The competitions as a policy sees them (rl_core TaskInfo, features filled)."""
    from webapp.competitions.agent_inputs import competition_task_info

    return [competition_task_info(competition=c) for c in competitions]


def grammar_pools(request: WarmStartRequest, tasks: list[Any], say: Say) -> dict[str, list[Any]]:
    """slug -> the valid ones of `request.pool` grammar programs run once in the sandbox (their output and
    score are what improve demonstrations show)."""
    from rl_core.baselines import previous_solutions
    from rl_core.demonstrations import grammar_pool_responses
    from rl_core.executors import LocalExecutor
    from webapp.competitions.agent_inputs import competition_task_files

    if request.pool <= 0:
        return {}
    say(f"Running {request.pool} grammar programs per competition for improve demonstrations ...")
    files = {c.slug: competition_task_files(competition=c) for c in request.competitions}
    scratch = storage.fresh_dir(storage.data_root() / "warmstarts" / storage.safe_name(request.name))
    executor = LocalExecutor(files, capacity=2, scratch_root=scratch)
    try:
        responses = grammar_pool_responses(tasks, request.pool, seed=request.seed)
        pools = previous_solutions(executor, tasks, responses, prefix="pool")
    finally:
        executor.close()
        shutil.rmtree(scratch, ignore_errors=True)
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
    return imitation_demonstrations(past)


def load_policy(request: WarmStartRequest) -> Any:
    """A fresh LMPolicy on the base model (the embedded one converted into the supervisor's cache)."""
    from rl_core.policies.lm import LMPolicy, LMPolicyConfig
    from webapp.runs.supervisor import models_dir

    return LMPolicy(LMPolicyConfig(model=request.model, cache_dir=str(models_dir()), seed=request.seed))


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
