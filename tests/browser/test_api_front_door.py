"""The API's front door and the site's edges in a real browser (issue 26, item 1): `/api/` answers with every
endpoint linked, the schema renders as a page (Swagger UI and Redoc from local files), no page asks for a
static file that is not there, and an unknown page is a friendly 404, not Django's debug page."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

USERNAME, PASSWORD = "erin", "erin-browser-password-5"
PAGES = ("/", "/runs/", "/runs/new/", "/api/", "/api/runs/", "/api/schema/docs/", "/api/schema/redoc/",
         "/docs/api/", "/token/", "/admin/login/")  # fmt: skip


@pytest.fixture
def erin(django_user_model):
    """Made before the browser starts: playwright's event loop in this thread forbids ORM calls after."""
    return django_user_model.objects.create_user(USERNAME, password=PASSWORD)


def test_the_api_root_links_every_endpoint_and_the_nav_links_to_it(page):
    page.goto("/")
    page.click("#nav-api")
    assert page.url.endswith("/api/")
    body = page.locator("body").inner_text()
    links = ("competitions", "runs", "warm_starts", "schema", "schema_swagger_ui", "schema_redoc", "token")
    for name in links:
        assert f'"{name}"' in body, name
    response = page.request.get("/api/", headers={"Accept": "application/json"})
    assert response.status == 200 and "/api/runs/" in response.json()["links"]["runs"]


def test_the_schema_renders_as_a_page_from_local_files(page):
    failed: list[str] = []  # same-origin files only: Redoc also asks Google for fonts, cosmetic offline
    page.on("requestfailed", lambda r: failed.append(r.url) if "127.0.0.1" in r.url else None)
    page.goto("/api/schema/docs/")
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)  # the operations, drawn by Swagger UI
    assert "/api/runs/" in page.locator(".swagger-ui").inner_text()
    page.goto("/api/schema/redoc/")
    page.wait_for_selector("redoc [role=navigation], .menu-content", timeout=30_000)
    assert failed == []
    schema = page.request.get("/api/schema/")
    assert schema.status == 200
    assert schema.headers["content-type"].startswith("application/vnd.oai.openapi+json")
    assert "attachment" not in schema.headers.get("content-disposition", "")


def test_no_page_asks_for_a_static_file_that_is_not_there(erin, page, log_in):
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if "/static/" in r.url and r.status >= 400 else None)
    log_in(page, USERNAME, PASSWORD)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/static/" in r.url else None)
    for path in PAGES:
        page.goto(path)
        page.wait_for_load_state("networkidle")
    assert missing == [] and asked, (missing, len(asked))


def test_an_unknown_page_is_a_friendly_404(page):
    response = page.goto("/runs/999999/")
    assert response is not None and response.status == 404
    assert page.locator("#not-found").is_visible()
    text = page.locator("body").inner_text()
    assert "Not found" in text and "URLconf" not in text and "Traceback" not in text
    assert page.locator("link[rel=icon]").count() == 1


@pytest.fixture
def queued_run(erin):
    """A run of erin's, queued (never dispatched): active, so its page offers to cancel it. No worker runs
    here (the test is not marked `workers`): a `gpu` worker starting restarts a supervisor for every active
    run it finds, which would fail this one (it has no competition) before the test could cancel it."""
    from webapp.runs.models import Run

    return Run.objects.create(owner=erin, name="to cancel", config={}).id


def test_cancelling_a_run_asks_for_a_confirmation_first(erin, queued_run, page, log_in):
    log_in(page, USERNAME, PASSWORD)
    page.goto(f"/runs/{queued_run}/")
    assert page.get_attribute("#cancel", "class") == "quiet-danger", "cancel is not the primary button"
    asked: list[str] = []

    def answer(dialog, accept: bool) -> None:
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda dialog: answer(dialog, False))
    page.click("#cancel")
    page.wait_for_timeout(500)
    assert page.url.endswith(f"/runs/{queued_run}/") and page.locator("#cancel").is_visible()
    assert page.inner_text("#stat-status") in ("queued", "running"), "dismissed: the run goes on"
    page.once("dialog", lambda dialog: answer(dialog, True))
    page.click("#cancel")
    page.wait_for_function("document.getElementById('stat-status').textContent === 'cancelled'")
    assert len(asked) == 2 and f"Cancel run #{queued_run}?" in asked[0]
