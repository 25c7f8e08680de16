"""The runs list (issue 26, item 11): each best score with its metric and direction, filters by competition
and status, and sorting by age, attempts, or best score within each metric."""

from __future__ import annotations

import pytest
from django.urls import reverse

from rl_core.run_spec import RunConfig
from webapp.competitions import services as competition_services
from webapp.runs import services
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def regression(make_bundle, owner):
    """A second competition graded by rmse (lower is better), beside `competition`'s accuracy."""
    spec = {"name": "Tiny Churn Error", "slug": "tiny-churn-error", "metric": "rmse"}
    return competition_services.competition_import(path=make_bundle(spec=spec), owner=owner)


@pytest.fixture
def new_run(owner):
    def make(competition, name: str = ""):
        config = RunConfig(attempts=4).to_dict()
        return services.run_create(
            owner=owner, competitions=[competition], policy="grammar", config=config, name=name
        )

    return make


def listed(client, **query) -> list[int]:
    response = client.get(reverse("dashboards:run_list"), query)
    assert response.status_code == 200
    return [row.run.id for row in response.context["rows"]]


def test_each_best_score_shows_its_metric_and_direction(
    as_user, owner, competition, regression, new_run, finish
):
    finish(new_run(competition), score=0.75)
    finish(new_run(regression), score=0.25)
    content = as_user(owner).get(reverse("dashboards:run_list")).content.decode()
    assert 'accuracy <span class="muted">↑ higher is better' in content
    assert 'rmse <span class="muted">↓ lower is better' in content
    assert "0.75000" in content and "0.25000" in content, "at the codebase's score precision"


def test_the_list_filters_by_competition_and_by_status(as_user, owner, competition, regression, new_run):
    on_accuracy, on_rmse = new_run(competition), new_run(regression)
    Run.objects.filter(id=on_rmse.id).update(status=Run.Status.FINISHED)
    client = as_user(owner)
    assert listed(client, competition=regression.slug) == [on_rmse.id]
    assert listed(client, competition=regression.slug, sort="best") == [on_rmse.id]
    assert listed(client, status="queued") == [on_accuracy.id]
    assert listed(client, competition=competition.slug, status="finished") == []
    assert set(listed(client, status="no-such-status")) == {on_accuracy.id, on_rmse.id}, "unknown: ignored"


def test_sorting_by_best_score_ranks_each_metric_by_its_own_direction(
    as_user, owner, competition, regression, new_run, finish
):
    scores = {(competition, 0.5), (competition, 0.75), (regression, 0.3), (regression, 0.1)}
    ids = {}
    for comp, score in sorted(scores, key=lambda pair: pair[1]):
        run = new_run(comp)
        finish(run, score=score)
        ids[(comp.slug, score)] = run.id
    unscored = new_run(regression).id
    order = listed(as_user(owner), sort="best")
    assert order == [
        ids[("tiny-churn", 0.75)], ids[("tiny-churn", 0.5)],  # accuracy: higher is better
        ids[("tiny-churn-error", 0.1)], ids[("tiny-churn-error", 0.3)], unscored,  # rmse: lower is better
    ]  # fmt: skip


def test_sorting_by_attempts_and_by_age(as_user, owner, competition, new_run, finish):
    first, second = new_run(competition), new_run(competition)
    finish(first, score=0.5)
    finish(first, score=0.5)
    finish(second, score=0.5)
    client = as_user(owner)
    assert listed(client, sort="attempts") == [first.id, second.id]
    assert listed(client) == [second.id, first.id], "newest first by default"
    assert listed(client, sort="oldest") == [first.id, second.id]


def test_ticked_runs_still_open_in_compare(as_user, owner, competition, new_run):
    new_run(competition)
    content = as_user(owner).get(reverse("dashboards:run_list")).content.decode()
    assert 'id="compare-runs"' in content and 'class="pick"' in content
