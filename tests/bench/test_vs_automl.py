"""bench/vs_automl.py: the Practicum arm searches on the public half of the answers and never opens the
private half (nor the whole answers file) before the final grading.

Every file the test process opens is recorded by an audit hook (`open` events, from every thread: the
executor grades in its worker threads); the sandboxed programs are separate processes that see only the
public files."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rl_core.features import task_features
from rl_core.grading import GradingSpec, grade_frames
from rl_core.policy import TaskInfo
from rl_core.testing import opened_files

BENCH = Path(__file__).resolve().parents[2] / "bench"
N_TRAIN, N_TEST = 80, 40


@pytest.fixture(scope="module")
def bench():
    """The modules of bench/ as the benchmarks import each other (bench/ first on sys.path)."""
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("vs_automl"), importlib.import_module("_leaderboards")
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def competition(tmp_path_factory):
    """A tiny binary competition (ROC AUC): its public folder and its private/answers.csv."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(N_TRAIN + N_TEST, 2))
    frame = pd.DataFrame({"id": np.arange(len(x)), "a": x[:, 0], "b": x[:, 1]})
    frame["y"] = (x[:, 0] + 0.5 * rng.normal(size=len(x)) > 0).astype(int)
    root = tmp_path_factory.mktemp("comp")
    public, private = root / "public", root / "private"
    public.mkdir()
    private.mkdir()
    frame[:N_TRAIN].to_csv(public / "train.csv", index=False)
    frame[N_TRAIN:][["id", "a", "b"]].to_csv(public / "test.csv", index=False)
    frame[N_TRAIN:][["id"]].assign(y=0.5).to_csv(public / "sample_submission.csv", index=False)
    frame[N_TRAIN:][["id", "y"]].to_csv(private / "answers.csv", index=False)
    return public, private / "answers.csv"


@pytest.fixture(scope="module")
def searched(bench, competition, tmp_path_factory):
    """A real Practicum search (three sandboxed GrammarPolicy attempts) on the competition's public half,
    with every file the process opened meanwhile: (search, opened paths, halves, answers path, files)."""
    vs_automl, leaderboards = bench
    public_dir, answers = competition
    files = task_files(public_dir, answers)
    halves = leaderboards.split_answers(answers, files.grading, tmp_path_factory.mktemp("halves"))
    search_files = leaderboards.public_task_files(files, halves)
    with opened_files() as opened:
        search = vs_automl.practicum_search(
            task_info(public_dir), search_files, budget_s=300, cores=1,
            scratch=tmp_path_factory.mktemp("attempts"), attempts=3,
        )  # fmt: skip
    return search, opened, halves, answers, files


def task_files(public: Path, answers: Path):
    from rl_core.environment import TaskFiles

    spec = GradingSpec("roc_auc", "id", ("y",))
    return TaskFiles("comp", public, answers, spec, time_limit_s=60, memory_mb=2048, baseline_score=0.5)


def task_info(public: Path) -> TaskInfo:
    features = task_features(public, id_column="id", target_columns=("y",), metric="roc_auc")
    return TaskInfo(
        slug="comp", description="A tiny test task.", metric="roc_auc", higher_is_better=True,
        id_column="id", target_columns=("y",), time_limit_s=60.0, features=features,
    )  # fmt: skip


@pytest.mark.slow
def test_the_practicum_search_never_opens_the_private_half_or_the_whole_answers(searched):
    search, opened, halves, answers, _ = searched
    assert search["valid"] >= 1, "no attempt was graded, so the search proves nothing"
    assert halves.private.resolve() not in opened
    assert answers.resolve() not in opened
    assert halves.public.resolve() in opened


@pytest.mark.slow
def test_the_score_the_search_kept_for_its_submission_is_its_public_half_score(searched):
    search, _, halves, _, files = searched
    submission = pd.read_csv(search["submission"], dtype=str)
    public = pd.read_csv(halves.public, dtype=str)
    expected = grade_frames(submission[submission["id"].isin(public["id"])], public, files.grading).score
    assert search["public"] == pytest.approx(expected)
    assert search["median_valid"] is not None


def test_the_halves_split_the_answers_by_id_with_no_id_in_both(bench, competition, tmp_path):
    _, leaderboards = bench
    _, answers = competition
    halves = leaderboards.split_answers(answers, GradingSpec("roc_auc", "id", ("y",)), tmp_path / "halves")
    public, private = (set(pd.read_csv(path)["id"]) for path in (halves.public, halves.private))
    assert not public & private
    assert public | private == set(pd.read_csv(answers)["id"])
    assert len(public) == N_TEST // 2


def test_a_full_submission_is_graded_on_the_rows_of_one_half_only(bench, competition, tmp_path):
    _, leaderboards = bench
    _, answers = competition
    spec = GradingSpec("accuracy", "id", ("y",))
    halves = leaderboards.split_answers(answers, spec, tmp_path / "halves")
    truth = pd.read_csv(answers)
    public = truth["id"].isin(pd.read_csv(halves.public)["id"])
    truth.assign(y=np.where(public, truth["y"], 1 - truth["y"])).to_csv(
        tmp_path / "submission.csv", index=False
    )
    assert leaderboards.half_grade(tmp_path / "submission.csv", halves.public, spec).score == 1.0
    assert leaderboards.half_grade(tmp_path / "submission.csv", halves.private, spec).score == 0.0
