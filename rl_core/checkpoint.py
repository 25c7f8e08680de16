"""Checkpoint files: atomic writes, the newest one, and plain-data forms of samples and experiences.

A checkpoint is one `torch.save` file of plain data and tensors only (no pickled classes), so it loads with
`torch.load(weights_only=True)`. Samples are stored with their competition's slug instead of the TaskInfo;
the TaskInfo objects are supplied again on load. Files are named `checkpoint-<update:08d>.pt` and written
to a temporary file that is renamed into place, so a crash never leaves a half-written newest checkpoint.
Finding checkpoints needs no torch: rl_core.checkpoint_files, which the web process uses.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rl_core.checkpoint_files import SUFFIX, checkpoint_path, latest_checkpoint, list_checkpoints
from rl_core.policy import (
    Action,
    ChoiceAction,
    Experience,
    PreviousSolution,
    Prompt,
    Sample,
    TaskInfo,
    TokenAction,
)


def save_checkpoint(directory: Path, update: int, state: Mapping[str, Any], *, keep: int = 3) -> Path:
    """Write `state` atomically as the checkpoint after `update` updates; keep the newest `keep` files."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = checkpoint_path(directory, update)
    import torch

    handle, temp_name = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=SUFFIX)
    try:
        with os.fdopen(handle, "wb") as stream:
            torch.save(dict(state), stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    for old in list_checkpoints(directory)[:-keep]:
        old.unlink(missing_ok=True)
    return target


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Read a checkpoint (a file, or a directory meaning its newest checkpoint)."""
    path = Path(path)
    if path.is_dir():
        newest = latest_checkpoint(path)
        if newest is None:
            raise FileNotFoundError(f"No checkpoint in {path}.")
        path = newest
    import torch

    state: dict[str, Any] = torch.load(path, weights_only=True)
    return state


def warm_start(policy: Any, path: Path) -> None:
    """Start a new run from another run's policy: load only the policy's parameters from its checkpoint
    (a file, or a directory meaning its newest); the optimizer, baselines and counters start fresh."""
    policy.load_state_dict(load_checkpoint(path)["policy"])


def previous_to_dict(previous: PreviousSolution) -> dict[str, Any]:
    return {
        "code": previous.code,
        "output": previous.output,
        "score": previous.score,
        "attempt_id": previous.attempt_id,
    }


def previous_from_dict(data: Mapping[str, Any]) -> PreviousSolution:
    """The inverse of `previous_to_dict`; checkpoints written before entries named their attempt lack
    ``attempt_id``, which then stays "" (unknown)."""
    return PreviousSolution(
        code=data["code"],
        output=data["output"],
        score=float(data["score"]),
        attempt_id=str(data.get("attempt_id", "")),
    )


def sample_to_dict(sample: Sample) -> dict[str, Any]:
    """A Sample as plain data; its TaskInfo becomes the slug."""
    return {
        "task": sample.prompt.task.slug,
        "kind": sample.prompt.kind,
        "previous": None if sample.prompt.previous is None else previous_to_dict(sample.prompt.previous),
        "response": sample.response,
        "logprobs": list(sample.logprobs),
        "policy_version": sample.policy_version,
        "info": dict(sample.info),
        "action": action_to_dict(sample.action),
    }


def sample_from_dict(data: Mapping[str, Any], tasks: Mapping[str, TaskInfo]) -> Sample:
    """Rebuild a Sample; `tasks` maps each slug to its TaskInfo. A checkpoint written before samples had
    an action kept it in the info (`legacy_action`)."""
    previous = None if data["previous"] is None else previous_from_dict(data["previous"])
    prompt = Prompt(task=tasks[data["task"]], kind=data["kind"], previous=previous)
    return Sample(
        prompt=prompt,
        response=data["response"],
        logprobs=tuple(float(x) for x in data["logprobs"]),
        policy_version=int(data["policy_version"]),
        info=dict(data["info"]),
        action=action_from_dict(data["action"]) if "action" in data else legacy_action(data["info"]),
    )


def action_to_dict(action: Action | None) -> dict[str, Any] | None:
    """A sample's action as plain data: {"token_ids": [...]} or {"choices", "drawn", "excluded"}."""
    if isinstance(action, TokenAction):
        return {"token_ids": list(action.token_ids)}
    if isinstance(action, ChoiceAction):
        return {
            "choices": dict(action.choices),
            "drawn": list(action.drawn),
            "excluded": dict(action.excluded),
        }
    return None


def action_from_dict(data: Mapping[str, Any] | None) -> Action | None:
    """The inverse of `action_to_dict`."""
    if data is None:
        return None
    if "token_ids" in data:
        return TokenAction(tuple(int(token) for token in data["token_ids"]))
    return ChoiceAction(
        choices=dict(data["choices"]), drawn=tuple(data["drawn"]), excluded=dict(data["excluded"])
    )


def legacy_action(info: Mapping[str, Any]) -> Action | None:
    """The action of a sample saved before `Sample.action` existed, from its info: an LM's
    ``response_ids``, or a grammar policy's ``choices``, ``drawn`` and ``excluded``."""
    if "response_ids" in info:
        return action_from_dict({"token_ids": info["response_ids"]})
    if "drawn" in info and "choices" in info:
        return action_from_dict({**info, "excluded": info.get("excluded", {})})
    return None


def experience_to_dict(experience: Experience) -> dict[str, Any]:
    return {
        "sample": sample_to_dict(experience.sample),
        "reward": experience.reward,
        "duration_s": experience.duration_s,
        "valid": experience.valid,
        "ran": experience.ran,
        "slot_period_s": experience.slot_period_s,
    }


def experience_from_dict(data: Mapping[str, Any], tasks: Mapping[str, TaskInfo]) -> Experience:
    return Experience(
        sample=sample_from_dict(data["sample"], tasks),
        reward=float(data["reward"]),
        duration_s=float(data["duration_s"]),
        valid=bool(data["valid"]),
        ran=bool(data.get("ran", True)),  # checkpoints written before these fields lack them
        slot_period_s=optional_float(data.get("slot_period_s")),
    )


def optional_float(value: Any) -> float | None:
    """None stays None; anything else becomes a float (stored optional durations)."""
    return None if value is None else float(value)
