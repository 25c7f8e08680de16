"""Who may see and control what: the owner, another user and an anonymous visitor, against every surface
of a private run and competition (pages, files, exports, the API, the websocket), and of a public run.

A private object is a 404 to anyone but its owner, on pages, files and the API alike (its existence is not
revealed); a run they may see but not control answers 403 to a cancel; the websocket, reached through the
real ASGI stack with a browser's session cookie, closes with 4403. Actions that need a login send anonymous
visitors to the login page (pages) or answer 401 (API), and store nothing.
"""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.urls import reverse

from rl_core.outcome import AttemptOutcome
from rl_core.run_spec import RunConfig
from webapp.asgi import application
from webapp.competitions import storage as competition_storage
from webapp.competitions.models import Competition
from webapp.runs import services
from webapp.runs.models import Run

CAST = ["owner", "stranger", "anonymous"]
SAMPLE = {"prompt_kind": "solve", "family": "knn", "info": {}, "response": "plan\n```python\nx = 1\n```"}
RESULT = {
    "status": "ok", "exit_code": 0, "duration_s": 1.0, "stages": ["imports_done"], "valid": True,
    "score": 0.75, "reward": 0.75, "grade_error": "", "program": "x = 1\n", "stdout_tail": "",
}  # fmt: skip

# Every read-only surface of one run: its pages and files, and its API (DESIGN §7).
RUN_SURFACES = {
    "run page": lambda run: reverse("dashboards:run", args=[run.id]),
    "attempt page": lambda run: reverse("dashboards:attempt", args=[run.id, 1]),
    "attempts.csv": lambda run: reverse("dashboards:run_export", args=[run.id, "attempts", "csv"]),
    "attempts.json": lambda run: reverse("dashboards:run_export", args=[run.id, "attempts", "json"]),
    "metrics.csv": lambda run: reverse("dashboards:run_export", args=[run.id, "metrics", "csv"]),
    "metrics.json": lambda run: reverse("dashboards:run_export", args=[run.id, "metrics", "json"]),
    "attempt bundle": lambda run: reverse("dashboards:attempt_bundle", args=[run.id, 1]),
    "api run": lambda run: f"/api/runs/{run.id}/",
    "api attempts": lambda run: f"/api/runs/{run.id}/attempts/",
    "api attempt": lambda run: f"/api/runs/{run.id}/attempts/1/",
    "api metrics": lambda run: f"/api/runs/{run.id}/metrics/",
}
COMPETITION_SURFACES = {
    "competition page": lambda slug: reverse("competitions:detail", args=[slug]),
    "public file": lambda slug: reverse("competitions:file", args=[slug, "train.csv"]),
    "api competition": lambda slug: f"/api/competitions/{slug}/",
}


def with_history(run: Run) -> Run:
    """Give `run` one finished attempt (number 1) and one learner update, through the services."""
    competition = run.competitions.get()
    services.attempt_start(
        run_id=run.id, key="0-0", competition=competition, sample_fields=SAMPLE, policy_version=0
    )
    services.attempt_finish(run_id=run.id, key="0-0", outcome=AttemptOutcome.from_dict(RESULT), staleness=0)
    services.learner_step_record(run_id=run.id, version=1, metrics={"losses/policy": 0.5}, wall_s=1.0)
    return run


@pytest.fixture
def private_run(run):
    """`owner`'s private run on the private `competition`, with an attempt and a learner update."""
    return with_history(run)


@pytest.fixture
def public_run(competition, owner):
    """A public run of `owner` (on the private `competition`), with an attempt and a learner update."""
    config = RunConfig(attempts=4).to_dict()
    run = services.run_create(
        owner=owner, competitions=[competition], policy="grammar", config=config, is_public=True
    )
    return with_history(run)


@pytest.fixture
def user_called(owner, stranger):
    """user_called("owner" | "stranger" | "anonymous") -> the user (AnonymousUser for "anonymous")."""
    cast = {"owner": owner, "stranger": stranger, "anonymous": AnonymousUser()}
    return cast.__getitem__


@pytest.fixture
def client_as(client, user_called):
    """client_as(who) -> the test client, logged in as that member of the cast (or anonymous)."""

    def login(who: str):
        user = user_called(who)
        if user.is_authenticated:
            client.force_login(user)
        return client

    return login


def visible_status(who: str) -> int:
    return 200 if who == "owner" else 404


