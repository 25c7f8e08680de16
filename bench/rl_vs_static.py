"""RL against the same model without updates: the pre-registered study of issue 27, resumable in pieces.

What runs: SmolLM2-135M-Instruct from the shared warm start (bench/_lm.py: SFT on 48 GrammarPolicy
demonstrations), on diabetes-progression (R²) and breast-cancer-diagnosis (ROC AUC), on the path an LM run
takes (bench/_lm.py's PATHS["new"]: asynchronous, K = 2 sandboxed actors, the background sampler drawing
batches of 8 through vLLM, B = 8, solve/improve mix, improve pools seeded with the simplest grammar program).
Two arms with the same seeds, prompts, loop and budget:
  static  no updates (rl_core.learner.FrozenLearner): the warm-started model's best of N;
  rl      PPO on the LoRA adapters after every batch of B (duration weights, running-mean baseline).
The design (seeds, budget, endpoints, test) is written down in docs/benchmarks.md before the study ran.

Pieces: every (seed, arm) run is saved to its own JSON file under --pieces (default var/bench/rl_vs_static/
<the configuration's hash>/) the moment it finishes, with every attempt's record; a later invocation with the
same configuration loads the saved pieces and runs only the missing ones, so the study is finished in several
sittings (`--stop-after N`: run at most N new pieces in this sitting). The study keeps its pieces in git,
under bench/results/rl_vs_static_pieces/ (about 40 kB each), so that a sitting on another machine resumes
them; a folder holding another configuration's pieces is refused. Pieces run seed by seed, static then
rl. Each piece records the fingerprint of its warm start (a new machine builds it anew, and builds differ):
a seed's arms must share one, so a sitting refuses to run a seed begun from another and ends best on a seed
boundary. The summary (--json; the committed one is bench/results/rl_vs_static.json) holds no per-attempt
records.

Primary endpoint: the valid rate over the attempts after each seed's first update (positions in finish order
from the first attempt the rl arm drew with an updated policy; the static arm counted at the same positions),
tested with the Cochran-Mantel-Haenszel test, seeds as strata, and the Mantel-Haenszel risk difference with
its 95% interval (rl_core.studies, which the product's study page uses too); the per-seed paired difference
with a t interval beside it. Secondary: the mean reward per tenth of the run, each competition's best score
per seed. Diagnostics for a null result: the gradient norm and clip fraction per update, the spread of the
rewards within each batch, the valid rate's trend within the rl runs.

Run: python bench/rl_vs_static.py [--quick] [--json PATH] [--seeds N] [--attempts N] [--stop-after N]
     [--pieces DIR] [--policy lm|grammar] [--lr X] [--ppo-epochs N] [--arms rl] [--first-seed S]
(quick: 1 seed x 24 attempts per arm, the last 8 or so after the first update; the study: 4 seeds x 120;
grammar: the grammar policy, one sandbox at a time, synchronous B = 2: seconds per piece, deterministic, what
the tests run)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from _common import format_value, machine_info, print_table, write_json
from _lm import (
    BENCH_DIR,
    PATHS,
    ArmResult,
    AttemptRecord,
    LMSettings,
    path_policy,
    run_arm,
    tasks_for,
    warm_start,
    warm_start_fingerprint,
)

from rl_core.studies import SeedArm, compare_arms, seed_counts, wilson_interval, windows

SLUGS = ("diabetes-progression", "breast-cancer-diagnosis")
HIGHER_IS_BETTER = {"diabetes-progression": True, "breast-cancer-diagnosis": True}
ARMS = ("static", "rl")
STUDY_SEEDS, STUDY_ATTEMPTS = 4, 120
"""The pre-registered study: 4 seeds x 120 attempts per arm and seed, of which at least 96 per seed come
after the first update (it lands after the first batch of 8; the sampler draws 8 ahead)."""
QUICK_SEEDS, QUICK_ATTEMPTS = 1, 24
GRAMMAR_PATH = replace(PATHS["batch"], engine="auto", actors=1)

Piece = dict[str, Any]
"""One (seed, arm) run as saved: {"seed", "arm", "records": [AttemptRecord as a dict], "wall_s", "updates",
"update_metrics", "tokens_per_s"}."""


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 seed x 24 attempts per arm")
    parser.add_argument("--json", type=Path, default=None, help="write the summary here as JSON")
    parser.add_argument("--seeds", type=int, default=None, help="seeds (0..N-1)")
    parser.add_argument("--attempts", type=int, default=None, help="attempts per arm and seed")
    parser.add_argument("--stop-after", type=int, default=None, help="run at most N new pieces, then stop")
    parser.add_argument("--pieces", type=Path, default=None, help="where pieces are saved and resumed from")
    parser.add_argument("--policy", choices=("lm", "grammar"), default="lm")
    parser.add_argument("--lr", type=float, default=None, help="the rl arm's learning rate")
    parser.add_argument("--ppo-epochs", type=int, default=None, help="PPO passes over each batch")
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS), help="(a pilot: rl alone)")
    parser.add_argument("--first-seed", type=int, default=0, help="seeds run from here (a pilot: apart)")
    return parser.parse_args()


def study_config(args: argparse.Namespace) -> dict[str, Any]:
    """Everything that decides what a piece computes: pieces are resumed only under the same configuration."""
    seeds = args.seeds or (QUICK_SEEDS if args.quick else STUDY_SEEDS)
    first = args.first_seed
    attempts = args.attempts or (QUICK_ATTEMPTS if args.quick else STUDY_ATTEMPTS)
    grammar = args.policy == "grammar"
    settings = LMSettings(batch=2, rl_lr=0.05) if grammar else LMSettings()
    path = GRAMMAR_PATH if grammar else PATHS["new"]
    settings = replace(settings, rl_lr=args.lr or settings.rl_lr)
    path = replace(path, ppo_epochs=args.ppo_epochs or path.ppo_epochs)
    return {
        "policy": args.policy, "slugs": list(SLUGS), "arms": list(args.arms),
        "seeds": list(range(first, first + seeds)), "attempts_per_seed": attempts,
        "settings": asdict(settings), "path": asdict(path),
    }  # fmt: skip


def pieces_folder(config: Mapping[str, Any]) -> Path:
    key = json.dumps(config, sort_keys=True)
    return BENCH_DIR / "rl_vs_static" / hashlib.sha256(key.encode()).hexdigest()[:16]


def planned(config: Mapping[str, Any]) -> list[tuple[int, str]]:
    """The pieces in the order they run: seed by seed, each seed's arms one after the other.

    >>> planned({"seeds": [0, 1], "arms": ["static", "rl"]})
    [(0, 'static'), (0, 'rl'), (1, 'static'), (1, 'rl')]
    """
    return [(seed, arm) for seed in config["seeds"] for arm in config["arms"]]


def piece_path(folder: Path, seed: int, arm: str) -> Path:
    return folder / f"seed{seed}-{arm}.json"


def run_study(
    config: Mapping[str, Any],
    folder: Path,
    run_piece: Callable[[int, str], Piece],
    *,
    stop_after: int | None = None,
    warm_start: str | None = None,
) -> dict[tuple[int, str], Piece]:
    """Every saved piece of `config` under `folder`, plus the missing ones run by `run_piece` (at most
    `stop_after` of them), each saved the moment it finishes (written whole, then renamed). `warm_start`:
    the fingerprint of the warm start `run_piece` begins from; a seed whose saved pieces began from another is
    refused before its missing piece runs (a seed's arms must share their start)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = json.dumps(config, indent=2, sort_keys=True) + "\n"
    saved = folder / "config.json"
    if saved.exists() and json.loads(saved.read_text()) != json.loads(written):
        raise SystemExit(f"{folder} holds another configuration's pieces ({saved}); choose another --pieces.")
    saved.write_text(written)
    pieces, ran = {}, 0
    for seed, arm in planned(config):
        path = piece_path(folder, seed, arm)
        if path.exists():
            pieces[(seed, arm)] = json.loads(path.read_text())
            continue
        if stop_after is not None and ran >= stop_after:
            continue
        check_same_start(seed, warm_start, pieces)
        print(f"[seed {seed}] {arm} ...", flush=True)
        piece = run_piece(seed, arm)
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(piece) + "\n")
        partial.replace(path)
        pieces[(seed, arm)] = piece
        ran += 1
    return pieces


