"""Warm starts from the web layer: what a warm start is asked to be (`WarmStartRequest`), where a run's
policy starts, and the checks of what a config's warm start names (another run, a stored adapter, the runs
to imitate) before a run is created (`warm_start_check`).

Warm starts are stored under PRACTICUM_DATA_DIR/adapters/<name>/ with a manifest of what they were trained
on (rl_core.warmstart.folders), so later runs can start from one by name. The library half of warm starts
(demonstrations, supervised fine-tuning, folders) is the rl_core.warmstart package; running the fine-tuning
is the workers' (workers.fine_tuning); `manage.py warmstart` reaches it through webapp.runs.dispatch. This
module never imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_core.checkpoint_files import latest_checkpoint
from rl_core.prompts import PromptStyle
from rl_core.run_spec import RunConfig
from rl_core.warmstart.folders import read_manifest, warm_start_source
from webapp import storage
from webapp.competitions.models import Competition
from webapp.runs import selectors
from webapp.runs.models import Run


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
    """Learning rate; None keeps rl_core.warmstart.fine_tune's default (LoRA) or 1e-5 (full)."""
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
    return ((read_manifest(folder) or {}).get("prompt") or {}).get("style")


def warm_start_model(name_or_path: str) -> str | None:
    """The model a stored warm start was trained from, per its manifest (None when there is none)."""
    if not name_or_path or name_or_path.startswith("run:"):
        return None
    try:
        manifest = read_manifest(selectors.warm_start_dir(name_or_path=name_or_path))
    except ValueError:
        return None  # a bad name: warm_start_check says so
    return (manifest or {}).get("base_model")


def run_warm_start_name(run_id: int) -> str:
    """The name under which a run's own fine-tuning is stored, for later runs to start from."""
    return f"run-{run_id}"
