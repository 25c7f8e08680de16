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
rewards within each batch, the valid rate's trend within the rl runs. (The analysis: _study_analysis.py.)

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
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from _common import format_value, machine_info, print_table, write_json
from _lm import (
    BENCH_DIR,
    PATHS,
    ArmResult,
    LMSettings,
    path_policy,
    run_arm,
    tasks_for,
    warm_start,
    warm_start_fingerprint,
)
from _study_analysis import Piece, analyse, planned, progress

SLUGS = ("diabetes-progression", "breast-cancer-diagnosis")
ARMS = ("static", "rl")
STUDY_SEEDS, STUDY_ATTEMPTS = 4, 120
"""The pre-registered study: 4 seeds x 120 attempts per arm and seed, of which at least 96 per seed come
after the first update (it lands after the first batch of 8; the sampler draws 8 ahead)."""
QUICK_SEEDS, QUICK_ATTEMPTS = 1, 24
GRAMMAR_PATH = replace(PATHS["batch"], engine="auto", actors=1)


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


def piece_runner(
    config: Mapping[str, Any], adapter: Path | None, fingerprint: str | None
) -> Callable[[int, str], Piece]:
    """What runs one piece of `config` from the warm start `adapter` (whose fingerprint the piece records):
    the real loop, sandboxes and policy."""
    settings = LMSettings(**config["settings"])
    path = replace(PATHS["new"], **config["path"])
    tasks = tasks_for(config["slugs"])

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


# -- the command -------------------------------------------------------------------------------------------


def main() -> None:
    args = arguments()
    config = study_config(args)
    folder = args.pieces or pieces_folder(config)
    started = time.monotonic()
    adapter = study_warm_start(config)
    fingerprint = adapter and warm_start_fingerprint(adapter)
    pieces = run_study(
        config,
        folder,
        piece_runner(config, adapter, fingerprint),
        stop_after=args.stop_after,
        warm_start=fingerprint,
    )
    results = analyse(pieces, config)
    results["pieces"] = {"folder": str(folder), "saved": len(pieces), "planned": len(planned(config)),
                         "finished": [progress(piece) for piece in pieces.values()]}  # fmt: skip
    results["sitting_wall_s"] = time.monotonic() - started
    write_json(args.json, benchmark="rl_vs_static", machine=machine_info(), config=config,
               targets={}, results=results)  # fmt: skip
    report(results, config)


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