def check_same_start(seed: int, warm_start: str | None, pieces: Mapping[tuple[int, str], Piece]) -> None:
    """Refuse to run a piece of `seed` from `warm_start` when a saved piece of that seed began from another.

    >>> check_same_start(1, "ab", {(0, "rl"): {"warm_start": "cd"}, (1, "static"): {"warm_start": "ab"}})
    >>> check_same_start(0, "ab", {(0, "static"): {"warm_start": "cd"}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    SystemExit: seed 0's saved static piece began from warm start cd and this sitting's is ab: ...
    """
    for (saved_seed, arm), piece in pieces.items():
        if saved_seed == seed and piece.get("warm_start") != warm_start:
            raise SystemExit(
                f"seed {seed}'s saved {arm} piece began from warm start {piece.get('warm_start')} and this "
                f"sitting's is {warm_start}: a seed's arms must share their start. Run this seed on the "
                "machine that built that warm start, or delete the seed's saved pieces to run it again whole."
            )


def study_warm_start(config: Mapping[str, Any]) -> Path | None:
    """The warm start every LM piece begins from (built here on first use; None for the grammar policy)."""
    if config["policy"] == "grammar":
        return None
    shared = replace(LMSettings(**config["settings"]), rl_lr=LMSettings.rl_lr)  # no part in the warm start
    return warm_start(tasks_for(config["slugs"]), shared)[0]


