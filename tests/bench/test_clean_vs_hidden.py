"""bench/clean_vs_hidden.py: its pairing, normalisation, paired test and resume logic, and one real cell
(a tiny validation run of the bundled iris competition through `manage.py train`)."""

from __future__ import annotations

import doctest
import importlib
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
CONFIG = {"slugs": ["a", "b"], "seeds": [0, 1], "arms": ["hidden", "validation"], "attempts": 8}


@pytest.fixture(scope="module")
def bench():
    """bench/clean_vs_hidden as the benchmarks import each other (bench/ first on sys.path)."""
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("clean_vs_hidden")
    finally:
        sys.path.remove(str(BENCH))


def cell(slug: str, seed: int, arm: str, final: float | None, **more) -> dict:
    return {"slug": slug, "seed": seed, "arm": arm, "final_score": final, **more}


def cells_of(*records: dict) -> dict:
    return {f"{r['slug']}/{r['seed']}/{r['arm']}": r for r in records}


def test_the_docstring_examples_hold(bench):
    assert doctest.testmod(bench).failed == 0


def test_both_arms_of_a_pair_run_one_after_the_other_seed_by_seed(bench):
    planned = bench.planned_cells(CONFIG)
    assert planned[:4] == [
        ("a", 0, "hidden"),
        ("a", 0, "validation"),
        ("b", 0, "hidden"),
        ("b", 0, "validation"),
    ]
    assert len(planned) == len(set(planned)) == 8


def test_a_pair_is_made_only_where_both_arms_finished(bench):
    cells = cells_of(
        cell("a", 0, "hidden", 0.9), cell("a", 0, "validation", 0.8), cell("b", 0, "hidden", 0.5)
    )
    assert bench.pairs(cells, CONFIG) == [bench.Pair("a", 0, validation=0.8, hidden=0.9)]


def test_differences_are_sign_adjusted_so_that_a_better_clean_result_is_positive(bench):
    Pair = bench.Pair
    found = [
        Pair("loss", 0, 0.2, 0.4),
        Pair("loss", 1, 0.4, 0.2),
        Pair("auc", 0, 0.9, 0.7),
        Pair("auc", 1, 0.7, 0.9),
    ]
    d = bench.normalised_differences(found, {"loss": False, "auc": True})
    assert d[0] > 0 and d[1] < 0, "a lower loss in the validation arm is better"
    assert d[2] > 0 and d[3] < 0


def test_competitions_of_different_scales_pool_after_dividing_by_their_spread(bench):
    Pair = bench.Pair
    small = [Pair("small", 0, 0.2, 0.1), Pair("small", 1, 0.1, 0.2)]
    large = [Pair("large", 0, 2000.0, 1000.0), Pair("large", 1, 1000.0, 2000.0)]
    d = bench.normalised_differences(small + large, {"small": True, "large": True})
    assert d[:2] == pytest.approx(d[2:])


def test_a_pair_with_no_final_grade_is_left_out_of_the_differences(bench):
    Pair = bench.Pair
    found = [Pair("a", 0, 0.9, 0.8), Pair("a", 1, None, 0.8), Pair("a", 2, 0.7, 0.8)]
    assert len(bench.normalised_differences(found, {"a": True})) == 2


def test_a_competition_whose_grades_are_all_equal_gives_zero_differences(bench):
    found = [bench.Pair("a", 0, 1.0, 1.0), bench.Pair("a", 1, 1.0, 1.0)]
    assert bench.normalised_differences(found, {"a": True}) == [0.0, 0.0]


def test_the_paired_test_is_scipys_wilcoxon_signed_rank_with_zeros_dropped(bench):
    from scipy.stats import wilcoxon

    differences = [0.5, -0.2, 1.1, 0.0, 0.9, 1.4, -0.7]
    row = bench.wilcoxon_test(differences)
    expected = wilcoxon([d for d in differences if d], alternative="two-sided")
    assert row["p"] == pytest.approx(expected.pvalue) and row["statistic"] == expected.statistic
    assert (row["n"], row["n_nonzero"]) == (7, 6)


