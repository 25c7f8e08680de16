"""Where runs keep their files under PRACTICUM_DATA_DIR, and how workers write them safely.

```
<data dir>/runs/<run id>/
    checkpoints/           the supervisor's policy and learner state (workers.driver)
    attempts/<key>/        an attempt's scratch dir: the program's working directory in the sandbox
    outcomes/<key>-<digest>.json   what the attempt did, written by the worker that ran it
```
Competition files live beside them (webapp.competitions.storage). On a cluster PRACTICUM_DATA_DIR is one
shared filesystem (NFS, CephFS, ...) mounted at the same path on the web server, the supervisors and every
sandbox worker, so a worker on another machine reads the public files and writes outcomes and scratch dirs
where the supervisor and the dashboards find them.

Outcomes live outside the scratch dir on purpose: the program may write anything in its working
directory, so it must not be able to forge the record that says what it did. Writes are atomic (a
temporary file in the same folder, then a rename), so a reader never sees half a JSON document, even
across machines on a filesystem with close-to-open consistency.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def data_root() -> Path:
    return Path(settings.DATA_DIR)


def models_dir() -> Path:
    """Where the embedded model is converted once and cached (rl_core.policies.lm.weights) for every run."""
    return data_root() / "models"


def run_root(run_id: int) -> Path:
    """The run's folder: its attempts' scratch dirs and its checkpoints."""
    return data_root() / "runs" / str(int(run_id))


def run_checkpoints(run_id: int) -> Path:
    """Where the run's supervisor writes its checkpoints (rl_core.checkpoint names the files)."""
    return run_root(run_id) / "checkpoints"


def safe_name(name: str) -> str:
    """`name` if it can be one path component (an attempt key, a digest); ValueError otherwise.

    >>> safe_name("0-12")
    '0-12'
    >>> safe_name("../x")
    Traceback (most recent call last):
    ValueError: '../x' is not a safe file name (letters, digits, '_', '.', '-').
    """
    if not _SAFE_NAME.match(name) or ".." in name:
        raise ValueError(f"{name!r} is not a safe file name (letters, digits, '_', '.', '-').")
    return name


def attempt_work_dir(run_id: int, key: str) -> Path:
    """The attempt's scratch dir (what dashboards read the submission from)."""
    return run_root(run_id) / "attempts" / safe_name(key)


def attempt_outcome_path(run_id: int, key: str, digest: str) -> Path:
    """Where the worker records the outcome of running the program with this digest as attempt `key`."""
    return run_root(run_id) / "outcomes" / f"{safe_name(key)}-{safe_name(digest)}.json"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write `data` as JSON to `path` so that readers see either nothing or the whole document."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as stream:
            json.dump(data, stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> Any | None:
    """The JSON document at `path`, or None when there is none (or it is not valid JSON)."""
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
        return None


def fresh_dir(path: Path) -> Path:
    """Empty `path` (removing whatever an earlier try left) and return it."""
    remove_tree(path)
    path.mkdir(parents=True)
    return path


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
