"""`/api/runs/<id>/metrics/`: a run's learner updates, paginated like the API's other lists."""

from __future__ import annotations

import pytest

from webapp.runs import services

pytestmark = pytest.mark.django_db


def with_updates(run, count: int):
    for version in range(1, count + 1):
        services.learner_step_record(
            run_id=run.id, version=version, metrics={"losses/policy": 1.0 / version}, wall_s=float(version)
        )
    return run


def versions(page: dict) -> list[int]:
    return [step["version"] for step in page["results"]]


def test_the_metrics_endpoint_pages_the_updates_oldest_first(as_user, owner, run):
    url = f"/api/runs/{with_updates(run, 3).id}/metrics/"
    first = as_user(owner).get(url, {"page_size": 2}).json()
    second = as_user(owner).get(first["next"]).json()
    assert (first["count"], versions(first), versions(second), second["next"]) == (3, [1, 2], [3], None)


def test_the_metrics_endpoint_serves_fifty_updates_a_page_by_default(as_user, owner, run):
    page = as_user(owner).get(f"/api/runs/{with_updates(run, 51).id}/metrics/").json()
    assert page["count"] == 51 and versions(page) == list(range(1, 51))


def test_the_metrics_endpoint_pages_only_the_updates_after_a_version(as_user, owner, run):
    url = f"/api/runs/{with_updates(run, 3).id}/metrics/"
    page = as_user(owner).get(url, {"after": 1, "page_size": 1}).json()
    assert (page["count"], versions(page)) == (2, [2])
