"""The compare page: curves against three clocks, one best-score chart per metric and one reward chart per
reward scale, the ids it cannot show named, live curves, the configuration fields that differ, the best
submissions with a code diff, and a leaderboard per competition."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from rl_core.run_spec import RunConfig
from webapp.dashboards import compare
from webapp.runs import services
from webapp.runs.models import Attempt

pytestmark = pytest.mark.django_db


def compare_url(*runs) -> str:
    return reverse("dashboards:compare") + "?runs=" + ",".join(str(r.id) for r in runs)


def test_the_config_table_shows_only_the_fields_that_differ(as_user, owner, run, other_run):
    rows = as_user(owner).get(compare_url(run, other_run)).context["config_rows"]
    assert {row.field: row.values for row in rows} == {"seed": [0, 7], "batch": [8, 2]}


def test_all_config_fields_show_on_request(as_user, owner, run, other_run):
    rows = as_user(owner).get(compare_url(run, other_run) + "&all=1").context["config_rows"]
    assert {"seed", "lr", "policy", "competitions"} <= {row.field for row in rows}
    assert {row.field for row in rows if row.differs} == {"seed", "batch"}


def test_the_best_submissions_show_side_by_side_with_a_code_diff(as_user, owner, run, other_run, finish):
    finish(run, score=0.5, program="model = 'knn'\n")
    finish(other_run, score=0.75, program="model = 'forest'\n")
    response = as_user(owner).get(compare_url(run, other_run))
    first, second = response.context["best"]
    assert first.attempt.score == 0.5 and second.attempt.score == 0.75 and first.diff_html == ""
    assert "knn" in second.diff_html and "forest" in second.diff_html
    assert 'class="diff_chg"' in second.diff_html or 'class="diff_sub"' in second.diff_html


def test_the_diff_escapes_the_programs_html(run, other_run, finish):
    old = finish(run, score=0.5, program="x = 1\n")
    new = finish(other_run, score=0.5, program="x = '<script>'\n")
    assert "<script>" not in compare.code_diff_html(old, new)


def test_runs_the_viewer_may_not_see_are_left_out(as_user, stranger, run, public_run):
    assert as_user(stranger).get(compare_url(run, public_run)).context["runs"] == [public_run]


def test_curves_run_against_attempts_wall_clock_and_executor_seconds(run, finish):
    finish(run, score=0.5, duration_s=2.0)
    finish(run, score=0.4, duration_s=3.0)
    finish(run, score=0.8, duration_s=1.0)
    points = compare.run_curve(run)["points"]
    assert [p["finished"] for p in points] == [1, 2, 3]
    assert [p["best"] for p in points] == [{"accuracy": 0.5}, {"accuracy": 0.5}, {"accuracy": 0.8}]
    assert [p["exec_s"] for p in points] == [2.0, 5.0, 6.0]
    assert all(p["wall_s"] >= 0 for p in points)


def test_a_curve_for_a_lower_is_better_metric_keeps_the_lowest_score(make_bundle, owner, finish):
    from webapp.competitions import services as competitions
    from webapp.runs import services

    rmse = competitions.competition_import(
        path=make_bundle(spec={"slug": "rmse-churn", "metric": "rmse"}), owner=owner
    )
    run = services.run_create(owner=owner, competitions=[rmse], policy="grammar", config={})
    for score in (0.5, 0.7, 0.3):
        finish(run, score=score)
    assert [p["best"]["rmse"] for p in compare.run_curve(run)["points"]] == [0.5, 0.5, 0.3]


def test_the_compare_page_has_a_leaderboard_for_each_competition(
    as_user, owner, run, other_run, finish, competition
):
    finish(run, score=0.5)
    response = as_user(owner).get(compare_url(run, other_run))
    [(board_competition, rows)] = response.context["leaderboards"]
    assert board_competition == competition and [r.run for r in rows] == [run, other_run]


def test_the_attempts_axis_counts_finished_attempts_so_a_curve_never_runs_backwards(run, finish):
    first, second = finish(run, score=0.5), finish(run, score=0.6)
    Attempt.objects.filter(id=first.id).update(finished_at=second.finished_at + timedelta(seconds=1))
    points = compare.run_curve(run)["points"]
    assert [(p["finished"], p["number"]) for p in points] == [(1, second.number), (2, first.number)]


def runs_of(owner, competition, count: int) -> list:
    config = RunConfig(attempts=4).to_dict()
    return [
        services.run_create(owner=owner, competitions=[competition], policy="grammar", config=config)
        for _ in range(count)
    ]


def test_the_page_names_the_runs_it_left_out_beyond_its_limit(as_user, owner, competition):
    runs = runs_of(owner, competition, compare.MAX_RUNS + 2)
    response = as_user(owner).get(compare_url(*runs))
    assert response.context["runs"] == runs[: compare.MAX_RUNS]
    notice = re.search(r'<p [^>]*id="compare-dropped"[^>]*>(.*?)</p>', response.content.decode(), re.S)
    assert notice is not None, "the page says that it dropped runs"
    text = " ".join(notice.group(1).split())
    assert f"at most {compare.MAX_RUNS} runs: 2 more asked for were left out" in text
    assert f"#{runs[-2].id}, #{runs[-1].id}" in text


def test_the_page_shows_no_notice_when_every_run_asked_for_is_compared(as_user, owner, run, other_run):
    assert b'id="compare-dropped"' not in as_user(owner).get(compare_url(run, other_run)).content


@pytest.fixture
def on_metric(make_bundle, owner):
    """on_metric("r2", preset="normalized") -> a queued run of `owner` on a new competition scored by it."""
    from webapp.competitions import services as competitions

    counter = iter(range(100))

    def make(metric: str, *, preset: str = "normalized"):
        slug = f"{metric.replace('_', '-')}-{next(counter)}"
        competition = competitions.competition_import(
            path=make_bundle(spec={"slug": slug, "metric": metric}), owner=owner
        )
        config = RunConfig(attempts=4, reward_preset=preset).to_dict()
        return services.run_create(owner=owner, competitions=[competition], policy="grammar", config=config)

    return make


def test_runs_on_different_metrics_get_one_best_score_chart_each_and_a_note(as_user, owner, on_metric):
    r2, auc, r2_again = on_metric("rmse"), on_metric("roc_auc"), on_metric("rmse")
    response = as_user(owner).get(compare_url(r2, auc, r2_again))
    best = response.context["charts"]["best"]
    assert [(g["metric"], g["axis"], g["run_ids"]) for g in best] == [
        ("rmse", "rmse (lower is better)", [r2.id, r2_again.id]),
        ("roc_auc", "roc_auc (higher is better)", [auc.id]),
    ]
    note = re.search(r'id="compare-metric-note"[^>]*>(.*?)</p>', response.content.decode(), re.S)
    assert note is not None and "scored by 2 metrics (rmse, roc_auc)" in note.group(1)


def test_runs_on_one_metric_share_one_best_score_chart_without_a_note(as_user, owner, run, other_run):
    response = as_user(owner).get(compare_url(run, other_run))
    assert [g["run_ids"] for g in response.context["charts"]["best"]] == [[run.id, other_run.id]]
    assert b'id="compare-metric-note"' not in response.content


def test_normalized_rewards_share_one_chart_across_metrics_but_paper_rewards_do_not(
    as_user, owner, on_metric
):
    normalized = [on_metric("rmse"), on_metric("roc_auc")]
    paper = [on_metric("rmse", preset="paper"), on_metric("roc_auc", preset="paper")]
    response = as_user(owner).get(compare_url(*normalized, *paper))
    groups = response.context["charts"]["reward"]
    assert [g["run_ids"] for g in groups] == [[r.id for r in normalized], [paper[0].id], [paper[1].id]]
    assert "the same scale on every competition" in groups[0]["note"]
    assert "same scale on every competition" in response.content.decode()


def test_a_run_on_two_metrics_keeps_a_best_score_for_each(make_bundle, owner, finish):
    from webapp.competitions import services as competitions

    accuracy = competitions.competition_import(path=make_bundle(spec={"slug": "acc"}), owner=owner)
    rmse = competitions.competition_import(
        path=make_bundle(spec={"slug": "err", "metric": "rmse"}), owner=owner
    )
    run = services.run_create(owner=owner, competitions=[accuracy], policy="grammar", config={})
    finish(run, score=0.5)
    on_rmse = [finish(run, score=0.4).id, finish(run, score=0.9).id]
    run.competitions.add(rmse)  # `finish` needs a run on one competition: the second joins after
    Attempt.objects.filter(id__in=on_rmse).update(competition=rmse)
    points = compare.run_curve(run)["points"]
    assert [p["best"] for p in points] == [
        {"accuracy": 0.5},
        {"accuracy": 0.5, "rmse": 0.4},
        {"accuracy": 0.5, "rmse": 0.4},
    ]


def notice_text(response, dom_id: str) -> str | None:
    found = re.search(rf'<p [^>]*id="{dom_id}"[^>]*>(.*?)</p>', response.content.decode(), re.S)
    return " ".join(found.group(1).split()) if found else None


def test_an_id_that_does_not_exist_is_named_in_a_notice(as_user, owner, run):
    response = as_user(owner).get(reverse("dashboards:compare") + f"?runs={run.id},999999")
    assert response.context["runs"] == [run]
    assert notice_text(response, "compare-unseen") == "Run #999999 does not exist or is not visible to you."


def test_a_private_run_is_named_in_the_same_words_as_a_missing_one(as_user, stranger, run, public_run):
    response = as_user(stranger).get(reverse("dashboards:compare") + f"?runs={run.id},999999,{public_run.id}")
    assert response.context["runs"] == [public_run]
    text = notice_text(response, "compare-unseen")
    assert text == f"Runs #{run.id}, #999999 do not exist or are not visible to you."


def test_no_unseen_notice_when_every_id_is_shown(as_user, owner, run, other_run):
    assert b'id="compare-unseen"' not in as_user(owner).get(compare_url(run, other_run)).content


def test_the_curves_endpoint_gives_the_visible_runs_curves_and_whether_they_are_active(
    as_user, stranger, run, public_run, finish
):
    finish(public_run, score=0.5)
    url = reverse("dashboards:compare_curves") + f"?runs={run.id},{public_run.id}"
    body = as_user(stranger).get(url).json()
    [curve] = body["curves"]
    assert curve["id"] == public_run.id and curve["active"] is True
    assert [p["best"] for p in curve["points"]] == [{"accuracy": 0.5}]
    assert body["best"] == [
        {"id": public_run.id, "attempt": 1, "score": 0.5, "reward": 0.5, "duration_s": 1.0}
    ]


def test_a_finished_run_is_not_active_in_the_curves(as_user, owner, run):
    services.run_set_status(run_id=run.id, status="finished")
    body = as_user(owner).get(reverse("dashboards:compare_curves") + f"?runs={run.id}").json()
    assert [c["active"] for c in body["curves"]] == [False]
