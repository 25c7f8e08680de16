"""Practicum vs FLAML AutoML: the same wall budget and cores on each bundled competition, held-out scores.

What runs, one competition at a time, one arm after the other (never both at once), with T minutes and n
cores per arm:

  practicum  the real actor–learner loop (rl_core.loop.run_loop, asynchronous) with a fresh GrammarPolicy
             and the PPO Learner, set up as a web run with RunConfig's defaults (the run supervisor's
             learner_config and loop_config: B = 8, lr 0.05, entropy 0.01, its duration weighting, normalized
             reward, improve prompts half the time) and K = n actors, on a LocalExecutor of capacity n:
             every attempt is a real program run in the sandbox (bwrap where it works) on the public files
             and graded on the public half of the hidden answers. Grammar programs are single-threaded, so
             n attempts use n cores. LoopConfig.wall_budget_s = T stops
             sampling at T, and each attempt's time limit is cut to the time left before T (`run_before`):
             a program still running at T is killed and counts as a timeout.
             Its submission: the attempt the loop kept as its best (on the public half).
  flaml      flaml.AutoML(time_budget=T, n_jobs=n, seed=0, its default estimators) fit on public train.csv.
             Features: the columns of test.csv but the id; categorical columns as pandas categoricals
             (FLAML encodes them); each free-text column replaced by its character and word counts (no
             TF-IDF; Practicum's grammar has TF-IDF choices of its own). Classification learns the label
             (the label column, or the argmax of one-hot target columns); probability metrics get
             predict_proba columns, value metrics predictions clipped at the metric's lower bound as the
             grammar programs clip them. FLAML selects models by the competition's own metric on its
             internal validation (`ValidationLoss` grades validation predictions with rl_core.grading).
             Several target columns (multilabel, multi-target regression): one AutoML per column, T split
             evenly. The test predictions are written as a submission in the competition's format.

Measured per competition: both private-half scores and the winner in the metric's direction (a tie counts
for Practicum, whose target is Practicum >= FLAML), the public-half score of Practicum's submission,
Practicum's attempts, valid attempts and median valid (public-half) score, each arm's wall seconds (setup,
fitting, predicting and grading included; FLAML may overrun T, mostly in its final refit on all the
training rows), FLAML's chosen estimator(s) and the 1-minute load average before
each competition (it counts this benchmark's own previous arm too; other work on the machine slows both
arms alike only if it is steady). Target: Practicum >= FLAML on at least half of the competitions
(win_share >= 0.5). That is a count of wins over few competitions and one seed; the summary adds a
two-sided sign test on the competitions one arm won outright, and claims nothing beyond its p-value.

Fairness: what each arm sees of the hidden answers. On Kaggle a submission predicts every test row, a
public leaderboard scores some rows during the competition and a private one scores the rest once, at the
end. So here (bench/_leaderboards.py): before either arm starts, the hidden answers are split by id with a
fixed seed into a public and a private file. Practicum's search is given only the public file as its
answers: every reward the learner updates on, the improve pool, and the best-so-far that becomes its
submission are graded on the public rows of each submission (the normalized reward's baseline is the sample
submission's public-half score). FLAML sees no answers at all: it selects on its own validation split of
train.csv. After both arms have finished, each arm's submission is graded once on the private half, which
neither chose anything on; those are the scores compared. (Earlier versions graded the Practicum arm's
rewards and updates on all the answers, private half included, and selected on the public half only.)

Run from the repository root (the sandbox starts programs with this interpreter's path as given, and a path
through bench/.. does not exist inside it):
  .venv/bin/python bench/vs_automl.py [--quick] [--json PATH] [--minutes T] [--cores N] [--competitions S ...]
  --quick: four competitions (binary, two multiclass, regression) at T = 1 minute, about 10 minutes;
  full: every bundled competition at T = 3 minutes; n defaults to the machine's CPU count.
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import math
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _common import BundledTask, bundled_tasks, machine_info, print_table, target, write_json
from _leaderboards import Halves, OnPublicHalf, half_grade, public_task_files, split_answers

from rl_core.environment import TaskFiles, run_response
from rl_core.executors import LocalExecutor
from rl_core.grading import Grade, GradingSpec, grade_frames
from rl_core.learner import Learner
from rl_core.loop import run_loop
from rl_core.metrics import get_metric, is_better, positive_label
from rl_core.policies.grammar import GrammarPolicy
from rl_core.policies.grammar_space import parse_choices
from rl_core.run_configs import learner_config, loop_config
from rl_core.run_spec import RunConfig
from rl_core.sandbox import isolation_level
from webapp.competitions.bundled import BUNDLED

QUICK = ("breast-cancer-diagnosis", "wine-cultivar", "penguins-species", "computer-prices")
"""binary (roc_auc), multiclass probabilities (log_loss), multiclass labels with categoricals and missing
values (balanced_accuracy), regression with categoricals (mae)."""
MAX_ATTEMPTS = 1_000_000
"""The loop's attempt cap: far above what T allows, so the wall budget alone ends the Practicum arm."""
MIN_TIMEOUT_S = 1.0
"""The shortest time limit `run_before` gives an attempt sampled just before the deadline."""
WORST_LOSS = 1e9
"""What `ValidationLoss` reports for validation predictions the grader rejects."""


