"""The per-competition leaderboard across runs and users: each run's reward source and result (a validation
run's final grade, a hidden run's best score), attempts and time to best, valid rate; percentile and medal
tier from the result when the competition has a Kaggle leaderboard; the compute behind each result; a
filter by reward source; a fixed number of queries however many runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from rl_core.leaderboard import percentile
from rl_core.run_spec import RunConfig
from webapp.competitions.models import Competition
from webapp.dashboards.leaderboard import competition_leaderboard
from webapp.runs import services
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db


def test_each_runs_row_counts_its_attempts_to_best_and_valid_rate(run, finish, competition, owner):
    finish(run, score=None)
    finish(run, score=0.5)
    finish(run, score=0.75)
    finish(run, score=0.6)
    [row] = competition_leaderboard(competition=competition, user=owner)
    assert (row.result, row.attempts_to_best, row.attempts, row.valid_rate) == (0.75, 3, 4, 0.75)
    assert row.percentile is None and row.medal is None


def test_with_a_kaggle_leaderboard_a_row_gets_its_percentile_and_medal(run, finish, competition, owner):
    Competition.objects.filter(id=competition.id).update(
        leaderboard_scores=[0.9 - 0.01 * i for i in range(50)]
    )
    competition.refresh_from_db()
    finish(run, score=0.87)
    [row] = competition_leaderboard(competition=competition, user=owner)
    assert row.medal == "gold" and row.percentile == pytest.approx(0.93)


def test_the_leaderboard_shows_only_runs_the_viewer_may_see(run, public_run, finish, competition, stranger):
    finish(run, score=0.9)
    finish(public_run, score=0.1)
    assert [row.run for row in competition_leaderboard(competition=competition, user=stranger)] == [
        public_run
    ]


def test_runs_without_a_valid_attempt_come_last(run, other_run, finish, competition, owner):
    finish(run, score=None)
    finish(other_run, score=0.1)
    rows = competition_leaderboard(competition=competition, user=owner)
    assert [r.run for r in rows] == [other_run, run] and rows[1].result is None and rows[1].valid_rate == 0


def kaggle_board(competition, scores: list[float]) -> None:
    Competition.objects.filter(id=competition.id).update(leaderboard_scores=scores)
    competition.refresh_from_db()


def test_a_validation_runs_result_is_its_final_grade_never_its_validation_score(
    validation_run, finish, grade_final, competition, owner
):
    chosen = finish(validation_run, score=0.9)
    finish(validation_run, score=0.5)
    grade_final(validation_run, score=0.6, chosen=chosen)
    [row] = competition_leaderboard(competition=competition, user=owner)
    assert (row.reward_source, row.result, row.result_note) == ("validation", 0.6, "")
    assert (row.attempts_to_best, row.attempts, row.valid_rate) == (chosen.number, 2, 1.0)


def test_a_validation_runs_percentile_and_medal_come_from_its_final_grade(
    validation_run, finish, grade_final, competition, owner
):
    scores = [0.9 - 0.01 * i for i in range(50)]
    kaggle_board(competition, scores)
    grade_final(validation_run, score=0.55, chosen=finish(validation_run, score=0.95))
    [row] = competition_leaderboard(competition=competition, user=owner)
    assert row.medal == "none", "0.95 on validation would be gold; the final grade 0.55 earns no medal"
    assert (
        row.percentile == pytest.approx(percentile(0.55, scores, higher_is_better=True))
        and row.percentile < 0.5
    )


def test_a_validation_run_not_graded_yet_has_no_result_and_comes_after_ranked_runs(
    run, validation_run, finish, competition, owner
):
    services.run_set_status(run_id=validation_run.id, status=Run.Status.RUNNING)
    finish(validation_run, score=0.99)
    finish(run, score=0.1)
    rows = competition_leaderboard(competition=competition, user=owner)
    assert [r.run for r in rows] == [run, validation_run]
    assert (rows[1].result, rows[1].result_note) == (None, "graded once when the run ends")
    assert rows[1].percentile is None and rows[1].medal is None


def test_an_invalid_final_grading_is_no_result_and_says_so(
    validation_run, finish, grade_final, competition, owner
):
    grade_final(validation_run, score=None, chosen=finish(validation_run, score=0.8))
    [row] = competition_leaderboard(competition=competition, user=owner)
    assert (row.result, row.result_note) == (None, "final grading invalid")


def test_the_leaderboard_filters_by_reward_source(run, validation_run, other_run, competition, owner):
    Run.objects.filter(id=other_run.id).update(config={"attempts": 4})  # a run from before the setting

    def ids(source):
        return {r.run.id for r in competition_leaderboard(competition=competition, user=owner, source=source)}

    assert ids("validation") == {validation_run.id}
    assert ids("hidden") == {run.id, other_run.id}
    assert ids(None) == ids("anything else") == {run.id, validation_run.id, other_run.id}


def test_each_row_shows_the_compute_behind_its_result(owner, competition, finish, grade_final):
    config = RunConfig(policy="lm", attempts=4, reward_source="validation").to_dict()
    lm_run = services.run_create(owner=owner, competitions=[competition], policy="lm", config=config)
    start = timezone.now() - timedelta(minutes=5)
    Run.objects.filter(id=lm_run.id).update(started_at=start, finished_at=start + timedelta(seconds=90))
    services.run_record_hardware(run_id=lm_run.id, hardware="GPU (NVIDIA H100 80GB HBM3)")
    chosen = finish(lm_run, score=0.7, duration_s=1.5, info={"new_tokens": 120})
    finish(lm_run, score=None, duration_s=2.5, info={"new_tokens": 80})
    grade_final(lm_run, score=0.6, chosen=chosen, duration_s=0.5)
    for version in (1, 2, 3):
        services.learner_step_record(run_id=lm_run.id, version=version, metrics={}, wall_s=float(version))
    [row] = competition_leaderboard(competition=competition, user=owner)
    assert (row.wall_clock_s, row.executor_s, row.hardware) == (90.0, 4.5, "GPU (NVIDIA H100 80GB HBM3)")
    assert (row.tokens, row.policy_updates) == (200, 3)


def test_a_grammar_runs_row_has_no_tokens(run, finish, competition, owner):
    finish(run, score=0.5)
    [row] = competition_leaderboard(competition=competition, user=owner)
    assert row.tokens is None and row.executor_s == 1.0


def test_the_leaderboard_costs_the_same_few_queries_however_many_runs(
    owner, competition, finish, grade_final
):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            competition_leaderboard(competition=competition, user=owner)
        return len(captured)

    def add_runs(source: str) -> None:
        config = RunConfig(attempts=4, reward_source=source).to_dict()
        new = services.run_create(owner=owner, competitions=[competition], policy="grammar", config=config)
        chosen = finish(new, score=0.5)
        finish(new, score=0.6)
        if source == "validation":
            grade_final(new, score=0.4, chosen=chosen)

    add_runs("hidden")
    add_runs("validation")
    few = queries()
    for source in ("hidden", "validation") * 3:
        add_runs(source)
    assert queries() == few <= 5


def board_row(body: str, run) -> str:
    start = body.index(f'id="leaderboard-run-{run.id}"')
    return body[start : body.index("</tr>", start)]


def test_the_competition_page_marks_each_row_with_its_reward_source_and_shows_the_final_grade(
    as_user, owner, run, validation_run, finish, grade_final, competition
):
    finish(run, score=0.25)
    grade_final(validation_run, score=0.625, chosen=finish(validation_run, score=0.875))
    body = as_user(owner).get(reverse("competitions:detail", args=[competition.slug])).content.decode()
    clean, hidden = board_row(body, validation_run), board_row(body, run)
    assert "reward-source-validation" in clean and "validation · clean" in clean
    assert "0.62500" in clean and "0.87500" not in clean
    assert "reward-source-hidden" in hidden and "test feedback" in hidden and "0.25000" in hidden


def test_the_competition_page_filters_its_leaderboard_by_reward_source(
    as_user, owner, run, validation_run, competition
):
    url = reverse("competitions:detail", args=[competition.slug])
    client = as_user(owner)
    clean, hidden = f'id="leaderboard-run-{validation_run.id}"', f'id="leaderboard-run-{run.id}"'
    body = client.get(url + "?source=validation").content.decode()
    assert clean in body and hidden not in body
    assert 'id="source-validation"' in body and 'aria-current="true"' in board_filter(body, "validation")
    body = client.get(url + "?source=hidden").content.decode()
    assert hidden in body and clean not in body
    body = client.get(url + "?source=all").content.decode()
    assert hidden in body and clean in body
    assert 'href="?source=hidden#run-leaderboard"' in body


def board_filter(body: str, value: str) -> str:
    start = body.index(f'id="source-{value}"')
    return body[body.rindex("<a", 0, start) : body.index("</a>", start)]


def test_the_compare_page_leaderboard_shows_reward_sources_without_the_filter(
    as_user, owner, run, validation_run, competition
):
    response = as_user(owner).get(reverse("dashboards:compare") + f"?runs={run.id},{validation_run.id}")
    body = response.content.decode()
    assert "reward-source-validation" in body and "reward-source-hidden" in body
    assert 'id="source-filter"' not in body
