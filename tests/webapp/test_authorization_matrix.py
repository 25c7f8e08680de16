"""Who may see and control what: the owner, another user and an anonymous visitor, against every surface
of a private run and competition (pages, files, exports, the API, the websocket), and of a public run.

A private object is a 404 to anyone but its owner, on pages, files and the API alike (its existence is not
revealed); a run they may see but not control answers 403 to a cancel; the websocket closes with 4403.
Actions that need a login send anonymous visitors to the login page (pages) or answer 401 (API).
"""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.urls import reverse

from webapp.asgi import application
from webapp.runs import services
from webapp.runs.config import RunConfig
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
    services.attempt_finish(run_id=run.id, key="0-0", result=RESULT, staleness=0)
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


def websocket_connects(run: Run, user) -> tuple[bool, int | None]:
    """(accepted, close code) of a connection to the run's websocket as `user`."""

    async def scenario():
        communicator = WebsocketCommunicator(
            application,
            f"/ws/runs/{run.id}/",
            headers=[(b"origin", b"http://localhost"), (b"host", b"localhost")],
        )
        communicator.scope["user"] = user
        connected, code = await communicator.connect()
        if connected:
            snapshot = await communicator.receive_json_from(timeout=5)
            assert snapshot["type"] == "snapshot" and snapshot["run"]["id"] == run.id
        await communicator.disconnect()
        return connected, code

    return async_to_sync(scenario)()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("who", CAST)
def test_the_websocket_of_a_private_run_streams_to_its_owner_and_closes_4403_on_anyone_else(
    private_run, user_called, who
):
    connected, code = websocket_connects(private_run, user_called(who))
    assert (connected, code) == ((True, None) if who == "owner" else (False, 4403))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("who", CAST)
def test_the_websocket_of_a_public_run_streams_to_everyone(public_run, user_called, who):
    assert websocket_connects(public_run, user_called(who))[0]


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
