"""The paper's twelve MLE-bench competitions, prepared as MLE-bench prepares them, import and grade as
MLE-bench's graders do.

For each competition, paper12_text / paper12_files write small synthetic raw data of the real shape and
run that competition's prepare.py logic; the folder imports through `services.competition_import` (what
``manage.py import_competition`` calls) and submissions are graded by ``manage.py grade``. Expected scores
come from paper12_graders, a rewrite of each grade.py with scikit-learn, SciPy and numpy; a submission
that grader refuses must be invalid here, with the grader's reason in the error.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command

from webapp.competitions import services

pytestmark = pytest.mark.django_db


import paper12_files as files  # noqa: E402  # helpers beside this file (on sys.path: conftest.py)
import paper12_graders as graders  # noqa: E402
import paper12_text as text  # noqa: E402

Mutation = Callable[[pd.DataFrame], pd.DataFrame]


@dataclass(frozen=True)
class Case:
    """One competition: how it is built, how Practicum must map it, and submissions to try."""

    cid: str
    build: Callable[[Path], Path]
    metric: str
    id_column: str
    targets: tuple[str, ...]
    good: Mutation  # answers (restricted to id + targets) -> a good, imperfect submission
    refused: tuple[tuple[str, Mutation, str], ...]  # (what, good submission -> bad one, reason regex)
    accepted: tuple[tuple[str, Mutation], ...] = field(default=())  # variants the grader still scores


def shifted(values: pd.DataFrame, columns: list[str], step: float) -> pd.DataFrame:
    """Probabilities pulled towards 0.5 and wiggled by row, so they stay in (0, 1) and rank imperfectly."""
    wiggle = step * (np.arange(len(values)) % 3)[:, None]
    return values.assign(**dict(zip(columns, (0.5 * values[columns] + 0.1 + wiggle).T.values, strict=True)))


def normalised(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Rows of class probabilities (one-hot answers smoothed), each summing to 1."""
    smoothed = 0.7 * frame[columns].to_numpy(dtype=float) + 0.3 / len(columns)
    smoothed[::2] = smoothed[::2, ::-1]  # every other row leans the wrong way
    return frame.assign(**dict(zip(columns, smoothed.T, strict=True)))


