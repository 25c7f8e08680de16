"""Practicum vs FLAML AutoML: the same wall budget and cores on each bundled competition, held-out scores.

What runs, one competition at a time, one arm after the other (never both at once), with T minutes and n
cores per arm:

  practicum  the real actor–learner loop (rl_core.loop.run_loop, asynchronous) with a fresh GrammarPolicy
             and the PPO Learner, set up as a web run with RunConfig's defaults (B = 8, lr 0.05, entropy
             0.01, duration-aware, normalized reward, improve prompts half the time) and K = n actors, on a
             LocalExecutor of capacity n: every attempt is a real program run in the sandbox (bwrap where it
             works) on the public files and graded by rl_core.environment on the hidden answers. Grammar
             programs are single-threaded, so n attempts use n cores. LoopConfig.wall_budget_s = T stops
             sampling at T, and each attempt's time limit is cut to the time left before T (`run_before`):
             a program still running at T is killed and counts as a timeout.
             Score: the best valid attempt's held-out score, as the environment graded it.
  flaml      flaml.AutoML(time_budget=T, n_jobs=n, seed=0, its default estimators) fit on public train.csv.
             Features: the columns of test.csv but the id; categorical columns as pandas categoricals
             (FLAML encodes them); each free-text column replaced by its character and word counts (no
             TF-IDF; Practicum's grammar has TF-IDF choices of its own). Classification learns the label
             (the label column, or the argmax of one-hot target columns); probability metrics get
             predict_proba columns, value metrics predictions clipped at the metric's lower bound as the
             grammar programs clip them. FLAML selects models by the competition's own metric on its
             internal validation (`ValidationLoss` grades validation predictions with rl_core.grading).
             Several target columns (multilabel, multi-target regression): one AutoML per column, T split
             evenly. The test predictions are written as a submission in the competition's format and
             graded with rl_core.grading.grade_submission against the same hidden answers.

Measured per competition: both private-half scores and the winner in the metric's direction (a tie counts
for Practicum, whose target is Practicum >= FLAML), both scores on all the answers (Practicum's as its
best-of-N), Practicum's attempts, valid attempts and median valid score, each arm's wall seconds (setup,
fitting, predicting and grading included; FLAML may overrun T, mostly in its final refit on all the
training rows), FLAML's chosen estimator(s) and the 1-minute load average before
each competition (it counts this benchmark's own previous arm too; other work on the machine slows both
arms alike only if it is steady). Target: Practicum >= FLAML on at least half of the competitions
(win_share >= 0.5).

Selection, and the two scores reported for Practicum. The environment grades every attempt on the hidden
answers (that is the reward, as in the paper), so "the best attempt's score" selects on the very answers it
reports: the paper's best-of-N, which FLAML (choosing on its own validation split) cannot do. The target is
therefore measured the way Kaggle ranks: the hidden test ids are split in two halves by a fixed seed (a
"public" and a "private" leaderboard); Practicum's submission is the attempt with the best public-half
score, and both arms are compared on the private half, which selected nothing. The reward the policy
learns from is still the grade on all the answers (the loop's environment is not changed for the
benchmark), so the private half is not wholly unseen by the learner; selection, the larger effect, is
removed. `practicum_best_of_n` (the best full-answers score, the paper's protocol) is shown beside it.

Run from the repository root (the sandbox starts programs with this interpreter's path as given, and a path
through bench/.. does not exist inside it):
  .venv/bin/python bench/vs_automl.py [--quick] [--json PATH] [--minutes T] [--cores N] [--competitions S ...]
  --quick: four competitions (binary, two multiclass, regression) at T = 1 minute, about 10 minutes;
  full: every bundled competition at T = 3 minutes; n defaults to the machine's CPU count.
"""

from __future__ import annotations

import argparse
import importlib.metadata
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

from rl_core.environment import run_response
from rl_core.executors import LocalExecutor
from rl_core.features import positive_label
from rl_core.grading import GradingSpec, grade_frames, grade_submission
from rl_core.learner import Learner, LearnerConfig
from rl_core.loop import LoopConfig, run_loop
from rl_core.metrics import get_metric, is_better
from rl_core.policies.grammar import GrammarPolicy
from rl_core.policies.grammar_space import parse_choices
from rl_core.sandbox import isolation_level
from webapp.competitions.bundled import BUNDLED
from webapp.runs.config import RunConfig

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