def test_the_paired_test_says_there_is_nothing_to_test_when_every_difference_is_zero(bench):
    assert bench.wilcoxon_test([0.0, 0.0]) | {"test": None} == {
        "test": None, "n": 2, "n_nonzero": 0, "statistic": None, "p": 1.0
    }  # fmt: skip


def test_the_optimism_of_a_lower_is_better_metric_is_positive_when_validation_promised_a_lower_loss(bench):
    cells = [
        cell("a", 0, "validation", 0.5, best_score=0.3),
        cell("a", 1, "validation", None, best_score=0.4),
    ]
    assert bench.signed_gaps(cells, "best_score", "final_score", False) == pytest.approx([0.2])


def test_a_study_with_no_file_yet_starts_empty(bench, tmp_path):
    assert bench.resumed(tmp_path / "none.json", CONFIG) == ({}, [])


def test_a_rerun_with_the_same_config_keeps_the_finished_cells(bench, tmp_path):
    path = tmp_path / "study.json"
    done = cells_of(cell("a", 0, "hidden", 0.9, best_score=0.9, median_valid_score=0.8))
    sessions = [{"started_at": "2026-12-06T14:00:00+0000", "wall_s": 12.5, "cells_run": 1}]
    bench.save(
        path, CONFIG | {"slugs": ["a"]}, done, {"a": {"metric": "auc", "higher_is_better": True}}, sessions
    )
    assert bench.resumed(path, CONFIG | {"slugs": ["a"]}) == (done, sessions)


def test_a_rerun_with_another_config_refuses_to_overwrite_the_file(bench, tmp_path):
    path = tmp_path / "study.json"
    path.write_text(json.dumps({"config": CONFIG | {"attempts": 32}, "results": {"cells": {"x": {}}}}))
    with pytest.raises(ValueError, match="another config"):
        bench.resumed(path, CONFIG)
    assert "x" in json.loads(path.read_text())["results"]["cells"]


def test_the_summary_tests_complete_pairs_and_names_those_left_out(bench):
    cells = cells_of(
        *[cell("a", s, "hidden", 0.9, best_score=0.9, median_valid_score=0.8) for s in (0, 1)],
        cell("a", 0, "validation", 0.85, best_score=0.95, median_valid_score=0.9),
        cell("a", 1, "validation", None, best_score=None, median_valid_score=None),
    )
    config = CONFIG | {"slugs": ["a"]}
    summary = bench.summarise(cells, config, {"a": {"metric": "auc", "higher_is_better": True}})
    assert summary["test"]["pairs"] == 2 and summary["test"]["pairs_left_out"] == ["a/1"]
    assert summary["test"]["n"] == 1 and summary["test"]["hidden_better"] == 1
    entry = summary["per_competition"]["a"]
    assert entry["validation"]["final_by_seed"] == [0.85, None] and entry["validation"]["n_graded"] == 1
    assert entry["validation_optimism"] == pytest.approx([0.1])
    assert entry["hidden_selection_gain"] == pytest.approx([0.1, 0.1])


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_one_cell_trains_a_validation_run_and_records_its_one_hidden_grade(bench):
    from webapp.competitions.management.commands.seed_competitions import seed_one
    from webapp.runs.models import Run

    seed_one("iris-species")
    record = bench.run_cell("iris-species", 1, "validation", bench.Budget(attempts=2, actors=2, batch=2))
    run = Run.objects.get(id=record["run_id"])
    assert record["attempts"] == 2 and record["final_score"] == run.final_score
    assert record["final_valid"] and run.final_attempt.answers == "hidden"
    chosen = run.attempts.get(key=run.final_attempt.parent_key)
    assert record["best_score"] == chosen.score and chosen.answers == "validation"
    assert record["chosen_family"] == chosen.family != ""
