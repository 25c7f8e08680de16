"""Sandbox overhead: what running a program through rl_core.sandbox.execute costs over a bare subprocess.

What runs: two programs, a trivial one (``pass``) and one that imports pandas and scikit-learn, each as
(a) a bare ``subprocess.run([python, program.py])`` with its output captured, in a temp dir, and (b)
``rl_core.sandbox.execute`` at this machine's isolation level (bwrap or the rlimits fallback) with a fresh
work dir each time; and (c) the trivial program through the sandbox with a competition of 10,000 public
files in 100 folders (an image competition's shape): each attempt links them into its own mirror and the
sandbox watches every folder for reads (rl_core.sandbox.reads). The five cases are interleaved in every
round, so drifts in machine load hit all of them alike; wall-clock is measured around the whole call
(work-dir preparation included).

Reported: median wall-clock per case, and per program the overhead in ms and the ratio sandbox / bare
(`many_files` against the bare trivial program; no target, it shows what public files cost).
Targets: overhead on the trivial program <= 50 ms, and on the import program <= 15 %
(``overhead_ratio_import`` = median sandbox / median bare - 1).

Run: python bench/sandbox_overhead.py [--quick] [--json PATH]   (quick: 20 rounds, full: 50)
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import bench_arguments, machine_info, print_table, target, write_json

from rl_core.sandbox import ExecutionRequest, execute, isolation_level

PROGRAMS = {"trivial": "pass\n", "import": "import pandas, sklearn\n"}
MANY_FILES = (100, 100)
"""Folders, and files in each, of the `many_files` case's public folder."""
TIMEOUT_S, MEMORY_MB = 120.0, 4096


def bare(program_path: Path) -> Callable[[], None]:
    def run() -> None:
        done = subprocess.run(
            [sys.executable, str(program_path)], cwd=program_path.parent, capture_output=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"the bare run failed: {done.stderr.decode()[-500:]}")

    return run


def sandboxed(program: str, input_dir: Path, scratch: Path) -> Callable[[], None]:
    counter = iter(range(10**9))

    def run() -> None:
        work = scratch / f"attempt-{next(counter)}"
        result = execute(ExecutionRequest(program, input_dir, work, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB))
        if result.status != "ok":
            raise RuntimeError(f"the sandboxed run ended {result.status}: {result.stderr[-500:]}")
        shutil.rmtree(work)

    return run


def timed(run: Callable[[], None]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def measure(rounds: int, root: Path) -> dict[str, list[float]]:
    """Seconds per run of each case, `rounds` interleaved rounds after one warm-up round."""
    (root / "input").mkdir()
    folders, files = MANY_FILES
    for folder in range(folders):
        (root / "many" / f"class-{folder}").mkdir(parents=True)
        for index in range(files):
            (root / "many" / f"class-{folder}" / f"{index}.png").write_bytes(b"\x89PNG")
    cases: dict[str, Callable[[], None]] = {}
    for name, program in PROGRAMS.items():
        path = root / "bare" / name / "program.py"
        path.parent.mkdir(parents=True)
        path.write_text(program)
        cases[f"{name}/bare"] = bare(path)
        cases[f"{name}/sandbox"] = sandboxed(program, root / "input", root / "scratch")
    cases["many_files/sandbox"] = sandboxed(PROGRAMS["trivial"], root / "many", root / "scratch-many")
    for run in cases.values():  # warm the page cache and the bwrap probe
        run()
    times: dict[str, list[float]] = {case: [] for case in cases}
    for _ in range(rounds):
        for case, run in cases.items():
            times[case].append(timed(run))
    return times


def summarise(times: dict[str, list[float]]) -> dict[str, float]:
    results: dict[str, float] = {}
    for name in PROGRAMS:
        bare_s, sandbox_s = (statistics.median(times[f"{name}/{kind}"]) for kind in ("bare", "sandbox"))
        results[f"median_ms_{name}_bare"] = 1000 * bare_s
        results[f"median_ms_{name}_sandbox"] = 1000 * sandbox_s
        results[f"overhead_ms_{name}"] = 1000 * (sandbox_s - bare_s)
        results[f"overhead_ratio_{name}"] = sandbox_s / bare_s - 1
    bare_s, many_s = statistics.median(times["trivial/bare"]), statistics.median(times["many_files/sandbox"])
    results |= {"median_ms_many_files_bare": 1000 * bare_s, "median_ms_many_files_sandbox": 1000 * many_s}
    results |= {
        "overhead_ms_many_files": 1000 * (many_s - bare_s),
        "overhead_ratio_many_files": many_s / bare_s - 1,
    }
    return results


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0])
    rounds = 20 if args.quick else 50
    with tempfile.TemporaryDirectory(prefix="sandbox-overhead-") as tmp:
        times = measure(rounds, Path(tmp))
    results = summarise(times)
    machine = machine_info() | {"isolation": isolation_level()}
    title = (
        f"sandbox overhead: {rounds} interleaved rounds, {machine['cpu_count']} cores, "
        f"isolation {machine['isolation']}, Python {machine['python']}"
    )
    rows = [
        {
            "program": name,
            "bare median ms": results[f"median_ms_{name}_bare"],
            "sandbox median ms": results[f"median_ms_{name}_sandbox"],
            "overhead ms": results[f"overhead_ms_{name}"],
            "overhead ratio": results[f"overhead_ratio_{name}"],
        }
        for name in (*PROGRAMS, "many_files")
    ]
    print_table(rows, list(rows[0]), title=title)
    targets = {
        "overhead_ms_trivial": target(results["overhead_ms_trivial"], "<=", 50.0),
        "overhead_ratio_import": target(results["overhead_ratio_import"], "<=", 0.15),
    }
    for name, verdict in targets.items():
        print(
            f"target {name} {verdict['op']} {verdict['threshold']}: {verdict['measured']:.4g} "
            f"({'met' if verdict['met'] else 'NOT met'})"
        )
    write_json(
        args.json,
        benchmark="sandbox_overhead",
        machine=machine,
        config={
            "rounds": rounds,
            "timeout_s": TIMEOUT_S,
            "memory_mb": MEMORY_MB,
            "programs": PROGRAMS,
            "many_files": MANY_FILES,
        },
        targets=targets,
        results=results,
    )


if __name__ == "__main__":
    main()