# -- the Practicum arm ---------------------------------------------------------------------------------------


def run_before(deadline: float, response: str, task: Any, work_dir: Path, **options: Any) -> Any:
    """rl_core.environment.run_response with the attempt's time limit cut to the seconds left before
    `deadline` (a time.monotonic() value), so no program outlives the wall budget."""
    timeout_s = max(MIN_TIMEOUT_S, min(task.time_limit_s, deadline - time.monotonic()))
    return run_response(response, task, work_dir, timeout_s=timeout_s, **options)


class Scores:
    """An observer that keeps every valid attempt's score (on the public half, as the search graded it)."""

    def __init__(self) -> None:
        self.valid: list[float] = []

    def on_attempt_started(self, attempt_id, sample, started_at) -> None:
        pass

    def on_attempt_finished(self, attempt_id, sample, outcome, finished_at, staleness) -> None:
        if outcome.valid and outcome.score is not None:
            self.valid.append(float(outcome.score))

    def on_update(self, version, metrics) -> None:
        pass


def practicum_search(
    info: Any, files: TaskFiles, budget_s: float, cores: int, scratch: Path, *, attempts: int = MAX_ATTEMPTS
) -> dict[str, Any]:
    """Train a fresh GrammarPolicy on one competition for `budget_s` of wall-clock (or `attempts`, whichever
    ends first) on `cores` sandboxed workers, graded by `files` (the public half: `public_task_files`).

    Returns the search's facts and "submission", the file of the attempt the loop kept as its best (on the
    public half), or None when no attempt was valid; the private half is not read here.
    """
    run = RunConfig(actors=cores)
    policy = GrammarPolicy()
    learner = Learner(policy, learner_config(run))
    config = loop_config(run, attempts=attempts, wall_budget_s=budget_s)
    scores, started = Scores(), time.monotonic()
    executor = LocalExecutor(
        {info.slug: files}, capacity=cores, scratch_root=scratch, reward=run.reward_config(),
        instrument=run.instrument, runner=OnPublicHalf(functools.partial(run_before, started + budget_s)),
    )  # fmt: skip
    try:
        summary = run_loop(
            policy=policy, learner=learner, executor=executor, tasks=[info], config=config, observer=scores
        )
    finally:
        executor.close()
    best = summary.best_by_task.get(info.slug)
    return {
        "submission": scratch / best.attempt_id / "submission" / "submission.csv" if best else None,
        "public": best.score if best else None,
        "attempts": summary.attempts,
        "valid": len(scores.valid),
        "median_valid": statistics.median(scores.valid) if scores.valid else None,
        "updates": summary.updates,
        "family": (parse_choices(best.response) or {}).get("family") if best else None,
        "wall_s": time.monotonic() - started,
    }


