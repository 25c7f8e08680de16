"""Supervised fine-tuning (SFT) of an LMPolicy on demonstrations, before RL: the warm start itself.

Measured, a cold SmolLM2-135M writes no valid program (DESIGN.md §3), so RL alone has no signal to learn
from; a warm start first teaches it the response format and the programs of `warmstart.demonstrations`.

The loss is the mean over all response tokens of a minibatch of -log π(token | prompt, earlier tokens),
under the policy's own distribution π = softmax(logits / τ) (`LMPolicy.token_logprobs`) and its own
tokenization (`LMPolicy.prompt_ids`, `LMPolicy.response_ids`), so SFT and RL see identical token sequences.
Prompt tokens are context only. AdamW over the LoRA matrices, or over every weight with
`WarmStartConfig.full`; shuffled minibatches; gradient-norm clipping; a few epochs; `fine_tune` calls a
progress callback with (step, total steps, loss) after each step, for a progress bar and a loss curve.

`save_warm_start` writes a folder: the adapter (`LMPolicy.save_adapter`; a later run loads it with
``LMPolicyConfig.adapter_path``) or, after full fine-tuning, the merged model under ``model/`` (a later
run loads it as its ``model``), and `MANIFEST_FILE`: what it was trained on (competitions, demonstrations
by source and prompt kind, steps, losses, base model, prompt settings, created_at). It appears atomically;
`warmstart.folders` reads and lists such folders without torch.

`warm_start_policy` is the one call a script or benchmark needs: demonstrations for some tasks, SFT, result.
Not done: learning-rate schedules, packing, held-out evaluation; demonstrations whose response is longer
than the policy's `max_new_tokens` are skipped (the policy could never write them).
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from rl_core.policies.lm.policy import LMPolicy
from rl_core.policies.lm.weights import build_once, save_merged_model
from rl_core.policy import PreviousSolution, Sample, TaskInfo
from rl_core.warmstart.demonstrations import Demonstration, grammar_demonstrations
from rl_core.warmstart.folders import FULL_MODEL_FOLDER, MANIFEST_FILE

Progress = Callable[[int, int, float], None]
"""Called after each optimizer step with (step, total steps, minibatch loss); steps count from 1."""
Encoded = tuple[list[int], list[int]]
"""A demonstration as token ids: (prompt ids, response ids)."""


@dataclass(frozen=True)
class WarmStartConfig:
    """How a warm start trains. The defaults suit SmolLM2-135M with LoRA on a CPU."""

    epochs: int = 3
    """Passes over the demonstrations."""
    minibatch: int = 1
    """Demonstrations per optimizer step. Memory grows with it: SmolLM2-135M on one ~2,300-token
    demonstration peaks near 7 GB without gradient checkpointing; one also needs no padding."""
    lr: float = 1e-3
    """AdamW learning rate (full fine-tuning wants ~1e-5). Measured on SmolLM2-135M (bench/lm_valid_rate.py):
    48 demonstrations x 3 epochs at 1e-3 -> half the sampled programs valid; 8 x 2 at 3e-4 -> none."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Gradient-norm clipping threshold."""
    full: bool = False
    """Train every weight of the model, not only the LoRA matrices."""
    gradient_checkpointing: bool = False
    """Recompute each layer's activations in the backward pass: about half the peak memory (3.3 GB for the
    example above), about 40% more time. Transformers checkpoints only in training mode, so the model is in
    training mode while it trains (dropout, where a model has any, is then active)."""
    seed: int = 0
    """Seeds the minibatch order (and, in `warm_start_policy`, the grammar demonstrations)."""


@dataclass(frozen=True)
class WarmStartResult:
    """What `fine_tune` did. `losses` has one entry per step: the minibatch's mean token NLL, in nats."""

    steps: int
    losses: tuple[float, ...]
    demonstrations: int  # demonstrations trained on
    skipped: int  # demonstrations left out for being longer than max_new_tokens
    wall_s: float

    @property
    def loss_first(self) -> float:
        return self.losses[0] if self.losses else math.nan

    @property
    def loss_last(self) -> float:
        return self.losses[-1] if self.losses else math.nan