def with_value(column: str, row: int, value: object) -> Mutation:
    def mutate(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.copy()
        frame[column] = frame[column].astype(object)
        frame.iloc[row, frame.columns.get_loc(column)] = value
        return frame

    return mutate


def drop_row(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.iloc[1:]


def plus_column(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(notes="extra")


def rows_off_by(delta: float, columns: list[str]) -> Mutation:
    def mutate(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.assign(**{columns[0]: frame[columns[0]] + delta})

    return mutate


PLANT, LMSYS = files.PLANT_CLASSES, ["winner_model_a", "winner_model_b", "winner_tie"]
SPOOKY, LEAF = ["EAP", "HPL", "MWS"], files.LEAF_CLASSES
NOMAD = ["formation_energy_ev_natom", "bandgap_energy_ev"]
MISSING_ROW = ("a missing row", drop_row, r"has \d+ rows where the answers have \d+")
PROBABILITIES = r"must hold probabilities in \[0, 1\]"
ROW_SUMS = r"Each row of probabilities must sum to 1 within 1e-6"

CASES = [
    Case(
        "detecting-insults-in-social-commentary",
        text.build_detecting_insults,
        "roc_auc",
        "Comment",
        ("Insult",),
        lambda a: shifted(a, ["Insult"], 0.05),
        (MISSING_ROW, ("a probability above 1", with_value("Insult", 0, 1.5), PROBABILITIES)),
        (("the Date column of MLE-bench's own sample", lambda s: s.assign(Date="20120618192155Z")),),
    ),
    Case(
        "learning-agency-lab-automated-essay-scoring-2",
        text.build_essay_scoring,
        "quadratic_weighted_kappa",
        "essay_id",
        ("score",),
        lambda a: a.assign(score=np.clip(a["score"] + np.arange(len(a)) % 3 - 1, 1, 6)),
        (MISSING_ROW, ("a fractional score", with_value("score", 0, 3.5), r"must hold whole-number labels")),
    ),
    Case(
        "random-acts-of-pizza",
        text.build_random_acts_of_pizza,
        "roc_auc",
        "request_id",
        ("requester_received_pizza",),
        lambda a: shifted(a, ["requester_received_pizza"], 0.15),
        (
            MISSING_ROW,
            ("a negative probability", with_value("requester_received_pizza", 2, -0.1), PROBABILITIES),
        ),
    ),
    Case(
        "tweet-sentiment-extraction",
        text.build_tweet_sentiment,
        "jaccard",
        "textID",
        ("selected_text",),
        lambda a: a.assign(
            selected_text=[t if i % 2 else f"{t} TWEET extra" for i, t in enumerate(a["selected_text"])]
        ),
        (
            MISSING_ROW,
            (
                "no selected_text column",
                lambda s: s.drop(columns=["selected_text"]),
                r"no column 'selected_text'",
            ),
        ),
        (("an empty selection", with_value("selected_text", 0, "")),),
    ),
    Case(
        "tabular-playground-series-may-2022",
        files.build_tabular_may_2022,
        "roc_auc",
        "id",
        ("target",),
        lambda a: shifted(a, ["target"], 0.12),
        (MISSING_ROW, ("text for a probability", with_value("target", 1, "high"), r"must hold numbers")),
    ),
    Case(
        "tabular-playground-series-dec-2021",
        files.build_tabular_dec_2021,
        "accuracy",
        "Id",
        ("Cover_Type",),
        lambda a: a.assign(Cover_Type=np.where(np.arange(len(a)) % 3 == 0, 2, a["Cover_Type"])),
        (
            MISSING_ROW,
            ("a fractional class", with_value("Cover_Type", 0, 2.5), r"must hold whole-number labels"),
        ),
    ),
    Case(
        "us-patent-phrase-to-phrase-matching",
        text.build_us_patent,
        "pearson",
        "id",
        ("score",),
        lambda a: a.assign(score=a["score"] * 0.5 + 0.1 * (np.arange(len(a)) % 2)),
        (
            ("a constant prediction", lambda s: s.assign(score=0.5), r"'pearson' is undefined .*nan"),
            MISSING_ROW,
        ),
    ),
    Case(
        "plant-pathology-2020-fgvc7",
        files.build_plant_pathology,
        "mean_columnwise_roc_auc_exact",
        "image_id",
        tuple(PLANT),
        lambda a: shifted(a, PLANT, 0.1),
        (("an extra column", plus_column, r"must have exactly the columns .*not also 'notes'"), MISSING_ROW),
    ),
    Case(
        "leaf-classification",
        files.build_leaf_classification,
        "log_loss",
        "id",
        tuple(LEAF),
        lambda a: normalised(a, LEAF),
        (
            ("an extra column", plus_column, r"must have exactly the columns .*not also 'notes'"),
            ("a row summing to 1.01", rows_off_by(0.01, LEAF), ROW_SUMS),
        ),
    ),
    Case(
        "nomad2018-predict-transparent-conductors",
        files.build_nomad2018,
        "mean_columnwise_rmsle",
        "id",
        tuple(NOMAD),
        lambda a: a.assign(**{c: a[c] * 1.2 + 0.05 for c in NOMAD}),
        (
            MISSING_ROW,
            ("a negative band gap", with_value("bandgap_energy_ev", 0, -1.5), r"values of at least 0"),
        ),
    ),
    Case(
        "spooky-author-identification",
        text.build_spooky_author,
        "log_loss",
        "id",
        tuple(SPOOKY),
        lambda a: normalised(a, SPOOKY),
        (
            ("an extra column", plus_column, r"must have exactly the columns .*not also 'notes'"),
            ("a row summing to 1.00002", rows_off_by(2e-5, SPOOKY), ROW_SUMS),
        ),
        (("a row summing to 1.000005", rows_off_by(5e-6, SPOOKY)),),
    ),
    Case(
        "lmsys-chatbot-arena",
        text.build_lmsys_arena,
        "log_loss_6dp",
        "id",
        tuple(LMSYS),
        lambda a: normalised(a, LMSYS),
        (
            (
                "a row summing to 1.000005",
                rows_off_by(5e-6, LMSYS),
                r"must sum to 1 when rounded to 6 decimals",
            ),
            MISSING_ROW,
        ),
        (("an extra column", plus_column),),
    ),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Every competition's MLE-bench folder, built once (the raw data and prepare.py logic are slow-ish)."""
    root = tmp_path_factory.mktemp("mlebench")
    return {case.cid: case.build(root) for case in CASES}


def imported(case: Case, built: dict[str, Path]):
    # us-patent's sample submission is constant, so its Pearson score is NaN and the submission invalid,
    # as in MLE-bench; the import stores no baseline for it (bundles.baseline_score).
    return services.competition_import(path=built[case.cid], owner=None)  # no user: hashing is slow


def answers_of(case: Case, built: dict[str, Path]) -> pd.DataFrame:
    config = (built[case.cid] / "config.yaml").read_text()
    relative = next(line.split("prepared/")[1] for line in config.splitlines() if "answers:" in line)
    return text.read_csv(built[case.cid] / "prepared" / relative.strip())


def mlebench_sample(case: Case, built: dict[str, Path]) -> pd.DataFrame:
    config = (built[case.cid] / "config.yaml").read_text()
    relative = next(
        line.split("prepared/")[1] for line in config.splitlines() if "sample_submission:" in line
    )
    return text.read_csv(built[case.cid] / "prepared" / relative.strip())


def good_submission(case: Case, built: dict[str, Path]) -> pd.DataFrame:
    return case.good(answers_of(case, built)[[case.id_column, *case.targets]])


def practicum_grade(slug: str, submission: pd.DataFrame, path: Path) -> dict:
    submission.to_csv(path, index=False)
    out = io.StringIO()
    call_command("grade", slug, str(path), stdout=out)
    return json.loads(out.getvalue())


def expected(case: Case, submission: pd.DataFrame, built: dict[str, Path]) -> float | None:
    try:
        return graders.GRADERS[case.cid](submission, answers_of(case, built))
    except graders.Refused:
        return None


@pytest.mark.parametrize("case", CASES, ids=[c.cid for c in CASES])
def test_it_imports_with_the_id_and_targets_the_grader_uses(case, built):
    competition = imported(case, built)
    assert (competition.slug, competition.metric, competition.id_column) == (
        case.cid,
        case.metric,
        case.id_column,
    )
    assert tuple(competition.target_columns) == case.targets


@pytest.mark.parametrize("case", CASES, ids=[c.cid for c in CASES])
def test_the_sample_and_a_good_submission_score_what_the_grader_gives(case, built, tmp_path):
    competition = imported(case, built)
    for name, submission in (
        ("sample", mlebench_sample(case, built)),
        ("good", good_submission(case, built)),
    ):
        want = expected(case, submission, built)
        got = practicum_grade(competition.slug, submission, tmp_path / f"{name}.csv")
        if want is None:  # us-patent's constant sample: the grader's Pearson is NaN
            assert (name, got["valid"], competition.baseline_score) == ("sample", False, None), got
            continue
        assert got["valid"], got["error"]
        assert got["score"] == pytest.approx(want, rel=1e-9, abs=1e-12), name
        assert round(got["score"], 5) == round(want, 5)
    assert expected(case, good_submission(case, built), built) is not None


@pytest.mark.parametrize("case", CASES, ids=[c.cid for c in CASES])
def test_submissions_the_grader_refuses_are_invalid_with_its_reason(case, built, tmp_path):
    competition = imported(case, built)
    good = good_submission(case, built)
    for what, mutate, reason in case.refused:
        bad = mutate(good)
        assert expected(case, bad, built) is None, f"MLE-bench's grader scores {what}"
        got = practicum_grade(competition.slug, bad, tmp_path / "bad.csv")
        assert not got["valid"], what
        assert re.search(reason, got["error"]), (what, got["error"])
    for what, mutate in case.accepted:
        variant = mutate(good)
        got = practicum_grade(competition.slug, variant, tmp_path / "variant.csv")
        assert got["valid"], (what, got["error"])
        assert got["score"] == pytest.approx(expected(case, variant, built), rel=1e-9), what