def piece_runner(config: Mapping[str, Any], adapter: Path | None) -> Callable[[int, str], Piece]:
    """What runs one piece of `config` from the warm start `adapter`: the real loop, sandboxes and policy."""
    settings = LMSettings(**config["settings"])
    path = replace(PATHS["new"], **config["path"])
    tasks = tasks_for(config["slugs"])
    fingerprint = adapter and warm_start_fingerprint(adapter)

    def run_piece(seed: int, arm: str) -> Piece:
        policy = grammar_policy(seed) if config["policy"] == "grammar" else path_policy(
            settings, path, adapter=adapter, seed=seed)  # fmt: skip
        result = run_arm(arm, policy, tasks, settings, attempts=config["attempts_per_seed"],
                         learn=arm == "rl", seed=seed, path=path)  # fmt: skip
        return piece_of(result, seed, fingerprint)

    return run_piece


def grammar_policy(seed: int) -> Any:
    import torch

    from rl_core.policies.grammar import GrammarPolicy

    torch.manual_seed(seed)
    return GrammarPolicy()


def piece_of(result: ArmResult, seed: int, warm_start: str | None = None) -> Piece:
    """A finished run as a piece; `warm_start`: the fingerprint of the warm start it began from. The machine
    (with the code's commit) is recorded too: a sitting on other code is visible in the pieces."""
    return {
        "seed": seed, "arm": result.name, "records": [asdict(r) for r in result.records],
        "wall_s": result.wall_s, "updates": result.updates, "update_metrics": result.update_metrics,
        "tokens_per_s": result.tokens_per_s, "warm_start": warm_start, "machine": machine_info(),
    }  # fmt: skip


# -- the analysis (pure: pieces in, the summary out) -------------------------------------------------------


def seed_arm(piece: Piece) -> SeedArm:
    records = [AttemptRecord(**r) for r in piece["records"]]
    return SeedArm(
        arm=piece["arm"], seed=piece["seed"], valid=[r.valid for r in records],
        versions=[r.version for r in records], rewards=[r.reward for r in records],
    )  # fmt: skip


