"""Clean rewards against hidden-answer rewards (issue 28): the same budget and seeds with both reward sources.

What runs: for each bundled competition, seed and arm, one `manage.py train` in this process (call_command,
grammar policy, the run settings' defaults but the budget below), its attempts in sandboxes on this machine:
  hidden      --reward-source hidden: every attempt is scored on the competition's hidden answers (the
              paper's setup: test feedback); the run's result is its best hidden score.
  validation  --reward-source validation: every attempt is scored on a seeded validation split of the
              labelled training table (the run's seed seeds the split); at the end the chosen program (best
              on validation) runs once on the real public data and is graded once on the hidden answers;
              that grade is the run's result.
Both arms of a (competition, seed) pair share the seed, so they sample the same first programs; they part
once their rewards differ. Competitions: wine-cultivar (log loss, lower is better), breast-cancer-diagnosis
(ROC AUC), diabetes-progression (R²): three metrics, both directions, each with a validation split.

Reported, per competition and arm: the final hidden-answer grade (`train`'s final_score) per seed, their mean
and n. Validation arm: the optimism of selecting on validation, the chosen program's validation score minus
its hidden grade, sign-adjusted so that > 0 means validation promised more than the hidden answers gave
(selection on a 20 % split, and the split's own noise and its shift from the test rows, together).
Hidden arm: it has no held-out grade. Its result is the best of its attempts *on the hidden answers
themselves*, so it is optimistic by construction (the maximum of noisy scores, selected on the numbers it
reports); what the bench can show instead is its selection gain, the best hidden score minus the median
hidden score of its valid attempts (how much of its number the choice among attempts on the test answers
adds; a held-out grade would be lower by an unknown part of it).
The test, paired by (competition, seed): d = s * (validation final − hidden final), s = +1 where higher is
better and −1 where lower is, divided by the competition's SD of the final grades of its complete pairs
(both arms pooled), so competitions of different scales pool; scipy's Wilcoxon signed-rank test (two-sided,
zero differences dropped) on those d. d < 0: the clean result is worse than the hidden arm's number, which
is what selection on the test answers predicts; it does not say that hidden rewards train better agents.
Pairs where either arm has no final grade (no valid program) are left out and counted.

Resumable: the JSON (--json PATH; default var/bench/clean_vs_hidden.json, with --quick
var/bench/clean_vs_hidden_quick.json) is rewritten after every run; rerun with the same config, finished
cells are kept and skipped; with another config, it refuses rather than overwrite. The database is
PostgreSQL's practicum_bench_clean (created when missing, migrated, emptied of runs and competitions at
start; the competitions are seeded again into a temporary data dir).

Run from the repository root (the sandbox starts programs with this interpreter's path as given):
  .venv/bin/python bench/clean_vs_hidden.py [--quick] [--json PATH] [--seeds N] [--attempts N]
  --quick: 3 competitions x 2 seeds x 2 arms, 8 attempts, K 2, B 2 (135 s on 2 cores);
  full: 10 seeds, 32 attempts, K 2, B 4.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

from _common import ROOT, bench_arguments, format_value, machine_info, print_table, write_json

SLUGS = ("wine-cultivar", "breast-cancer-diagnosis", "diabetes-progression")
ARMS = ("hidden", "validation")
DATABASE_URL = "postgresql://practicum:practicum@127.0.0.1:5432/practicum_bench_clean"
DEFAULT_JSON = {
    False: ROOT / "var/bench/clean_vs_hidden.json",
    True: ROOT / "var/bench/clean_vs_hidden_quick.json",
}
SIGNIFICANCE = 0.05
SUMMARY_FIELDS = ("run_id", "status", "attempts", "valid_rate", "best_score", "final_score", "final_valid")
"""What a cell keeps of `train`'s summary (besides its wall_s)."""
HIDDEN_NOTE = (
    "The hidden arm's number is not a held-out estimate: it is the best of its attempts on the hidden "
    "answers themselves, chosen on those answers, so it is optimistic by construction. Its selection gain "
    "(best minus the median valid attempt, both on the hidden answers) is shown instead of a held-out gap."
)


@dataclass(frozen=True)
class Budget:
    """One run's budget: attempts in all, K attempts in flight, B attempts per policy update."""

    attempts: int
    actors: int
    batch: int


QUICK, FULL = Budget(attempts=8, actors=2, batch=2), Budget(attempts=32, actors=2, batch=4)


# -- the pure parts: cells, resume, pairing, normalisation, the test --------------------------------------


def cell_key(slug: str, seed: int, arm: str) -> str:
    """The JSON's name for one run of the study.

    >>> cell_key("wine-cultivar", 3, "hidden")
    'wine-cultivar/3/hidden'
    """
    return f"{slug}/{seed}/{arm}"