def encode(policy: LMPolicy, demonstrations: Sequence[Demonstration]) -> list[Encoded]:
    """Each demonstration as (prompt ids, response ids), tokenized exactly as the policy scores samples."""
    encoded = []
    for demonstration in demonstrations:
        sample = Sample(demonstration.prompt, demonstration.response, (), policy.version)
        encoded.append((policy.prompt_ids(demonstration.prompt), policy.response_ids(sample)))
    return encoded


def batch_loss(policy: LMPolicy, batch: Sequence[Encoded]) -> torch.Tensor:
    """() mean over the batch's response tokens of -log π(token | prompt, earlier tokens)."""
    logprobs, mask = policy.token_logprobs([p for p, _ in batch], [r for _, r in batch])
    return -logprobs.sum() / mask.sum().clamp(min=1)


@torch.no_grad()
def demonstration_loss(policy: LMPolicy, demonstrations: Sequence[Demonstration], *, batch: int = 2) -> float:
    """The mean token NLL of the demonstrations' responses under π now (every token weighs the same)."""
    encoded = encode(policy, demonstrations)
    total, tokens = 0.0, 0
    for start in range(0, len(encoded), batch):
        chunk = encoded[start : start + batch]
        count = sum(len(response) for _, response in chunk)
        total += float(batch_loss(policy, chunk)) * count
        tokens += count
    return total / max(tokens, 1)


def trainable(policy: LMPolicy, *, full: bool) -> list[torch.nn.Parameter]:
    """The tensors SFT updates: the LoRA matrices, or with `full` every weight (switched to trainable)."""
    if not full:
        return policy.parameters()
    for parameter in policy.model.parameters():
        parameter.requires_grad_(True)
    return [p for p in policy.model.parameters() if p.requires_grad]


def fine_tune(
    policy: LMPolicy,
    demonstrations: Sequence[Demonstration],
    config: WarmStartConfig | None = None,
    *,
    progress: Progress | None = None,
) -> WarmStartResult:
    """Supervised fine-tuning of `policy` on `demonstrations` (see the module docstring).

    Call this before RL, on a fresh policy. Afterwards only the LoRA matrices are trainable again, even
    after full fine-tuning; `policy.version` is unchanged.
    """
    config = config or WarmStartConfig()
    started = time.perf_counter()
    encoded = [e for e in encode(policy, demonstrations) if len(e[1]) <= policy.config.max_new_tokens]
    if not encoded:
        raise ValueError("fine_tune needs at least one demonstration no longer than max_new_tokens.")
    parameters = trainable(policy, full=config.full)
    optimizer = torch.optim.AdamW(parameters, lr=config.lr, weight_decay=config.weight_decay)
    total = config.epochs * math.ceil(len(encoded) / config.minibatch)
    losses: list[float] = []
    try:
        with policy.activation_checkpointing(enabled=config.gradient_checkpointing):
            for batch in minibatches(encoded, config):
                loss = batch_loss(policy, batch)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(parameters, config.max_grad_norm)
                optimizer.step()
                losses.append(float(loss.detach()))
                if progress is not None:
                    progress(len(losses), total, losses[-1])
    finally:
        _freeze_base(policy)
    skipped = len(demonstrations) - len(encoded)
    return WarmStartResult(len(losses), tuple(losses), len(encoded), skipped, time.perf_counter() - started)


def minibatches(encoded: Sequence[Encoded], config: WarmStartConfig) -> Iterator[list[Encoded]]:
    """`config.epochs` passes over `encoded`, each in a new order seeded by `config.seed`, as minibatches."""
    generator = torch.Generator().manual_seed(config.seed)
    for _ in range(config.epochs):
        order = torch.randperm(len(encoded), generator=generator).tolist()
        for start in range(0, len(order), config.minibatch):
            yield [encoded[i] for i in order[start : start + config.minibatch]]


