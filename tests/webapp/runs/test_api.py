"""The REST API: token and session auth, pagination, filtering, start and cancel through the services,
and the OpenAPI schema with its reference page."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from rl_core.outcome import AttemptOutcome
from rl_core.run_spec import RunConfig
from webapp.runs import services
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db
RESULT = {"status": "ok", "duration_s": 1.0, "stages": [], "grade_error": "", "program": "x = 1\n"}


@pytest.fixture
def finish():
    """finish(run, score=...) -> Attempt: one attempt started and finished through the services."""
    keys = iter(range(1000))

    def make(run, *, score):
        key = f"0-{next(keys)}"
        sample = {"prompt_kind": "solve", "family": "knn", "info": {}, "response": ""}
        services.attempt_start(
            run_id=run.id, key=key, competition=run.competitions.get(), sample_fields=sample, policy_version=0
        )
        result = {**RESULT, "valid": score is not None, "score": score, "reward": score or -1.0}
        return services.attempt_finish(
            run_id=run.id, key=key, outcome=AttemptOutcome.from_dict(result), staleness=0
        )

    return make


def another_run(competition, owner, **fields):
    config = RunConfig(attempts=4).to_dict()
    return services.run_create(
        owner=owner, competitions=[competition], policy="grammar", config=config, **fields
    )


@pytest.fixture
def other_run(competition, owner):
    return another_run(competition, owner)


@pytest.fixture
def public_run(competition, owner):
    return another_run(competition, owner, is_public=True)


@pytest.fixture
def as_user(client):
    def login(user):
        client.force_login(user)
        return client

    return login


@pytest.fixture
def api():
    return APIClient()


def test_a_token_from_the_token_page_authenticates_api_requests(as_user, owner, run, api):
    as_user(owner).post(reverse("dashboards:api_token"))
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user=owner).key}")
    assert [r["id"] for r in api.get("/api/runs/").json()["results"]] == [run.id]


def test_a_new_token_replaces_the_old_one(as_user, owner, run, api):
    client = as_user(owner)
    client.post(reverse("dashboards:api_token"))
    old = Token.objects.get(user=owner).key
    client.post(reverse("dashboards:api_token"))
    api.credentials(HTTP_AUTHORIZATION=f"Token {old}")
    assert api.get("/api/runs/").status_code == 401


def test_run_lists_filter_by_status_and_competition(api, owner, run, other_run, competition):
    api.force_authenticate(owner)
    api.post(f"/api/runs/{run.id}/cancel/")
    assert [r["id"] for r in api.get("/api/runs/?status=cancelled").json()["results"]] == [run.id]
    assert len(api.get(f"/api/runs/?competition={competition.slug}").json()["results"]) == 2
    assert api.get("/api/runs/?competition=nothing").json()["results"] == []


def test_attempt_lists_page_newest_first_on_request(api, owner, run, finish):
    for score in (0.1, 0.2, 0.3, 0.4, 0.5):
        finish(run, score=score)
    api.force_authenticate(owner)
    body = api.get(f"/api/runs/{run.id}/attempts/?ordering=-number&page=2&page_size=2").json()
    assert body["count"] == 5 and [a["number"] for a in body["results"]] == [3, 2]


def test_attempt_lists_filter_by_validity_and_number(api, owner, run, finish):
    for score in (0.1, None, 0.3, None):
        finish(run, score=score)
    api.force_authenticate(owner)
    assert [a["number"] for a in api.get(f"/api/runs/{run.id}/attempts/?valid=false").json()["results"]] == [
        2,
        4,
    ]
    assert [a["number"] for a in api.get(f"/api/runs/{run.id}/attempts/?after=2").json()["results"]] == [3, 4]


def test_starting_a_run_through_the_api_checks_its_config(api, owner, competition):
    api.force_authenticate(owner)
    response = api.post(
        "/api/runs/", {"competitions": [competition.slug], "config": {"batch": 0}}, format="json"
    )
    assert response.status_code == 400 and "batch" in response.json()["error"] and not Run.objects.exists()


@pytest.mark.parametrize(("credit_valid", "status"), [(False, 201), (True, 201), ("no", 400)])
def test_the_api_takes_credit_valid_as_a_boolean_and_names_it_when_it_is_not(
    api, owner, competition, credit_valid, status
):
    api.force_authenticate(owner)
    body = {"competitions": [competition.slug], "config": {"credit_valid": credit_valid}}
    response = api.post("/api/runs/", body, format="json")
    assert response.status_code == status
    if status == 201:
        assert Run.objects.get().config["credit_valid"] is credit_valid
    else:
        assert response.json()["error"] == "config: credit_valid must be true or false, not 'no'."


def test_starting_a_run_through_the_api_creates_it(
    api, owner, competition, django_capture_on_commit_callbacks
):
    api.force_authenticate(owner)
    with django_capture_on_commit_callbacks(execute=False):
        response = api.post(
            "/api/runs/", {"competitions": [competition.slug], "config": {"attempts": 3}}, format="json"
        )
    assert response.status_code == 201 and Run.objects.get().config["attempts"] == 3


def test_a_run_over_the_users_quota_is_refused_through_the_api_with_the_reason(
    api, owner, competition, settings
):
    settings.PRACTICUM_MAX_IN_FLIGHT_PER_USER = 4
    api.force_authenticate(owner)
    body = {"competitions": [competition.slug], "config": {"actors": 6}}
    response = api.post("/api/runs/", body, format="json")
    assert response.status_code == 429 and not Run.objects.exists()
    assert "lower actors to 4" in response.json()["error"]


def test_only_the_owner_can_cancel_through_the_api(api, stranger, public_run):
    api.force_authenticate(stranger)
    assert api.post(f"/api/runs/{public_run.id}/cancel/").status_code == 403


def test_metrics_can_be_fetched_after_a_version(api, owner, run):
    for version in (1, 2, 3):
        services.learner_step_record(
            run_id=run.id, version=version, metrics={"losses/policy": 0.1}, wall_s=1.0
        )
    api.force_authenticate(owner)
    assert [s["version"] for s in api.get(f"/api/runs/{run.id}/metrics/?after=1").json()["results"]] == [2, 3]


def test_the_openapi_schema_describes_every_endpoint_of_design_section_7(api):
    paths = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    expected = {"/api/competitions/", "/api/competitions/{slug}/", "/api/runs/", "/api/runs/{run_id}/",
                "/api/runs/{run_id}/attempts/", "/api/runs/{run_id}/metrics/"}  # fmt: skip
    assert expected <= set(paths)
    assert {p["name"] for p in paths["/api/runs/{run_id}/attempts/"]["get"]["parameters"]} >= {
        "page",
        "valid",
    }


def test_the_api_reference_page_lists_the_operations(client):
    content = client.get(reverse("dashboards:api_reference")).content.decode()
    assert "/api/runs/{run_id}/attempts/" in content and "ordering" in content


def test_a_competition_uploaded_through_the_api_is_created_and_a_bad_one_stores_nothing(
    api, owner, make_bundle, make_zip, tmp_path, data_dir
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from webapp.competitions.models import Competition

    api.force_authenticate(owner)
    good = make_zip(make_bundle(), tmp_path / "good.zip").read_bytes()
    response = api.post("/api/competitions/upload/", {"files": [SimpleUploadedFile("good.zip", good)]})
    assert response.status_code == 201 and response.json()["slug"] == "tiny-churn"
    bad = make_zip(
        make_bundle(spec={"slug": "bad-one", "metric": "vibes"}), tmp_path / "bad.zip"
    ).read_bytes()
    response = api.post("/api/competitions/upload/", {"files": [SimpleUploadedFile("bad.zip", bad)]})
    assert response.status_code == 400 and "vibes" in response.json()["error"]
    assert list(Competition.objects.values_list("slug", flat=True)) == ["tiny-churn"]
    assert not (data_dir / "competitions" / "bad-one").exists()


def test_a_competition_list_counts_public_files_and_the_detail_lists_them(api, owner, competition):
    api.force_authenticate(owner)
    listed = next(c for c in api.get("/api/competitions/").json()["results"] if c["slug"] == competition.slug)
    detail = api.get(f"/api/competitions/{competition.slug}/").json()
    assert "public_files" not in listed and listed["public_file_count"] == len(competition.public_files) > 0
    assert [f["name"] for f in detail["public_files"]] == [f["name"] for f in competition.public_files]


def test_the_warm_starts_endpoint_lists_those_the_user_may_use_without_server_paths(
    api, owner, competition, data_dir
):
    import json

    for name, slugs in (("mine", [competition.slug]), ("theirs", ["someone-elses-private-data"])):
        folder = data_dir / "adapters" / name
        folder.mkdir(parents=True)
        (folder / "adapter_config.json").write_text("{}")
        (folder / "warmstart.json").write_text(json.dumps({"competitions": slugs, "losses": [1.0, 0.5]}))
    api.force_authenticate(owner)
    results = api.get("/api/warmstarts/").json()["results"]
    assert (
        [w["name"] for w in results] == ["mine"] and "path" not in results[0] and "losses" not in results[0]
    )


def test_an_lm_run_started_through_the_api_may_have_its_frozen_base_instrument_its_programs(
    api, owner, competition, django_capture_on_commit_callbacks
):
    api.force_authenticate(owner)
    body = {"competitions": [competition.slug], "config": {"policy": "lm", "instrumenter": "lm"}}
    with django_capture_on_commit_callbacks(execute=False):
        response = api.post("/api/runs/", body, format="json")
    assert response.status_code == 201 and response.json()["config"]["instrumenter"] == "lm"


def test_an_lm_instrumenter_for_a_grammar_run_is_refused_through_the_api_naming_the_field(
    api, owner, competition
):
    api.force_authenticate(owner)
    body = {"competitions": [competition.slug], "config": {"instrumenter": "lm"}}
    response = api.post("/api/runs/", body, format="json")
    assert response.status_code == 400 and not Run.objects.exists()
    assert response.json()["error"].startswith("config: instrumenter 'lm' needs policy 'lm'")
