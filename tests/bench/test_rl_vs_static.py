"""bench/rl_vs_static.py and bench/_study_analysis.py: the study's analysis against a hand-worked example, and
resuming in pieces against a run in one piece (the grammar policy through the real loop and sandboxes, one
sandbox at a time, so both are deterministic)."""

from __future__ import annotations

import doctest
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
CONFIG = {
    "policy": "grammar", "slugs": ["diabetes-progression"], "arms": ["static", "rl"], "seeds": [0, 1],
    "attempts_per_seed": 6, "settings": {"batch": 2},
}  # fmt: skip


def bench_module(name: str):
    """A module of bench/ as the benchmarks import each other (bench/ first on sys.path)."""
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def bench():
    yield from bench_module("rl_vs_static")


@pytest.fixture(scope="module")
def analysis():
    yield from bench_module("_study_analysis")


def record(number: int, valid: bool, version: int = 0, reward: float = 0.0) -> dict:
    return {
        "number": number, "task": "diabetes-progression", "kind": "solve", "status": "ok", "valid": valid,
        "score": 0.1 * number if valid else None, "reward": reward, "stages": 0, "new_tokens": 0,
        "generation_s": 0.0, "version": version,
    }  # fmt: skip


def piece(seed: int, arm: str, valid: list[bool], versions: list[int]) -> dict:
    records = [
        record(i + 1, v, ver, float(v)) for i, (v, ver) in enumerate(zip(valid, versions, strict=True))
    ]
    updates = max(versions)
    metrics = [{"charts/grad_norm": 2.0}] * updates
    return {"seed": seed, "arm": arm, "records": records, "wall_s": 6.0, "updates": updates,
            "update_metrics": metrics, "tokens_per_s": []}  # fmt: skip


def test_the_docstring_examples_hold(bench, analysis):
    assert doctest.testmod(bench).failed == 0
    assert doctest.testmod(analysis).failed == 0


def test_the_analysis_matches_the_hand_worked_example(analysis):
    """Positions 1-2 come before seed 0's first update, 1-2 before seed 1's; counted from there (rl 3/4 and
    2/4, static 1/4 and 2/4): CMH X^2 = 7/8, RD = 1/4 (worked in tests/rl_core/test_studies.py)."""
    pieces = {
        (0, "static"): piece(0, "static", [True, False, True, False, False, False], [0] * 6),
        (0, "rl"): piece(0, "rl", [True, False, True, True, True, False], [0, 0, 1, 1, 1, 1]),
        (1, "static"): piece(1, "static", [True, False, True, True, False, False], [0] * 6),
        (1, "rl"): piece(1, "rl", [True, False, True, False, True, False], [0, 0, 1, 1, 2, 2]),
    }
    results = analysis.analyse(pieces, CONFIG)
    rl, static = results["arms"]["rl"], results["arms"]["static"]
    assert (rl["attempts_after_first_update"], rl["valid_after"]) == (8, 5)
    assert (static["attempts_after_first_update"], static["valid_after"]) == (8, 3)
    assert rl["valid_rate"] == 5 / 8 and rl["drawn_after_an_update"] == 8
    assert results["complete"] is True and results["test"]["statistic"] == pytest.approx(7 / 8)
    assert results["test"]["difference"] == pytest.approx(0.25)
    assert results["test"]["difference_ci"] == pytest.approx([0.25 - 0.45834, 0.25 + 0.45834], abs=1e-5)
    assert results["test"]["p_value"] == pytest.approx(0.349575, abs=1e-6)
    assert rl["best_score_by_seed"]["diabetes-progression"] == pytest.approx([0.5, 0.5])
    assert rl["diagnostics"]["grad_norm_mean"] == 2.0 and rl["diagnostics"]["updates"] == 3


def test_only_seeds_with_both_arms_are_tested(analysis):
    pieces = {
        (0, "static"): piece(0, "static", [True, False, True, False], [0] * 4),
        (0, "rl"): piece(0, "rl", [True, False, True, True], [0, 0, 1, 1]),
        (1, "static"): piece(1, "static", [True, True, True, True], [0] * 4),
    }
    results = analysis.analyse(pieces, CONFIG | {"attempts_per_seed": 4})
    assert results["seeds_complete"] == [0] and results["complete"] is False
    assert results["arms"]["static"]["attempts_after_first_update"] == 2


def test_a_seeds_arms_from_different_warm_starts_are_not_compared_but_seeds_may_differ(analysis):
    pieces = {
        (0, "static"): piece(0, "static", [True, False, True, False], [0] * 4) | {"warm_start": "aaaa"},
        (0, "rl"): piece(0, "rl", [True, False, True, True], [0, 0, 1, 1]) | {"warm_start": "bbbb"},
    }
    with pytest.raises(SystemExit, match="different warm starts"):
        analysis.analyse(pieces, CONFIG | {"attempts_per_seed": 4})
    pieces[(0, "rl")]["warm_start"] = "aaaa"
    pieces[(1, "static")] = piece(1, "static", [True, False, False, False], [0] * 4) | {"warm_start": "cccc"}
    pieces[(1, "rl")] = piece(1, "rl", [True, False, True, False], [0, 0, 1, 1]) | {"warm_start": "cccc"}
    results = analysis.analyse(pieces, CONFIG | {"attempts_per_seed": 4})
    assert results["warm_start_by_seed"] == {0: "aaaa", 1: "cccc"}
    assert results["seeds_complete"] == [0, 1]