def analyse(pieces: Mapping[tuple[int, str], Piece], config: Mapping[str, Any]) -> dict[str, Any]:
    """The study's results from whatever pieces exist: per arm the primary endpoint's counts, the secondary
    endpoints and the diagnostics; the test wherever both arms share a seed (`complete` says whether every
    seed does: before that the test is interim, progress and not a result)."""
    arms = list(config["arms"])
    runs = [seed_arm(pieces[key]) for key in planned(config) if key in pieces]
    complete = [seed for seed in config["seeds"] if all((seed, arm) in pieces for arm in arms)]
    counted = {
        seed: seed_counts([r for r in runs if r.seed == seed], after_first_update=True) for seed in complete
    }
    results: dict[str, Any] = {
        "complete": len(complete) == len(config["seeds"]),
        "seeds_complete": complete,
        "warm_start_by_seed": warm_start_by_seed(pieces),
        "arms": {arm: arm_results(arm, pieces, complete, counted, config) for arm in arms},
    }
    tests = compare_arms([r for r in runs if r.seed in complete], arms, after_first_update=True)
    if tests:
        test = tests[0].as_dict()
        results["test"] = {
            "name": test["name"], "p_value": test["p_value"], "statistic": test["statistic"],
            "difference": test["difference"], "difference_ci": test["difference_ci"],
            "difference_of": f"{test['arm']} minus {test['reference']}, valid rate",
            "seed_differences": test["seed_differences"], "seed_difference_ci": test["seed_difference_ci"],
            "seed_difference_p": test["seed_difference_p"],
        }  # fmt: skip
    return results


def warm_start_by_seed(pieces: Mapping[tuple[int, str], Piece]) -> dict[int, str | None]:
    """Each seed's warm start (its fingerprint; None for the grammar policy). Seeds may differ (a sitting on
    another machine builds the warm start anew, and the test's strata are the seeds), a seed's arms may not:
    then the seed compares more than RL against static, and the analysis is refused.

    >>> warm_start_by_seed({(0, "static"): {"warm_start": "ab"}, (0, "rl"): {"warm_start": "ab"},
    ...                     (1, "static"): {"warm_start": "cd"}})
    {0: 'ab', 1: 'cd'}
    """
    found: dict[int, str | None] = {}
    for (seed, _arm), piece in pieces.items():
        if seed in found and found[seed] != piece.get("warm_start"):
            raise SystemExit(f"seed {seed}'s arms began from different warm starts, so it cannot be compared")
        found[seed] = piece.get("warm_start")
    return found


def arm_results(
    arm: str,
    pieces: Mapping[tuple[int, str], Piece],
    seeds: Sequence[int],
    counted: Mapping[int, Any],
    config: Mapping[str, Any],
) -> dict[str, Any]:
    mine = [pieces[(seed, arm)] for seed in seeds]
    counts = [counted[seed][arm] for seed in seeds if counted[seed] is not None]
    after, valid_after = sum(c.attempts for c in counts), sum(c.valid for c in counts)
    records = [AttemptRecord(**r) for p in mine for r in p["records"]]
    tenths = windows([seed_arm(p) for p in mine], 10, config["attempts_per_seed"])
    return {
        "attempts": len(records),
        "attempts_after_first_update": after,
        "valid_after": valid_after,
        "valid_rate": valid_after / after if after else None,
        "valid_rate_ci": list(wilson_interval(valid_after, after)) if after else None,
        "valid_rate_all_attempts": sum(r.valid for r in records) / len(records) if records else None,
        "drawn_after_an_update": sum(r.version > 0 for r in records),
        "mean_reward_by_tenth": [w["mean_reward"] for w in tenths],
        "valid_rate_by_tenth": [w["valid_rate"] for w in tenths],
        "best_score_by_seed": {slug: [best(p, slug) for p in mine] for slug in config["slugs"]},
        "diagnostics": diagnostics(mine, config),
        "seconds_per_attempt": sum(p["wall_s"] for p in mine) / len(records) if records else None,
    }


def best(piece: Piece, slug: str) -> float | None:
    scores = [
        r["score"] for r in piece["records"] if r["task"] == slug and r["valid"] and r["score"] is not None
    ]
    return (max if HIGHER_IS_BETTER[slug] else min)(scores) if scores else None