def _freeze_base(policy: LMPolicy) -> None:
    """Make only the LoRA matrices trainable again (after full fine-tuning unfroze everything)."""
    for name, parameter in policy.model.named_parameters():
        parameter.requires_grad_("lora_" in name)


def describe(
    demonstrations: Sequence[Demonstration],
    result: WarmStartResult,
    *,
    policy: LMPolicy,
    config: WarmStartConfig,
) -> dict[str, Any]:
    """The manifest of a warm start: what it was trained on and how it went (plain JSON data). The counts
    by source and kind are over every demonstration given, `demonstrations` over those trained on;
    ``base_model`` is ``policy.config.model`` (name it there when the policy was given a model object)."""
    return {
        "kind": "full" if config.full else "lora",
        "base_model": policy.config.model,
        "competitions": sorted({d.prompt.task.slug for d in demonstrations}),
        "demonstrations": result.demonstrations,
        "skipped": result.skipped,
        "sources": sorted({d.source for d in demonstrations}),
        "by_source": dict(Counter(d.source for d in demonstrations)),
        "by_kind": dict(Counter(d.prompt.kind for d in demonstrations)),
        "steps": result.steps,
        "loss_first": result.loss_first,
        "loss_last": result.loss_last,
        "losses": list(result.losses),
        "wall_s": round(result.wall_s, 3),
        "config": asdict(config),
        "prompt": {  # a run should prompt as the demonstrations did
            "style": policy.config.prompt_style,
            "max_prompt_tokens": policy.config.max_prompt_tokens,
            "max_new_tokens": policy.config.max_new_tokens,
            "limits": asdict(policy.config.prompt_limits),
        },
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def save_warm_start(policy: LMPolicy, directory: Path, manifest: dict[str, Any]) -> Path:
    """Write the warm start into `directory`, which must not exist yet: the adapter, or the merged model
    under `FULL_MODEL_FOLDER` when ``manifest["kind"] == "full"``, then `MANIFEST_FILE`. Atomic (a
    temporary sibling renamed into place). Raises FileExistsError when `directory` exists."""
    directory = Path(directory)
    if directory.exists():
        raise FileExistsError(f"{directory} exists already; a warm start is never overwritten.")

    def build(folder: Path) -> None:
        if manifest.get("kind") == "full":
            save_merged_model(policy.model, policy.tokenizer, folder / FULL_MODEL_FOLDER)
        else:
            policy.save_adapter(folder)
        (folder / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")

    return build_once(directory, build)


def warm_start_policy(
    policy: LMPolicy,
    tasks: Sequence[TaskInfo],
    *,
    demonstrations: int = 32,
    pools: dict[str, list[PreviousSolution]] | None = None,
    extra: Sequence[Demonstration] = (),
    improve_share: float = 0.5,
    config: WarmStartConfig | None = None,
    progress: Progress | None = None,
) -> tuple[list[Demonstration], WarmStartResult]:
    """Warm-start `policy` in place on GrammarPolicy demonstrations for `tasks` (plus `extra` ones).

    Args:
        tasks: TaskInfos with `features` filled (rl_core.features.task_features).
        demonstrations: how many grammar demonstrations, split evenly over the tasks.
        pools: slug -> valid earlier programs for improve demonstrations (`rl_core.seed_programs`); without
            them only solve demonstrations are made.
        extra: further demonstrations, e.g. `rl_core.warmstart.demonstrations.imitation_demonstrations`.
    Returns:
        (the demonstrations trained on, including `extra`; the result of `fine_tune`).
    """
    config = config or WarmStartConfig()
    demos = grammar_demonstrations(
        tasks, demonstrations, pools=pools, improve_share=improve_share, seed=config.seed,
        style=policy.config.prompt_style,
    )  # fmt: skip
    demos += list(extra)
    return demos, fine_tune(policy, demos, config, progress=progress)
