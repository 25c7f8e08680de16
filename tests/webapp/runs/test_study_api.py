"""The studies API: POST /api/studies/ starts one (400 naming what is wrong, storing nothing), GET gives a
study with its runs and the study page's statistics, to its owner or anyone when it is public."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from webapp.runs import study_reads
from webapp.runs.models import Run, Study

pytestmark = pytest.mark.django_db

ARMS = [{"name": "static", "settings": {"updates": False}}, {"name": "rl", "settings": {}}]


@pytest.fixture
def api():
    return APIClient()


def post(api, user, competition, **changes):
    api.force_authenticate(user)
    body = {
        "competitions": [competition.slug],
        "config": {"attempts": 4, "batch": 2},
        "arms": ARMS,
        "seeds": 2,
    }
    return api.post("/api/studies/", {**body, **changes}, format="json")


def test_a_study_started_through_the_api_has_its_arms_seeds_and_first_run(api, owner, competition):
    response = post(api, owner, competition, seeds=[3, 5], name="frozen or not")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["name"], body["seeds"], body["arms"], body["planned"]) == (
        "frozen or not",
        [3, 5],
        ["static", "rl"],
        4,
    )
    assert [(r["arm"], r["seed"], r["status"]) for r in body["runs"]] == [("static", 3, "queued")]
    assert Run.objects.get().config["updates"] is False


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        (
            {"arms": [{"name": "static", "settings": {"updates": "x"}}]},
            "arm 'static': updates must be true or false",
        ),
        ({"arms": [{"name": "static", "settings": {"speed": 1}}]}, "arm 'static': unknown field 'speed'"),
        ({"arms": [*ARMS, ARMS[0]]}, "two arms are called 'static'"),
        ({"seeds": 0}, "seeds: a study has 1 to 20 seeds"),
        ({"seeds": "many"}, "seeds: give a count or a list"),
        ({"config": {"batch": 0}}, "config: batch must be positive"),
        ({"competitions": ["nowhere"]}, "no competition called 'nowhere'"),
    ],
)
def test_a_bad_study_is_refused_with_a_sentence_naming_what_is_wrong(api, owner, competition, changes, words):
    response = post(api, owner, competition, **changes)
    assert response.status_code == 400 and words in response.json()["error"]
    assert not Study.objects.exists() and not Run.objects.exists()


def test_a_study_over_the_quota_is_refused_with_429(api, owner, competition, settings):
    settings.PRACTICUM_MAX_RUNS_PER_USER = 1
    post(api, owner, competition)
    assert post(api, owner, competition).status_code == 429 and Study.objects.count() == 1


def test_a_study_gives_its_runs_and_the_study_pages_statistics(api, owner, competition):
    study_id = post(api, owner, competition).json()["id"]
    body = api.get(f"/api/studies/{study_id}/").json()
    assert body["arm_settings"] == ARMS and body["competitions"] == [competition.slug]
    statistics = study_reads.study_statistics(Study.objects.get(id=study_id))
    assert {k: body[k] for k in statistics} == statistics
    assert [s["id"] for s in api.get("/api/studies/").json()["results"]] == [study_id]


def test_a_private_study_is_a_404_to_others_and_a_public_one_is_not(api, owner, stranger, competition):
    study_id = post(api, owner, competition).json()["id"]
    api.force_authenticate(stranger)
    assert api.get(f"/api/studies/{study_id}/").status_code == 404
    Study.objects.filter(id=study_id).update(is_public=True)
    assert api.get(f"/api/studies/{study_id}/").status_code == 200


def test_anonymous_visitors_cannot_start_a_study(api, competition):
    response = api.post("/api/studies/", {"competitions": [competition.slug]}, format="json")
    assert response.status_code in (401, 403) and not Study.objects.exists()