def test_a_sitting_from_another_warm_start_refuses_a_seed_begun_elsewhere_before_running_it(bench, tmp_path):
    def from_a(seed, arm):
        return piece(seed, arm, [True], [0]) | {"warm_start": "aaaa"}

    bench.run_study(CONFIG, tmp_path, from_a, stop_after=1, warm_start="aaaa")

    def never(seed, arm):
        raise AssertionError("nothing may run")

    with pytest.raises(SystemExit, match="seed 0's saved static piece began from warm start aaaa"):
        bench.run_study(CONFIG, tmp_path, never, warm_start="bbbb")


def test_a_warm_starts_fingerprint_is_its_weights_alone(tmp_path):
    sys.path.insert(0, str(BENCH))
    try:
        fingerprint = importlib.import_module("_lm").warm_start_fingerprint
    finally:
        sys.path.remove(str(BENCH))
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, built_at in ((first, "monday"), (second, "tuesday")):
        folder.mkdir()
        (folder / "adapter_model.safetensors").write_bytes(b"weights")
        (folder / "warmstart.json").write_text(json.dumps({"created_at": built_at}))
        (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(folder)}))
    assert fingerprint(first) == fingerprint(second)
    (second / "adapter_model.safetensors").write_bytes(b"other weights")
    assert fingerprint(first) != fingerprint(second)


def test_a_folder_holding_another_configurations_pieces_is_refused_before_anything_runs(bench, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG | {"attempts_per_seed": 99}))

    def never(seed, arm):
        raise AssertionError("nothing may run")

    with pytest.raises(SystemExit, match="another configuration"):
        bench.run_study(CONFIG, tmp_path, never)


def test_saved_pieces_are_loaded_and_only_the_missing_ones_run(bench, tmp_path):
    bench.run_study(CONFIG, tmp_path, lambda seed, arm: piece(seed, arm, [True, False], [0, 0]), stop_after=1)
    ran = []

    def record_run(seed, arm):
        ran.append((seed, arm))
        return piece(seed, arm, [True, True], [0, 1])

    pieces = bench.run_study(CONFIG, tmp_path, record_run)
    assert ran == [(0, "rl"), (1, "static"), (1, "rl")]
    assert pieces[(0, "static")]["records"][1]["valid"] is False, "the saved piece, not a new one"


def start_bench(out: Path, pieces: Path, *more: str) -> tuple[subprocess.Popen, Path]:
    """The grammar study's command, started; its output goes to a file beside `out` (no pipe to fill)."""
    command = [sys.executable, "rl_vs_static.py", "--policy", "grammar", "--seeds", "1", "--attempts", "4",
               "--json", str(out), "--pieces", str(pieces), *more]  # fmt: skip
    log = out.with_suffix(".log")
    with log.open("w") as sink:
        return subprocess.Popen(command, cwd=BENCH, stdout=sink, stderr=subprocess.STDOUT, text=True), log


def finish(started: tuple[subprocess.Popen, Path]) -> str:
    bench, log = started
    bench.wait(timeout=600)
    assert bench.returncode == 0, log.read_text()[-3000:]
    return log.read_text()


def comparable(path: Path) -> dict:
    """The summary without what differs between any two runs: clocks, the machine and where pieces live."""
    document = json.loads(path.read_text())
    results = document["results"]
    for arm in results["arms"].values():
        arm.pop("seconds_per_attempt")
    results.pop("sitting_wall_s")
    results["pieces"].pop("folder")
    for piece in results["pieces"]["finished"]:
        piece.pop("wall_s")
    return {"config": document["config"], "results": results}


@pytest.mark.slow
def test_resuming_runs_only_the_missing_pieces_and_gives_the_json_of_a_run_in_one_piece(tmp_path):
    """One seed, so two pieces: the first sitting stops after the static arm, the second runs only the rl arm
    (resuming across seeds is the in-process test above)."""
    whole_run = start_bench(tmp_path / "whole.json", tmp_path / "whole")  # beside the sittings (a core each)
    first = finish(start_bench(tmp_path / "first.json", tmp_path / "pieces", "--stop-after", "1"))
    assert "[seed 0] static" in first and "[seed 0] rl" not in first
    saved = {p.name: p.read_bytes() for p in (tmp_path / "pieces").glob("seed*.json")}
    assert sorted(saved) == ["seed0-static.json"]
    assert json.loads((tmp_path / "first.json").read_text())["results"]["pieces"]["saved"] == 1

    second = finish(start_bench(tmp_path / "resumed.json", tmp_path / "pieces"))
    assert "[seed 0] static" not in second and "[seed 0] rl" in second
    assert {name: (tmp_path / "pieces" / name).read_bytes() for name in saved} == saved
    assert finish(whole_run).count("[seed 0]") == 2
    assert comparable(tmp_path / "resumed.json") == comparable(tmp_path / "whole.json")
