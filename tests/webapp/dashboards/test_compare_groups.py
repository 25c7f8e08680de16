"""The compare page's grouping: runs that differ only in their seed form one group, named by the settings
that differ, drawn as one mean reward curve with the same 95% band a study's page draws (rl_core.studies)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from rl_core import studies as stats
from rl_core.run_spec import RunConfig
from webapp.dashboards import compare
from webapp.runs import services
from webapp.runs.study_reads import seed_arm

pytestmark = pytest.mark.django_db


def make_run(competition, owner, **settings):
    config = RunConfig(attempts=4, **settings).to_dict()
    return services.run_create(owner=owner, competitions=[competition], policy="grammar", config=config)


@pytest.fixture
def three_runs(competition, owner, finish):
    """Two seeds of batch 2 and one of batch 4, each with finished attempts."""
    runs = [make_run(competition, owner, batch=2, seed=0), make_run(competition, owner, batch=2, seed=1),
            make_run(competition, owner, batch=4, seed=0)]  # fmt: skip
    for run, scores in zip(runs, ([0.5, None, 0.7], [None, 0.6], [0.9, 0.9, None]), strict=True):
        for score in scores:
            finish(run, score=score)
    return runs


def test_runs_that_differ_only_in_seed_share_a_group_with_a_band_across_them(three_runs):
    first, second, third = three_runs
    groups = compare.settings_groups([first, second, third])
    assert [g["run_ids"] for g in groups] == [[first.id, second.id], [third.id]]
    assert "2" in groups[0]["label"] and "4" in groups[1]["label"] and "Seed" not in groups[0]["label"]
    expected = stats.arm_curves([seed_arm(first), seed_arm(second)], compare.GROUP_SMOOTHING)["reward"]
    assert groups[0]["reward"] == expected and len(expected) == 3


def test_the_page_and_its_polled_curves_group_on_request(as_user, owner, three_runs):
    ids = ",".join(str(r.id) for r in three_runs)
    client = as_user(owner)
    page = client.get(reverse("dashboards:compare"), {"runs": ids, "group": "1"}).content.decode()
    assert 'id="chart-groups"' in page and 'data-grouped="1"' in page
    assert (
        'id="chart-groups"' not in client.get(reverse("dashboards:compare"), {"runs": ids}).content.decode()
    )
    polled = client.get(reverse("dashboards:compare_curves"), {"runs": ids, "group": "1"}).json()
    assert [g["run_ids"] for g in polled["groups"]] == [
        [three_runs[0].id, three_runs[1].id],
        [three_runs[2].id],
    ]
