"""Warm-start folders on disk: their manifest, listing them, and what a run loads from one.

A warm start (`warmstart.fine_tune.save_warm_start`) is a folder holding either a LoRA adapter (peft's
``adapter_config.json`` and weights; a run passes the folder as ``LMPolicyConfig.adapter_path``) or, after
full fine-tuning, a whole model under `FULL_MODEL_FOLDER` (a run loads it as its ``model``), plus
`MANIFEST_FILE`: what it was trained on. Imports no torch, so the web process can list warm starts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST_FILE = "warmstart.json"
"""The manifest's file name inside a warm start's folder."""
FULL_MODEL_FOLDER = "model"
"""Inside a full fine-tuning's folder: the merged model, a Hugging Face model folder."""


@dataclass(frozen=True)
class WarmStartSource:
    """What a run loads from a warm start: a model to use instead of the base, or an adapter on the base."""

    model: str | None  # a model folder (full fine-tuning), or None to keep the run's own model
    adapter_path: str | None  # an adapter folder for LMPolicyConfig.adapter_path, or None
    base_model: str | None  # the model the warm start was trained from, per its manifest


def read_manifest(directory: Path) -> dict[str, Any] | None:
    """A warm start folder's manifest, or None when the folder holds none (or an unreadable one)."""
    try:
        manifest = json.loads((Path(directory) / MANIFEST_FILE).read_text())
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
        return None
    return manifest if isinstance(manifest, dict) else None


def list_warm_starts(root: Path) -> list[dict[str, Any]]:
    """The warm starts directly under `root`, newest first: each manifest with ``name`` and ``path``."""
    root = Path(root)
    found = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        manifest = read_manifest(folder)
        if manifest is not None:
            found.append(manifest | {"name": folder.name, "path": str(folder)})
    return sorted(found, key=lambda m: str(m.get("created_at", "")), reverse=True)


def warm_start_source(directory: Path) -> WarmStartSource:
    """What a run loads from the warm start in `directory`.

    Raises:
        FileNotFoundError: `directory` holds neither an adapter nor a full model.
    """
    directory = Path(directory)
    base = (read_manifest(directory) or {}).get("base_model")
    if (directory / FULL_MODEL_FOLDER / "config.json").is_file():
        return WarmStartSource(str(directory / FULL_MODEL_FOLDER), None, base)
    if (directory / "adapter_config.json").is_file():
        return WarmStartSource(None, str(directory), base)
    raise FileNotFoundError(f"{directory} holds no warm start (no adapter_config.json and no model/ folder).")