def diagnostics(pieces: Sequence[Piece], config: Mapping[str, Any]) -> dict[str, Any]:
    """What a null result is checked against: did gradients reach the adapters, did batches carry a signal
    (rewards that differ within a batch), did the valid rate move within the runs."""
    batch = config["settings"]["batch"]
    spreads = []
    for piece in pieces:
        rewards = [r["reward"] for r in piece["records"]]
        spreads += [
            statistics.pstdev(rewards[i : i + batch]) for i in range(0, len(rewards) - batch + 1, batch)
        ]
    metrics = [m for p in pieces for m in p["update_metrics"]]

    def mean_of(key: str) -> float | None:
        values = [m[key] for m in metrics if key in m]
        return statistics.fmean(values) if values else None

    halves = [[r["valid"] for r in p["records"]] for p in pieces]
    return {
        "updates": sum(p["updates"] for p in pieces),
        "grad_norm_mean": mean_of("charts/grad_norm"),
        "clip_fraction_mean": mean_of("charts/clip_fraction"),
        "reward_spread_within_batches_mean": statistics.fmean(spreads) if spreads else None,
        "batches_with_no_reward_spread": sum(s == 0 for s in spreads),
        "timeouts": sum(r["status"] == "timeout" for p in pieces for r in p["records"]),
        "valid_rate_first_half": rate([v for h in halves for v in h[: len(h) // 2]]),
        "valid_rate_second_half": rate([v for h in halves for v in h[len(h) // 2 :]]),
        "tokens_per_s": statistics.fmean(t for p in pieces for t in p["tokens_per_s"])
        if any(p["tokens_per_s"] for p in pieces) else None,
    }  # fmt: skip


def rate(values: Sequence[bool]) -> float | None:
    return sum(values) / len(values) if values else None


# -- the command -------------------------------------------------------------------------------------------


def main() -> None:
    args = arguments()
    config = study_config(args)
    folder = args.pieces or pieces_folder(config)
    started = time.monotonic()
    adapter = study_warm_start(config)
    fingerprint = adapter and warm_start_fingerprint(adapter)
    pieces = run_study(
        config, folder, piece_runner(config, adapter), stop_after=args.stop_after, warm_start=fingerprint
    )
    results = analyse(pieces, config)
    results["pieces"] = {"folder": str(folder), "saved": len(pieces), "planned": len(planned(config)),
                         "finished": [progress(piece) for piece in pieces.values()]}  # fmt: skip
    results["sitting_wall_s"] = time.monotonic() - started
    write_json(args.json, benchmark="rl_vs_static", machine=machine_info(), config=config,
               targets={}, results=results)  # fmt: skip
    report(results, config)


def progress(piece: Piece) -> dict[str, Any]:
    """A saved piece in a line of the summary: what has run so far (progress, not a result)."""
    records = piece["records"]
    return {
        "seed": piece["seed"], "arm": piece["arm"], "attempts": len(records),
        "valid": sum(r["valid"] for r in records), "updates": piece["updates"], "wall_s": piece["wall_s"],
        "warm_start": piece.get("warm_start"),
    }  # fmt: skip


def report(results: Mapping[str, Any], config: Mapping[str, Any]) -> None:
    rows = []
    for arm, found in results["arms"].items():
        rows.append({
            "arm": arm, "seeds": len(results["seeds_complete"]),
            "valid after first update": f"{found['valid_after']}/{found['attempts_after_first_update']}",
            "95% CI": format_value(found["valid_rate_ci"]),
            "drawn after an update": found["drawn_after_an_update"],
            "grad norm": found["diagnostics"]["grad_norm_mean"], "s/attempt": found["seconds_per_attempt"],
        })  # fmt: skip
    saved = results.get("pieces", {})
    print_table(
        rows, list(rows[0]), title=f"pieces {saved.get('saved')}/{saved.get('planned')} ({config['policy']})"
    )
    if "test" in results:
        test = results["test"]
        print(f"{test['name']}: {test['difference_of']} {format_value(test['difference'])}, 95% CI "
              f"{format_value(test['difference_ci'])}, p = {format_value(test['p_value'])}")  # fmt: skip
    if not results["complete"]:
        done = f"{len(results['seeds_complete'])} of {len(config['seeds'])}"
        print(f"interim: {done} seeds complete. The design reads the test once every seed is; until then "
              "this is progress, not a result.")  # fmt: skip


if __name__ == "__main__":
    main()