# -- the FLAML arm -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One model FLAML fits: its training label, and how its predictions fill submission columns.

    Attributes:
        columns: the submission columns it fills.
        spec: grades those columns alone (the competition's metric on them).
        keep: (N,) bool, the training rows whose label is present.
        y: (kept rows,) the label: a class index into `classes`, or the target value.
        classes: a classifier's class labels; () for a regression.
        column_classes: for probability columns, the class whose probability each column holds.
    """

    columns: tuple[str, ...]
    spec: GradingSpec
    keep: np.ndarray
    y: np.ndarray
    classes: tuple[Any, ...] = ()
    column_classes: tuple[Any, ...] = ()

    def predicted(self, model: Any, X: pd.DataFrame) -> dict[str, np.ndarray]:
        """The submission columns for rows `X`, from a fitted FLAML model (or one of its estimators)."""
        metric = get_metric(self.spec.metric)
        if not self.classes:
            values = np.asarray(model.predict(X), dtype=float)
            low = metric.min_value
            return {self.columns[0]: values if low is None else np.clip(values, low, None)}
        if metric.prediction == "label":
            return {
                self.columns[0]: np.asarray(self.classes, dtype=object)[np.asarray(model.predict(X), int)]
            }
        probabilities = model.predict_proba(X)
        return {
            column: probabilities[:, self.classes.index(label)]
            for column, label in zip(self.columns, self.column_classes, strict=True)
        }

    def truth(self, y: np.ndarray) -> dict[str, np.ndarray]:
        """The answers' columns for labels `y` (class indexes or values), as the grader reads them."""
        if not self.classes:
            return {self.columns[0]: y}
        labels = np.asarray(self.classes, dtype=object)[np.asarray(y, dtype=int)]
        if get_metric(self.spec.metric).prediction == "label":
            return {self.columns[0]: labels}
        return {
            column: (labels == label).astype(float)
            for column, label in zip(self.columns, self.column_classes, strict=True)
        }


def classification(
    columns: Sequence[str], spec: GradingSpec, label: pd.Series, column_classes: Sequence[Any] | None
) -> Problem:
    """A classifier of `label`; probability columns hold `column_classes` (None: the positive label)."""
    keep = label.notna().to_numpy()
    classes, y = np.unique(label[keep].to_numpy(), return_inverse=True)
    labels = classes.tolist()
    return Problem(
        tuple(columns), spec, keep, y, tuple(labels), tuple(column_classes or [positive_label(labels)])
    )


def problems(task: BundledTask, train: pd.DataFrame) -> list[Problem]:
    """The models FLAML fits for `task`: one for a single label, one per column for several targets."""
    features, spec = task.info.features, task.files.grading
    targets = list(spec.target_columns)
    if features["task_type"] in ("binary", "multiclass"):
        label_column = features["label_column"]
        label = train[label_column] if label_column else train[targets].idxmax(axis=1)
        column_classes = [c for _, c in features["class_columns"]] or None
        return [classification(targets, spec, label, column_classes)]
    single = [GradingSpec(spec.metric, spec.id_column, (column,)) for column in targets]
    if features["task_type"] == "multilabel":
        return [
            classification(s.target_columns, s, train[c], None) for s, c in zip(single, targets, strict=True)
        ]
    return [
        Problem((s.target_columns[0],), s, train[c].notna().to_numpy(), train[c].dropna().to_numpy(float))
        for s, c in zip(single, targets, strict=True)
    ]


def flaml_features(
    frame: pd.DataFrame, features: Mapping[str, Any], categories: Mapping[str, list]
) -> pd.DataFrame:
    """FLAML's inputs: numeric columns as they are, categoricals as pandas categoricals, and each text
    column as two counts, its characters and its words."""
    X = frame[features["numeric_columns"]].copy()
    for column in features["categorical_columns"]:
        values = frame[column].where(frame[column].isna(), frame[column].astype(str))
        X[column] = pd.Categorical(values, categories=categories[column])
    for column in features["text_columns"]:
        text = frame[column].fillna("").astype(str)
        X[f"{column}_chars"] = text.str.len()
        X[f"{column}_words"] = text.str.split().str.len()
    return X


class ValidationLoss:
    """A FLAML custom metric: grade a validation split's predictions with rl_core.grading and return the
    loss to minimise (minus the score when higher is better), so FLAML optimises the competition's metric."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.higher_is_better = get_metric(problem.spec.metric).higher_is_better

    def __call__(self, X_val, y_val, estimator, *args: Any, **kwargs: Any) -> tuple[float, dict[str, float]]:
        ids = np.arange(len(y_val))
        answers = submission_frame(self.problem.spec.id_column, ids, self.problem.truth(np.asarray(y_val)))
        try:
            predicted = submission_frame(
                self.problem.spec.id_column, ids, self.problem.predicted(estimator, X_val)
            )
            grade = grade_frames(predicted, answers, self.problem.spec)
        except (ValueError, IndexError):  # a class missing from this fold, or answers with one class
            return WORST_LOSS, {}
        if not grade.valid or grade.score is None:
            return WORST_LOSS, {}
        return (-grade.score if self.higher_is_better else grade.score), {"score": grade.score}


def submission_frame(id_column: str, ids: np.ndarray, columns: Mapping[str, np.ndarray]) -> pd.DataFrame:
    return pd.DataFrame({id_column: ids, **columns})


def fit_flaml(problem: Problem, X: pd.DataFrame, budget_s: float, cores: int) -> Any:
    from flaml import AutoML  # imported only when this arm runs

    automl = AutoML()
    automl.fit(
        X_train=X[problem.keep].reset_index(drop=True), y_train=problem.y,
        task="classification" if problem.classes else "regression", time_budget=budget_s,
        metric=ValidationLoss(problem), n_jobs=cores, seed=0, verbose=0,
    )  # fmt: skip
    return automl


def flaml_arm(task: BundledTask, budget_s: float, cores: int, scratch: Path) -> dict[str, Any]:
    """Fit FLAML on `task`'s public files within `budget_s` and write its submission (graded later)."""
    started, features = time.monotonic(), task.info.features
    train = pd.read_csv(task.files.public_dir / "train.csv")
    test = pd.read_csv(task.files.public_dir / "test.csv")
    categories = {
        column: sorted(set(pd.concat([train[column], test[column]]).dropna().astype(str)))
        for column in features["categorical_columns"]
    }
    X_train, X_test = (flaml_features(f, features, categories) for f in (train, test))
    todo = problems(task, train)
    columns, models = {}, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for problem in todo:
            automl = fit_flaml(problem, X_train, budget_s / len(todo), cores)
            columns |= problem.predicted(automl, X_test)
            models.append(str(automl.best_estimator))
    path = scratch / "flaml-submission.csv"
    submission_frame(
        task.files.grading.id_column, test[task.files.grading.id_column].to_numpy(), columns
    ).to_csv(path, index=False)
    return {"submission": path, "models": ",".join(sorted(set(models))), "wall_s": time.monotonic() - started}


# -- the comparison ------------------------------------------------------------------------------------------


def winner(practicum: float | None, flaml: float | None, *, higher_is_better: bool) -> str:
    """Who scored better: "practicum", "flaml", "tie", or "none" when neither has a valid submission.

    >>> winner(0.2, 0.3, higher_is_better=False), winner(None, 0.3, higher_is_better=True)
    ('practicum', 'flaml')
    """
    if practicum is None:
        return "none" if flaml is None else "flaml"
    if flaml is None:
        return "practicum"
    if practicum == flaml:
        return "tie"
    return "practicum" if is_better(practicum, flaml, higher_is_better=higher_is_better) else "flaml"


def final_grade(submission: Path | None, halves: Halves) -> Grade:
    """An arm's submission graded on the private half: the one read of it, after both searches."""
    if submission is None:
        return Grade(valid=False, score=None, error="The arm wrote no valid submission.")
    return half_grade(submission, halves.private, halves.spec)


def compare(task: BundledTask, budget_s: float, cores: int, scratch: Path) -> dict[str, Any]:
    """Both arms on one competition, Practicum first, then both graded on the private half; one row."""
    slug, higher = task.info.slug, task.info.higher_is_better
    load_1m = os.getloadavg()[0]
    halves = split_answers(task.files.answers_path, task.files.grading, scratch / slug / "halves")
    print(f"[{slug}] practicum for {budget_s:.0f} s on {cores} cores ...", file=sys.stderr, flush=True)
    public_files = public_task_files(task.files, halves)
    practicum = practicum_search(task.info, public_files, budget_s, cores, scratch / slug / "attempts")
    print(f"[{slug}] flaml for {budget_s:.0f} s on {cores} cores ...", file=sys.stderr, flush=True)
    flaml = flaml_arm(task, budget_s, cores, scratch / slug)
    final = {
        "practicum": final_grade(practicum["submission"], halves),
        "flaml": final_grade(flaml["submission"], halves),
    }
    return {
        "competition": slug,
        "metric": task.info.metric,
        "direction": "higher" if higher else "lower",
        "practicum": final["practicum"].score,
        "flaml": final["flaml"].score,
        "winner": winner(final["practicum"].score, final["flaml"].score, higher_is_better=higher),
        "practicum_public": practicum["public"],
        "practicum_attempts": practicum["attempts"],
        "practicum_valid": practicum["valid"],
        "practicum_median": practicum["median_valid"],
        "practicum_wall_s": practicum["wall_s"],
        "flaml_wall_s": flaml["wall_s"],
        "practicum_family": practicum["family"],
        "flaml_models": flaml["models"],
        "practicum_updates": practicum["updates"],
        "practicum_error": final["practicum"].error,
        "flaml_error": final["flaml"].error,
        "load_1m": load_1m,
    }


COLUMNS = (
    "competition", "metric", "direction", "practicum", "flaml", "winner", "practicum_public",
    "practicum_attempts", "practicum_valid", "practicum_median", "practicum_wall_s", "flaml_wall_s",
    "practicum_family", "flaml_models", "load_1m",
)  # fmt: skip


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided sign test: the probability, if each decided competition were a fair coin, of a split at
    least as uneven as `wins` to `losses` (1.0 when nothing was decided).

    >>> sign_test_p(3, 1), sign_test_p(4, 0), sign_test_p(0, 0)
    (0.625, 0.125, 1.0)
    """
    n = wins + losses
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def win_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The results' counts: wins (ties count for Practicum), the share, and the sign test on the
    competitions one arm won outright (ties and "none" left out)."""
    outcomes = [row["winner"] for row in rows]
    wins = sum(o in ("practicum", "tie") for o in outcomes)
    decided = (outcomes.count("practicum"), outcomes.count("flaml"))
    return {
        "competitions": len(rows),
        "seeds": 1,
        "practicum_wins": wins,
        "win_share": wins / len(rows),
        "decided_wins": decided[0],
        "decided_losses": decided[1],
        "sign_test_p": sign_test_p(*decided),
    }


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{len(QUICK)} competitions, 1 minute each")
    parser.add_argument("--json", type=Path, default=None, help="write the results here as JSON")
    parser.add_argument("--minutes", type=float, default=None, help="T per arm and competition")
    parser.add_argument("--cores", type=int, default=None, help="n: actors and FLAML n_jobs (CPU count)")
    parser.add_argument("--competitions", nargs="+", default=None, help="bundled slugs to run")
    return parser.parse_args()


def settings(args: argparse.Namespace, slugs: Sequence[str], minutes: float, cores: int) -> dict[str, Any]:
    """The JSON `config`: what each arm was given."""
    flaml = {"time_budget_s": minutes * 60, "n_jobs": cores, "seed": 0, "estimators": "FLAML's default"}
    flaml |= {"text_columns": "character and word counts", "metric": "the competition's, via rl_core.grading"}
    unused = ("model", "attempts", "sync", "checkpoint_every")  # an LM's; the wall budget; async; none kept
    practicum = {k: v for k, v in asdict(RunConfig(actors=cores)).items() if k not in unused}
    practicum |= {"wall_budget_s": minutes * 60, "attempt_cap": MAX_ATTEMPTS}
    return {
        "quick": args.quick,
        "minutes": minutes,
        "cores": cores,
        "competitions": list(slugs),
        "practicum": practicum,
        "flaml": flaml,
        "answers": "split by id (seed 0): Practicum's search graded on the public half; FLAML sees none; "
        "each arm's submission graded once on the private half, after both arms",
        "isolation": isolation_level(),
    }


def main() -> None:
    args = arguments()
    minutes = args.minutes or (1.0 if args.quick else 3.0)
    slugs = args.competitions or (QUICK if args.quick else [c.slug for c in BUNDLED])
    cores = args.cores or os.cpu_count() or 1
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vs-automl-") as tmp:
        tasks = bundled_tasks(slugs, Path(tmp) / "data")
        rows = [compare(task, minutes * 60, cores, Path(tmp) / "scratch") for task in tasks]
    title = (
        f"Practicum (GrammarPolicy, {cores} actors) vs FLAML AutoML (n_jobs={cores}), "
        f"{minutes:g} min of wall-clock per arm and competition, one seed; practicum/flaml: private-half "
        "scores; Practicum searched, and selected its submission, on the public half alone"
        f" (practicum_public, practicum_median; sandbox: {isolation_level()})"
    )
    print_table(rows, COLUMNS, title=title)
    counts = win_counts(rows)
    targets = {"win_share": target(counts["win_share"], ">=", 0.5)}
    print(
        f"\nPracticum >= FLAML on {counts['practicum_wins']} of {len(rows)} competitions "
        f"({counts['win_share']:.0%}; target >= 50%: {targets['win_share']['met']}); a count of wins. "
        f"Sign test on the decided ones ({counts['decided_wins']} won, {counts['decided_losses']} lost): "
        f"two-sided p = {counts['sign_test_p']:.3g}"
    )
    print(f"{time.perf_counter() - started:.0f} s in all")
    write_json(
        args.json,
        benchmark="vs_automl",
        machine=machine_info() | {"flaml": importlib.metadata.version("flaml")},
        config=settings(args, slugs, minutes, cores),
        targets=targets,
        results={"per_competition": {row["competition"]: row for row in rows}, **counts},
    )


if __name__ == "__main__":
    main()
