"""The run page's launch share against completion share: its JSON endpoint and its place on the page."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_the_arrival_endpoint_sends_the_runs_shares_by_family(as_user, owner, run, finish):
    finish(run, score=0.5, family="knn", duration_s=0.5)
    finish(run, score=0.6, family="gbm", duration_s=20.0)
    finish(run, score=0.7, family="gbm", kind="eval-solve")
    response = as_user(owner).get(reverse("dashboards:run_arrival", args=[run.id]))
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    shares = response.json()
    assert shares["grouping"] == "family" and shares["groups"] == ["knn", "gbm"]
    assert shares["summary"]["finished"] == 2, "the evaluation attempt is left out"
    assert shares["summary"]["reading"] == "too few finished attempts to tell"


def test_a_stranger_cannot_read_a_private_runs_arrival_shares(as_user, stranger, run):
    assert as_user(stranger).get(reverse("dashboards:run_arrival", args=[run.id])).status_code == 404


def test_anyone_can_read_a_public_runs_arrival_shares(as_user, public_run):
    assert as_user(None).get(reverse("dashboards:run_arrival", args=[public_run.id])).status_code == 200


def test_the_run_page_has_the_arrival_chart_with_its_caption_and_summary(as_user, owner, run):
    page = as_user(owner).get(reverse("dashboards:run", args=[run.id])).content.decode()
    for element in ('id="chart-arrival"', 'id="arrival-caption"', 'id="arrival-summary"'):
        assert element in page
    assert "launch share against completion share" in page and "Do fast programs reach the learner" in page