def planned_cells(config: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    """(slug, seed, arm) in the order they run: seed by seed, both arms of a pair one after the other, so an
    interrupted study leaves complete pairs."""
    return [(slug, seed, arm) for seed in config["seeds"] for slug in config["slugs"] for arm in ARMS]


def resumed(path: Path, config: Mapping[str, Any]) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """(the finished cells, the earlier sessions) that `path` holds for this `config` (both empty when there
    is no file). ValueError, naming the file, when it holds another config's results: they are not
    overwritten."""
    if not path.exists():
        return {}, []
    document = json.loads(path.read_text())
    if document.get("config") != json.loads(json.dumps(config)):
        raise ValueError(
            f"{path} holds results of another config ({document.get('config')}); pass another --json PATH, "
            "or delete it to start over."
        )
    results = document.get("results", {})
    return dict(results.get("cells", {})), list(results.get("sessions", []))


def sign(higher_is_better: bool) -> float:
    return 1.0 if higher_is_better else -1.0


@dataclass(frozen=True)
class Pair:
    """Both arms' final hidden-answer grades for one (competition, seed); None: that arm had none."""

    slug: str
    seed: int
    validation: float | None
    hidden: float | None

    @property
    def complete(self) -> bool:
        return self.grades is not None

    @property
    def grades(self) -> tuple[float, float] | None:
        """(validation, hidden) when both arms have a grade."""
        if self.validation is None or self.hidden is None:
            return None
        return (self.validation, self.hidden)


def pairs(cells: Mapping[str, Mapping[str, Any]], config: Mapping[str, Any]) -> list[Pair]:
    """Each (competition, seed) whose two arms both finished, in the planned order."""
    found = []
    for seed in config["seeds"]:
        for slug in config["slugs"]:
            validation, hidden = (cells.get(cell_key(slug, seed, arm)) for arm in ("validation", "hidden"))
            if validation and hidden:
                found.append(Pair(slug, seed, validation["final_score"], hidden["final_score"]))
    return found


def normalised_differences(pairs: Sequence[Pair], higher: Mapping[str, bool]) -> list[float]:
    """s * (validation − hidden) / SD for each complete pair, in order: s = +1 where the competition's metric
    is higher-is-better, −1 otherwise; SD = the sample SD of that competition's final grades over its complete
    pairs, both arms pooled (a competition whose grades are all equal gives 0 differences).

    >>> found = [Pair("a", 0, 1.0, 3.0), Pair("a", 1, 3.0, 1.0), Pair("a", 2, None, 2.0)]
    >>> [round(d, 3) for d in normalised_differences(found, {"a": False})]  # SD of 1, 3, 3, 1: 1.155
    [1.732, -1.732]
    """
    complete = [(p.slug, *p.grades) for p in pairs if p.grades is not None]
    spread = {
        slug: statistics.stdev([g for s, v, h in complete if s == slug for g in (v, h)])
        for slug in {s for s, _, _ in complete}
    }
    return [0.0 if v == h else sign(higher[s]) * (v - h) / spread[s] for s, v, h in complete]


def wilcoxon_test(differences: Sequence[float]) -> dict[str, Any]:
    """scipy's two-sided Wilcoxon signed-rank test that `differences` centre on 0, zero differences dropped
    (zero_method="wilcox"; the exact distribution for fewer than 50 and no ties, scipy's "auto").

    Returns {"test", "statistic", "p", "n" (differences given), "n_nonzero"}; with no nonzero difference
    the statistic is None and p 1.0 (nothing to test).

    >>> wilcoxon_test([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])["p"]
    0.03125
    """
    from scipy.stats import wilcoxon

    nonzero = [d for d in differences if d != 0]
    row = {"test": "Wilcoxon signed-rank (two-sided)", "n": len(differences), "n_nonzero": len(nonzero)}
    if not nonzero:
        return row | {"statistic": None, "p": 1.0}
    result = wilcoxon(nonzero, zero_method="wilcox", alternative="two-sided")
    return row | {"statistic": float(result.statistic), "p": float(result.pvalue)}


def signed_gaps(cells: Sequence[Mapping[str, Any]], first: str, second: str, higher: bool) -> list[float]:
    """s * (cell[first] − cell[second]) for the cells that have both (s as in `normalised_differences`)."""
    return [
        sign(higher) * (c[first] - c[second]) for c in cells if c[first] is not None and c[second] is not None
    ]


def mean_or_none(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


# -- one cell: a real run --------------------------------------------------------------------------------


def run_cell(slug: str, seed: int, arm: str, budget: Budget) -> dict[str, Any]:
    """Train once (`manage.py train` in this process, on its configured database) and return the cell's
    record: train's summary fields and the valid training attempts' median score (on the arm's answers)."""
    from django.core.management import call_command

    from webapp.runs import selectors
    from webapp.runs.models import Run

    out, load_1m = StringIO(), os.getloadavg()[0]
    with contextlib.redirect_stderr(StringIO()):  # train's progress bar writes to sys.stderr itself
        call_command(
            "train", slug, "--seed", str(seed), "--reward-source", arm, "--attempts", str(budget.attempts),
            "--actors", str(budget.actors), "--batch", str(budget.batch), stdout=out, stderr=StringIO(),
        )  # fmt: skip
    summary = json.loads(out.getvalue())
    run = Run.objects.get(id=summary["run_id"])
    trained = run.attempts.exclude(prompt_kind=selectors.FINAL_KIND).exclude(
        prompt_kind__startswith=selectors.EVAL_PREFIX
    )
    scores = [s for s in trained.filter(valid=True).values_list("score", flat=True) if s is not None]
    chosen = run.best_attempt  # a validation run's final attempt reruns this one's program (parent_key)
    return {
        "slug": slug,
        "seed": seed,
        "arm": arm,
        **{k: summary[k] for k in (*SUMMARY_FIELDS, "wall_s")},
    } | {
        "median_valid_score": statistics.median(scores) if scores else None,
        "chosen_family": chosen.family if chosen else None,
        "load_1m": load_1m,
    }


# -- the study -------------------------------------------------------------------------------------------


def configure(data_dir: Path) -> None:
    """Point this process at the bench database (created when missing, migrated) and `data_dir`; empty the
    database of runs and competitions so the competitions are seeded afresh into `data_dir`."""
    os.environ.update(
        {"DJANGO_SETTINGS_MODULE": "webapp.settings", "DATABASE_URL": DATABASE_URL,
         "PRACTICUM_DATA_DIR": str(data_dir), "LOG_LEVEL": "WARNING"}
    )  # fmt: skip
    os.environ.pop("REDIS_URL", None)  # the in-process channel layer: nobody watches these runs
    ensure_database()
    import django

    django.setup()
    from django.core.management import call_command

    from webapp.competitions.models import Competition
    from webapp.runs.models import Run

    call_command("migrate", verbosity=0)
    Run.objects.all().delete()
    Competition.objects.all().delete()


def ensure_database() -> None:
    """Create the bench database on the PostgreSQL server when it does not exist yet."""
    import psycopg

    server, name = DATABASE_URL.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            connection.execute(f'CREATE DATABASE "{name}"')


def seed_competitions(slugs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Seed each bundled competition; slug -> {"metric", "higher_is_better"}. SystemExit naming a
    competition that has no validation split."""
    from rl_core.metrics import get_metric
    from webapp.competitions.management.commands.seed_competitions import seed_one
    from webapp.competitions.selectors import competition_validation_refusal

    metrics = {}
    for slug in slugs:
        competition = seed_one(slug)
        refusal = competition_validation_refusal(competition=competition)
        if refusal:
            raise SystemExit(f"{slug}: no validation split ({refusal}); choose another competition.")
        metrics[slug] = {
            "metric": competition.metric,
            "higher_is_better": get_metric(competition.metric).higher_is_better,
        }
    return metrics


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0], seeds="seeds per arm", attempts="attempts per run")
    budget = QUICK if args.quick else FULL
    budget = Budget(args.attempts or budget.attempts, budget.actors, budget.batch)
    seeds = list(range(args.seeds or (2 if args.quick else 10)))
    config = {"slugs": list(SLUGS), "seeds": seeds, "arms": list(ARMS), "policy": "grammar", **vars(budget)}
    path = args.json or DEFAULT_JSON[args.quick]
    try:
        cells, sessions = resumed(path, config)
    except ValueError as error:
        raise SystemExit(str(error)) from None
    started = time.monotonic()
    session: dict[str, Any] = {"started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cells_run": 0}
    sessions.append(session)
    with tempfile.TemporaryDirectory(prefix="clean_vs_hidden-") as tmp:
        configure(Path(tmp))
        metrics = seed_competitions(config["slugs"])
        for slug, seed, arm in planned_cells(config):
            if cell_key(slug, seed, arm) in cells:
                continue
            print(f"[{slug} seed {seed}] {arm} ...", file=sys.stderr, flush=True)
            cells[cell_key(slug, seed, arm)] = run_cell(slug, seed, arm, budget)
            session |= {"wall_s": time.monotonic() - started, "cells_run": session["cells_run"] + 1}
            save(path, config, cells, metrics, sessions)
    session["wall_s"] = time.monotonic() - started
    report(save(path, config, cells, metrics, sessions), config)


def save(
    path: Path, config: dict[str, Any], cells: dict[str, Any], metrics: dict[str, Any], sessions: list[Any]
) -> dict[str, Any]:
    """The results so far, written at once: an interrupted study keeps every finished cell. `sessions`:
    {"started_at", "wall_s", "cells_run"} of each pass over the study, this one last."""
    results = {"cells": cells, "metrics": metrics, "sessions": sessions} | summarise(cells, config, metrics)
    write_json(
        path, benchmark="clean_vs_hidden", machine=machine_info(), config=config, targets={}, results=results
    )
    return results


def summarise(
    cells: Mapping[str, Any], config: Mapping[str, Any], metrics: Mapping[str, Any]
) -> dict[str, Any]:
    """Per arm and competition the final grades; the validation arm's optimism, the hidden arm's selection
    gain; the paired test over all complete pairs."""
    higher = {slug: m["higher_is_better"] for slug, m in metrics.items()}
    per_competition = {}
    for slug in config["slugs"]:
        arms = {arm: [c for c in cells.values() if c["slug"] == slug and c["arm"] == arm] for arm in ARMS}
        per_competition[slug] = {arm: arm_summary(arms[arm]) for arm in ARMS} | {
            "validation_optimism": signed_gaps(arms["validation"], "best_score", "final_score", higher[slug]),
            "hidden_selection_gain": signed_gaps(
                arms["hidden"], "best_score", "median_valid_score", higher[slug]
            ),
        }
    found = pairs(cells, config)
    differences = normalised_differences(found, higher)
    test = wilcoxon_test(differences) | {
        "pairs": len(found),
        "pairs_left_out": [f"{p.slug}/{p.seed}" for p in found if not p.complete],
        "differences": differences,
        "mean_difference": mean_or_none(differences),
        "validation_better": sum(d > 0 for d in differences),
        "hidden_better": sum(d < 0 for d in differences),
    }
    return {"per_competition": per_competition, "test": test, "note": HIDDEN_NOTE}


def arm_summary(cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    ordered = sorted(cells, key=lambda c: c["seed"])
    finals = [c["final_score"] for c in ordered]
    graded = [f for f in finals if f is not None]
    return {
        "n": len(ordered),
        "n_graded": len(graded),
        "final_by_seed": finals,
        "final_mean": mean_or_none(graded),
    }


def report(results: Mapping[str, Any], config: Mapping[str, Any]) -> None:
    rows = []
    for slug, entry in results["per_competition"].items():
        metric = results["metrics"][slug]
        row = {
            "competition": slug,
            "metric": metric["metric"],
            "better": "higher" if metric["higher_is_better"] else "lower",
        }
        for arm in ARMS:
            row[f"{arm} n"] = entry[arm]["n_graded"]
            row[f"{arm} final mean"] = entry[arm]["final_mean"]
            row[f"{arm} per seed"] = listed(entry[arm]["final_by_seed"])
        row["val. optimism mean"] = mean_or_none(entry["validation_optimism"])
        row["val. optimism per seed"] = listed(entry["validation_optimism"])
        row["hidden sel. gain mean"] = mean_or_none(entry["hidden_selection_gain"])
        rows.append(row)
    title = (
        f"final hidden-answer grade per arm ({len(config['seeds'])} seeds, {config['attempts']} attempts, "
        f"K {config['actors']}, B {config['batch']}); > 0: the number chosen on looked better"
    )
    print_table(rows, list(rows[0]), title=title)
    test = results["test"]
    shown = ("test", "n", "n_nonzero", "statistic", "p", "mean_difference", "validation_better")
    line = {k: listed(test[k]) for k in (*shown, "hidden_better", "pairs_left_out")}
    print_table(
        [line], list(line), title="validation final - hidden final, sign-adjusted, / competition SD, paired"
    )
    reading = "no measurable difference" if test["p"] >= SIGNIFICANCE else "a measurable difference"
    print(f"\n{reading} at p < {SIGNIFICANCE}. {HIDDEN_NOTE}")
    cores, sessions, cells = machine_info()["cpu_count"], results["sessions"], results["cells"]
    this, total_s = sessions[-1], sum(s["wall_s"] for s in sessions)
    runs_s = sum(c["wall_s"] for c in cells.values())
    print(
        f"machine: {cores} cores; this session {this['wall_s']:.0f} s wall ({this['cells_run']} of "
        f"{len(cells)} runs); {len(sessions)} session(s) in all {total_s:.0f} s; "
        f"the runs' own wall {runs_s:.0f} s"
    )


def listed(value: Any) -> Any:
    """A list as one short cell."""
    return ", ".join(format_value(v) for v in value) if isinstance(value, list) else value


if __name__ == "__main__":
    main()
