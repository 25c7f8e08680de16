"""Launch share against completion share (webapp.runs.arrival): the numbers on hand-built attempts with known
shares, read from PostgreSQL, and the summary's reading on counts built in code."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from webapp.runs.arrival import Arrival, count_by_window, run_arrival_shares, summary, window_rows
from webapp.runs.models import Attempt, Run

T0 = datetime(2025, 1, 1, tzinfo=UTC)
TYPICAL_S = {"fast": 1.0, "slow": 60.0}


def add_attempt(
    run: Run, *, launched_s: float, finished_s: float | None, family: str = "", duration_s: float = 1.0,
    status: str = "ok", kind: str = "solve",
) -> Attempt:  # fmt: skip
    """A row with these times (seconds after T0), written directly: the services stamp the present."""
    number = run.attempts.count() + 1
    finished_at = None if finished_s is None else T0 + timedelta(seconds=finished_s)
    done = finished_at is not None
    return Attempt.objects.create(
        run=run, key=f"0-{number}", competition=run.competitions.get(), number=number, policy_version=0,
        status=status if done else Attempt.Status.RUNNING, prompt_kind=kind, family=family,
        duration_s=duration_s if done else None, started_at=T0 + timedelta(seconds=launched_s),
        finished_at=finished_at,
    )  # fmt: skip


@pytest.fixture
def grammar_run(run):
    """A run over 100 s whose two slices launch fast and slow programs alike but see different completions:
    slice [0, 50) launches fast, fast, slow, slow and sees fast, fast, slow finish; slice [50, 100]
    launches fast, slow, fast (still in flight) and sees slow, fast, slow finish. Plus an evaluation
    attempt and a lost one, which do not count."""
    for launched_s, finished_s, family in [
        (0, 1, "fast"), (10, 11, "fast"), (0, 45, "slow"), (20, 60, "slow"), (60, 61, "fast"),
        (61, 100, "slow"), (80, None, "fast"),
    ]:  # fmt: skip
        add_attempt(run, launched_s=launched_s, finished_s=finished_s, family=family,
                    duration_s=1.0 if family == "fast" else 40.0)  # fmt: skip
    add_attempt(run, launched_s=70, finished_s=71, family="fast", kind="eval-solve")
    add_attempt(run, launched_s=30, finished_s=35, family="slow", status=Attempt.Status.LOST)
    return run


@pytest.mark.django_db
def test_each_slice_sets_the_share_of_attempts_launched_in_it_against_those_that_finished_in_it(grammar_run):
    shares = run_arrival_shares(run=grammar_run, windows=2)
    first, second = shares["windows"]
    assert (first["start_s"], first["end_s"], second["end_s"]) == (0.0, 50.0, 100.0)
    assert first["launch_share"] == {"fast": 0.5, "slow": 0.5}
    assert first["completion_share"] == pytest.approx({"fast": 2 / 3, "slow": 1 / 3})
    assert second["launch_share"] == pytest.approx({"fast": 2 / 3, "slow": 1 / 3})
    assert second["completion_share"] == pytest.approx({"fast": 1 / 3, "slow": 2 / 3})


@pytest.mark.django_db
def test_a_grammar_run_is_grouped_by_family_fastest_first(grammar_run):
    shares = run_arrival_shares(run=grammar_run, windows=2)
    assert shares["grouping"] == "family"
    assert shares["groups"] == ["fast", "slow"]
    assert shares["typical_duration_s"] == {"fast": 1.0, "slow": 40.0}


@pytest.mark.django_db
def test_evaluation_and_lost_attempts_are_left_out_and_one_in_flight_counts_as_launched(grammar_run):
    shares = run_arrival_shares(run=grammar_run, windows=2)
    assert (shares["summary"]["launched"], shares["summary"]["finished"]) == (7, 6)
    assert (shares["in_flight"], shares["in_flight_left_out"]) == (1, 0)


@pytest.mark.django_db
def test_the_summary_distance_is_the_mean_over_slices_weighted_by_their_completions(grammar_run):
    first, second = run_arrival_shares(run=grammar_run, windows=2)["windows"]
    assert (first["distance"], second["distance"]) == (pytest.approx(1 / 6), pytest.approx(1 / 3))
    summary = run_arrival_shares(run=grammar_run, windows=2)["summary"]
    assert summary["distance"] == pytest.approx(0.25) and summary["windows"] == 2
    assert summary["verdict"] == "too_few", "six finished attempts are too few to tell"


@pytest.mark.django_db
def test_a_run_without_families_is_grouped_by_duration_bucket_leaving_attempts_in_flight_out(run):
    for launched_s, finished_s, duration_s in [(0, 1, 0.5), (0, 30, 25.0), (5, 6, 0.8), (40, None, 0.0)]:
        add_attempt(run, launched_s=launched_s, finished_s=finished_s, duration_s=duration_s)
    shares = run_arrival_shares(run=run, windows=1)
    assert shares["grouping"] == "duration" and shares["groups"] == ["<1 s", "10–100 s"]
    assert shares["windows"][0]["launched"] == {"<1 s": 2, "10–100 s": 1}
    assert (shares["in_flight"], shares["in_flight_left_out"]) == (1, 1)


@pytest.mark.django_db
def test_a_run_with_no_attempts_has_empty_slices_and_too_few_to_tell(run):
    shares = run_arrival_shares(run=run)
    assert shares["groups"] == [] and all(w["distance"] is None for w in shares["windows"])
    assert shares["summary"]["reading"] == "too few finished attempts to tell"


def test_an_attempt_whose_group_is_not_known_yet_is_counted_nowhere():
    arrivals = [Arrival(0.0, 2.0, "<1 s", 0.5), Arrival(1.0, None, None, None)]
    launched, finished, end_s = count_by_window(arrivals, windows=2)
    assert launched == [Counter({"<1 s": 1}), Counter()] and end_s == 2.0
    assert finished == [Counter(), Counter({"<1 s": 1})]


def reading(launched: Counter[str], finished: Counter[str], *, windows: int = 4) -> dict:
    """The summary of a run whose every slice launched `launched` and saw `finished` finish."""
    rows = window_rows([launched] * windows, [finished] * windows, end_s=40.0, typical_s=TYPICAL_S)
    return summary(rows, launched=windows * launched.total(), finished=windows * finished.total())


def test_equal_shares_read_as_no_measurable_arrival_bias():
    result = reading(Counter(fast=30, slow=30), Counter(fast=30, slow=30))
    assert result["distance"] == 0 and result["reading"] == "no measurable arrival bias"


def test_a_difference_within_chance_reads_as_no_measurable_arrival_bias():
    result = reading(Counter(fast=10, slow=10), Counter(fast=12, slow=8))
    assert result["distance"] == pytest.approx(0.1) and result["chance"] > 0.1
    assert result["verdict"] == "none"


def test_completions_leaning_to_fast_programs_read_as_fast_programs_over_represented():
    result = reading(Counter(fast=50, slow=50), Counter(fast=80, slow=20))
    assert result["distance"] == pytest.approx(0.3) and result["speed_gap"] < 0
    assert result["reading"] == "fast programs over-represented in completions"


def test_completions_leaning_to_slow_programs_read_as_slow_programs_over_represented():
    result = reading(Counter(fast=80, slow=20), Counter(fast=50, slow=50))
    assert result["verdict"] == "slow"


def test_fewer_finished_attempts_than_the_minimum_read_as_too_few_to_tell():
    result = reading(Counter(fast=5, slow=5), Counter(fast=7, slow=0), windows=4)
    assert result["finished"] == 28 and result["verdict"] == "too_few"
