"""Checkpoint files by name: where the checkpoint after an update lives and which is the newest. Torch-free,
so the web process can tell whether a run has a checkpoint to warm-start from (rl_core.checkpoint reads and
writes them)."""

from __future__ import annotations

from pathlib import Path

PREFIX, SUFFIX = "checkpoint-", ".pt"


def checkpoint_path(directory: Path, update: int) -> Path:
    """Where the checkpoint taken after `update` updates lives.

    >>> checkpoint_path(Path("ckpt"), 12).name
    'checkpoint-00000012.pt'
    """
    return Path(directory) / f"{PREFIX}{update:08d}{SUFFIX}"


def list_checkpoints(directory: Path) -> list[Path]:
    """Finished checkpoint files in `directory`, oldest first (temporary files are ignored)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.name.startswith(PREFIX) and p.name.endswith(SUFFIX))


def latest_checkpoint(directory: Path) -> Path | None:
    """The newest checkpoint in `directory`, or None when there is none."""
    found = list_checkpoints(directory)
    return found[-1] if found else None