@dataclass(frozen=True)
class Leaderboards:
    """The hidden answers split in two halves by id, Kaggle-style: select on `public`, report on `private`."""

    answers: pd.DataFrame
    spec: GradingSpec
    public_ids: frozenset[str]

    @classmethod
    def split(cls, answers_path: Path, spec: GradingSpec, seed: int = 0) -> Leaderboards:
        answers = pd.read_csv(answers_path, dtype=str, keep_default_na=False)
        ids = answers[spec.id_column].to_numpy()
        chosen = np.random.default_rng(seed).permutation(len(ids))[: len(ids) // 2]
        return cls(answers, spec, frozenset(ids[chosen]))

    def score(self, submission_path: Path, *, public: bool) -> float | None:
        """The submission's score on one half (None when it does not grade)."""
        submission = pd.read_csv(submission_path, dtype=str, keep_default_na=False)
        return grade_frames(self._half(submission, public), self._half(self.answers, public), self.spec).score

    def _half(self, frame: pd.DataFrame, public: bool) -> pd.DataFrame:
        inside = frame[self.spec.id_column].isin(self.public_ids)
        return frame[inside if public else ~inside]


class HalfScores:
    """A LocalExecutor runner around `run_before` that grades each valid submission on both halves."""

    def __init__(self, deadline: float, boards: Leaderboards) -> None:
        self.deadline, self.boards = deadline, boards
        self.by_attempt: dict[str, tuple[float | None, float | None]] = {}

    def __call__(self, response: str, task: Any, work_dir: Path, **options: Any) -> Any:
        outcome = run_before(self.deadline, response, task, work_dir, **options)
        submission = work_dir / "submission" / "submission.csv"
        if outcome.valid and submission.is_file():
            halves = (self.boards.score(submission, public=True), self.boards.score(submission, public=False))
            self.by_attempt[work_dir.name] = halves
        return outcome

    def selected_private(self, higher_is_better: bool) -> float | None:
        """The private-half score of the attempt with the best public-half score."""
        graded = [(pub, priv) for pub, priv in self.by_attempt.values() if pub is not None]
        if not graded:
            return None
        best = graded[0]
        for candidate in graded[1:]:
            if is_better(candidate[0], best[0], higher_is_better=higher_is_better):
                best = candidate
        return best[1]


class Scores:
    """An observer that keeps every valid attempt's held-out score."""

    def __init__(self) -> None:
        self.valid: list[float] = []

    def on_attempt_started(self, attempt_id, sample, started_at) -> None:
        pass

    def on_attempt_finished(self, attempt_id, sample, outcome, finished_at, staleness) -> None:
        if outcome.valid and outcome.score is not None:
            self.valid.append(float(outcome.score))

    def on_update(self, version, metrics) -> None:
        pass


def practicum_arm(task: BundledTask, budget_s: float, cores: int, scratch: Path) -> dict[str, Any]:
    """Train a fresh GrammarPolicy on `task` for `budget_s` of wall-clock on `cores` sandboxed workers."""
    run = RunConfig(actors=cores)
    policy = GrammarPolicy()
    learner = Learner(
        policy,
        LearnerConfig(
            objective=run.objective, lr=run.learning_rate, entropy_coef=run.entropy_coef,
            duration_aware=run.duration_aware, advantage=run.advantage, seed=run.seed,
        ),
    )  # fmt: skip
    config = LoopConfig(
        attempts=MAX_ATTEMPTS, actors=cores, batch=run.batch, improve_prob=run.improve_prob,
        seed=run.seed, wall_budget_s=budget_s,
    )  # fmt: skip
    scores, started = Scores(), time.monotonic()
    halves = HalfScores(started + budget_s, Leaderboards.split(task.files.answers_path, task.files.grading))
    executor = LocalExecutor(
        {task.info.slug: task.files}, capacity=cores, scratch_root=scratch,
        reward=run.reward_config(), instrument=run.instrument, runner=halves,
    )  # fmt: skip
    try:
        summary = run_loop(
            policy=policy, learner=learner, executor=executor, tasks=[task.info], config=config,
            observer=scores,
        )  # fmt: skip
    finally:
        executor.close()
    best = summary.best_by_task.get(task.info.slug)
    choices = parse_choices(best.response) if best else None
    return {
        "score": halves.selected_private(task.info.higher_is_better),
        "best_of_n": best.score if best else None,
        "attempts": summary.attempts,
        "valid": len(scores.valid),
        "median_valid": statistics.median(scores.valid) if scores.valid else None,
        "updates": summary.updates,
        "family": choices.get("family") if choices else None,
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
    """Fit FLAML on `task`'s public files within `budget_s`, write its submission, grade it."""
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
    grade = grade_submission(path, task.files.answers_path, task.files.grading)
    boards = Leaderboards.split(task.files.answers_path, task.files.grading)
    return {
        "score": boards.score(path, public=False) if grade.valid else None,
        "score_all": grade.score,
        "error": grade.error,
        "models": ",".join(sorted(set(models))),
        "wall_s": time.monotonic() - started,
    }


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


def compare(task: BundledTask, budget_s: float, cores: int, scratch: Path) -> dict[str, Any]:
    """Both arms on one competition, Practicum first; one row of the table."""
    slug, higher = task.info.slug, task.info.higher_is_better
    load_1m = os.getloadavg()[0]
    print(f"[{slug}] practicum for {budget_s:.0f} s on {cores} cores ...", file=sys.stderr, flush=True)
    practicum = practicum_arm(task, budget_s, cores, scratch / slug / "attempts")
    print(f"[{slug}] flaml for {budget_s:.0f} s on {cores} cores ...", file=sys.stderr, flush=True)
    (scratch / slug).mkdir(parents=True, exist_ok=True)
    flaml = flaml_arm(task, budget_s, cores, scratch / slug)
    return {
        "competition": slug,
        "metric": task.info.metric,
        "direction": "higher" if higher else "lower",
        "practicum": practicum["score"],
        "flaml": flaml["score"],
        "winner": winner(practicum["score"], flaml["score"], higher_is_better=higher),
        "practicum_best_of_n": practicum["best_of_n"],
        "flaml_all": flaml["score_all"],
        "practicum_attempts": practicum["attempts"],
        "practicum_valid": practicum["valid"],
        "practicum_median": practicum["median_valid"],
        "practicum_wall_s": practicum["wall_s"],
        "flaml_wall_s": flaml["wall_s"],
        "practicum_family": practicum["family"],
        "flaml_models": flaml["models"],
        "practicum_updates": practicum["updates"],
        "flaml_error": flaml["error"],
        "load_1m": load_1m,
    }


COLUMNS = (
    "competition", "metric", "direction", "practicum", "flaml", "winner", "practicum_best_of_n", "flaml_all",
    "practicum_attempts",
    "practicum_valid", "practicum_median", "practicum_wall_s", "flaml_wall_s", "practicum_family",
    "flaml_models", "load_1m",
)  # fmt: skip


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
    wins = sum(row["winner"] in ("practicum", "tie") for row in rows)
    share = wins / len(rows)
    title = (
        f"Practicum (GrammarPolicy, {cores} actors) vs FLAML AutoML (n_jobs={cores}), "
        f"{minutes:g} min of wall-clock per arm and competition; practicum/flaml: private-half scores, "
        "Practicum's submission selected on the public half; best_of_n/flaml_all: on all the answers"
        f" (sandbox: {isolation_level()})"
    )
    print_table(rows, COLUMNS, title=title)
    targets = {"win_share": target(share, ">=", 0.5)}
    met = targets["win_share"]["met"]
    print(f"\nPracticum >= FLAML on {wins} of {len(rows)} ({share:.0%}); target >= 50%: {met}")
    print(f"{time.perf_counter() - started:.0f} s in all")
    write_json(
        args.json,
        benchmark="vs_automl",
        machine=machine_info() | {"flaml": importlib.metadata.version("flaml")},
        config=settings(args, slugs, minutes, cores),
        targets=targets,
        results={
            "per_competition": {row["competition"]: row for row in rows},
            "practicum_wins": wins,
            "competitions": len(rows),
            "win_share": share,
        },
    )


if __name__ == "__main__":
    main()