# --- a private run and competition -------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("who", CAST)
@pytest.mark.parametrize("surface", RUN_SURFACES)
def test_every_surface_of_a_private_run_is_its_owners_and_a_404_to_anyone_else(
    client_as, private_run, surface, who
):
    response = client_as(who).get(RUN_SURFACES[surface](private_run))
    assert response.status_code == visible_status(who)


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["owner", "stranger"])
@pytest.mark.parametrize("surface", [name for name in RUN_SURFACES if name.startswith("api ")])
def test_the_api_authorizes_a_token_exactly_as_a_session(private_run, user_called, surface, who):
    """Token auth (what scripts use) sees what the same user's session sees; a bad token is a 401."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    token = Token.objects.create(user=user_called(who))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get(RUN_SURFACES[surface](private_run)).status_code == visible_status(who)
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert client.get(RUN_SURFACES[surface](private_run)).status_code == 401


@pytest.mark.django_db
@pytest.mark.parametrize("who", CAST)
@pytest.mark.parametrize("surface", COMPETITION_SURFACES)
def test_every_surface_of_a_private_competition_is_its_owners_and_a_404_to_anyone_else(
    client_as, competition, surface, who
):
    response = client_as(who).get(COMPETITION_SURFACES[surface](competition.slug))
    assert response.status_code == visible_status(who)


@pytest.mark.django_db
@pytest.mark.parametrize("who", CAST)
def test_the_compare_page_shows_a_private_run_to_its_owner_only(client_as, private_run, who):
    response = client_as(who).get(reverse("dashboards:compare"), {"runs": str(private_run.id)})
    assert response.status_code == 200
    assert (response.context["runs"] == [private_run]) is (who == "owner")
    assert (private_run.name in response.content.decode()) is (who == "owner")


@pytest.mark.django_db
@pytest.mark.parametrize("who", CAST)
def test_lists_name_private_runs_and_competitions_to_their_owner_only(
    client_as, private_run, competition, who
):
    client = client_as(who)
    runs = [r["id"] for r in client.get("/api/runs/").json()["results"]]
    competitions = [c["slug"] for c in client.get("/api/competitions/").json()["results"]]
    pages = client.get(reverse("dashboards:run_list")).content + client.get("/competitions/").content
    shown = who == "owner"
    assert (runs == [private_run.id]) is shown and (competitions == [competition.slug]) is shown
    assert (private_run.name.encode() in pages) is shown and (competition.name.encode() in pages) is shown


@pytest.mark.django_db
@pytest.mark.parametrize(
    "who, status, location",
    [("owner", 302, "/runs/"), ("stranger", 404, None), ("anonymous", 302, "/accounts/login/")],
)
def test_only_the_owner_can_cancel_a_private_run_from_its_page(client_as, private_run, who, status, location):
    response = client_as(who).post(reverse("dashboards:run_cancel", args=[private_run.id]))
    assert response.status_code == status
    assert location is None or response["Location"].startswith(location)
    cancelled = Run.objects.get(id=private_run.id).status == Run.Status.CANCELLED
    assert cancelled is (who == "owner")


@pytest.mark.django_db
@pytest.mark.parametrize("who, status", [("owner", 200), ("stranger", 404), ("anonymous", 401)])
def test_only_the_owner_can_cancel_a_private_run_through_the_api(client_as, private_run, who, status):
    response = client_as(who).post(f"/api/runs/{private_run.id}/cancel/")
    assert response.status_code == status
    cancelled = Run.objects.get(id=private_run.id).status == Run.Status.CANCELLED
    assert cancelled is (who == "owner")


@pytest.mark.django_db
@pytest.mark.parametrize("who, status", [("owner", 200), ("stranger", 404), ("anonymous", 302)])
def test_only_the_owner_can_open_the_clone_form_of_a_private_run(client_as, private_run, who, status):
    assert client_as(who).get(reverse("dashboards:run_clone", args=[private_run.id])).status_code == status


# --- the websocket -----------------------------------------------------------------------------


def websocket_connects(run: Run, cookie: bytes) -> tuple[bool, int | None]:
    """(accepted, close code) of a connection to the run's websocket, through the real ASGI application
    (origin check, then Channels' session and auth middleware), sending `cookie` as its Cookie header."""

    async def scenario():
        headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
        communicator = WebsocketCommunicator(
            application, f"/ws/runs/{run.id}/", headers=headers + ([(b"cookie", cookie)] if cookie else [])
        )
        connected, code = await communicator.connect()
        if connected:
            snapshot = await communicator.receive_json_from(timeout=5)
            assert snapshot["type"] == "snapshot" and snapshot["run"]["id"] == run.id
        await communicator.disconnect()
        return connected, code

    return async_to_sync(scenario)()


@pytest.fixture
def cookie_of(client, user_called):
    """cookie_of(who) -> the Cookie header a browser sends once logged in as `who` (a real session stored in
    the database); b"" for anonymous."""

    def cookie(who: str) -> bytes:
        user = user_called(who)
        if not user.is_authenticated:
            return b""
        client.force_login(user)
        name = settings.SESSION_COOKIE_NAME
        return f"{name}={client.cookies[name].value}".encode()

    return cookie


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("who", CAST)
def test_the_websocket_of_a_private_run_streams_to_its_owners_session_and_closes_4403_on_anyone_else(
    private_run, cookie_of, who
):
    connected, code = websocket_connects(private_run, cookie_of(who))
    assert (connected, code) == ((True, None) if who == "owner" else (False, 4403))


@pytest.mark.django_db(transaction=True)
def test_the_websocket_treats_an_unknown_session_cookie_as_anonymous(private_run):
    cookie = f"{settings.SESSION_COOKIE_NAME}=not-a-session".encode()
    assert websocket_connects(private_run, cookie) == (False, 4403)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("who", CAST)
def test_the_websocket_of_a_public_run_streams_to_everyone(public_run, cookie_of, who):
    assert websocket_connects(public_run, cookie_of(who))[0]


# --- writes through the API ----------------------------------------------------------------------


def upload(client, make_bundle, make_zip, tmp_path, *, slug: str, name: str):
    """POST a competition bundle (the tiny churn one, with this slug and name) to the API's upload."""
    bundle = make_zip(make_bundle(spec={"slug": slug, "name": name}), tmp_path / f"{slug}.zip")
    with open(bundle, "rb") as archive:
        return client.post("/api/competitions/upload/", {"files": archive})


@pytest.mark.django_db
def test_an_anonymous_upload_through_the_api_is_a_401_and_stores_nothing(
    client, make_bundle, make_zip, tmp_path
):
    response = upload(client, make_bundle, make_zip, tmp_path, slug="sneaky-churn", name="Sneaky")
    assert response.status_code == 401
    assert not Competition.objects.exists()
    assert not competition_storage.competition_dir("sneaky-churn").exists()


@pytest.mark.django_db
def test_another_user_cannot_replace_a_private_competition_by_uploading_its_slug(
    client_as, competition, owner, make_bundle, make_zip, tmp_path
):
    """Refused as the upload page refuses it (400, the slug is taken); the owner's competition stays."""
    response = upload(
        client_as("stranger"), make_bundle, make_zip, tmp_path, slug=competition.slug, name="Mine"
    )
    assert response.status_code == 400 and "already taken" in response.json()["error"]
    assert list(Competition.objects.values_list("slug", "name", "owner")) == [
        (competition.slug, competition.name, owner.id)
    ]


def start_run_through_the_api(client, competition_slug: str, config: dict | None = None):
    body = {"competitions": [competition_slug], "config": {"attempts": 2, **(config or {})}}
    return client.post("/api/runs/", body, content_type="application/json")


@pytest.mark.django_db
def test_an_anonymous_run_start_through_the_api_is_a_401_and_stores_nothing(client_as, competition):
    response = start_run_through_the_api(client_as("anonymous"), competition.slug)
    assert response.status_code == 401
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_another_user_cannot_start_a_run_on_a_private_competition_through_the_api(client_as, competition):
    """Answered as a competition that does not exist (400, as the start page's form answers): the private
    one is not revealed, and no run is stored."""
    client = client_as("stranger")
    private = start_run_through_the_api(client, competition.slug)
    missing = start_run_through_the_api(client, "no-such-competition")
    assert private.status_code == missing.status_code == 400
    assert private.json()["error"] == missing.json()["error"].replace("no-such-competition", competition.slug)
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_another_user_cannot_start_a_run_from_a_private_runs_policy_through_the_api(
    client_as, private_run, stranger, competition
):
    competition.is_public = True
    competition.save()
    response = start_run_through_the_api(
        client_as("stranger"), competition.slug, {"warm_start": f"run:{private_run.id}"}
    )
    assert response.status_code == 400 and "not yours" in response.json()["error"]
    assert not Run.objects.filter(owner=stranger).exists()


# --- a public run ------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("who", CAST)
@pytest.mark.parametrize("surface", RUN_SURFACES)
def test_every_surface_of_a_public_run_is_open_to_everyone(client_as, public_run, surface, who):
    assert client_as(who).get(RUN_SURFACES[surface](public_run)).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize(
    "who, status, location",
    [("owner", 302, "/runs/"), ("stranger", 403, None), ("anonymous", 302, "/accounts/login/")],
)
def test_only_the_owner_can_cancel_a_public_run_from_its_page(client_as, public_run, who, status, location):
    response = client_as(who).post(reverse("dashboards:run_cancel", args=[public_run.id]))
    assert response.status_code == status
    assert location is None or response["Location"].startswith(location)
    cancelled = Run.objects.get(id=public_run.id).status == Run.Status.CANCELLED
    assert cancelled is (who == "owner")


@pytest.mark.django_db
@pytest.mark.parametrize("who, status", [("owner", 200), ("stranger", 403), ("anonymous", 401)])
def test_only_the_owner_can_cancel_a_public_run_through_the_api(client_as, public_run, who, status):
    response = client_as(who).post(f"/api/runs/{public_run.id}/cancel/")
    assert response.status_code == status
    cancelled = Run.objects.get(id=public_run.id).status == Run.Status.CANCELLED
    assert cancelled is (who == "owner")


@pytest.mark.django_db
@pytest.mark.parametrize("who", CAST)
def test_comparing_a_public_run_shows_the_leaderboard_of_its_private_competition_to_the_owner_only(
    client_as, public_run, competition, who
):
    response = client_as(who).get(reverse("dashboards:compare"), {"runs": str(public_run.id)})
    assert response.context["runs"] == [public_run]
    boards = [board_competition for board_competition, _ in response.context["leaderboards"]]
    assert (boards == [competition]) is (who == "owner")
