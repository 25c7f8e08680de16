"""A newcomer's first five minutes in a real browser (issue 26, items 8 and 11): the home page says what
Practicum is and links to the run to watch, to starting a run, uploading a competition, the competitions,
compare and the API; the nav has Compare; a refused upload turns its progress bar red beside the reason."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

USERNAME, PASSWORD = "nell", "nell-browser-password-8"
BAD = "rgb(180, 35, 24)"
"""--bad in base.html (#b42318)."""


@pytest.fixture
def nell(django_user_model):
    """Made before the browser starts: playwright's event loop in this thread forbids ORM calls after."""
    return django_user_model.objects.create_user(USERNAME, password=PASSWORD)


@pytest.fixture
def demo_runs(nell) -> dict[str, int]:
    """A public running run, and a newer finished one: the home page points to the running one."""
    from webapp.runs.models import Run

    running = Run.objects.create(owner=nell, name="the demo", is_public=True, status=Run.Status.RUNNING)
    finished = Run.objects.create(owner=nell, name="done", is_public=True, status=Run.Status.FINISHED)
    return {"running": running.id, "finished": finished.id}


def test_the_home_page_says_what_practicum_is_and_links_to_the_live_run(demo_runs, page, screenshot):
    page.goto("/")
    assert page.url.endswith("/"), "no redirect: the home page is a page"
    intro = page.inner_text("#home-intro")
    for words in ("reinforcement learning", "Kaggle-style competition", "sandbox", "hidden answers",
                  "partial credit"):  # fmt: skip
        assert words in intro, words
    links = {name: page.get_attribute(f"#home-{name}", "href") for name in
             ("start", "upload", "competitions", "compare", "api")}  # fmt: skip
    assert links == {"start": "/runs/new/", "upload": "/competitions/upload/",
                     "competitions": "/competitions/", "compare": "/compare/", "api": "/api/"}  # fmt: skip
    screenshot("home")
    page.click("#home-demo-run")
    page.wait_for_url(f"**/runs/{demo_runs['running']}/")


def test_with_no_run_to_watch_the_home_page_says_how_to_start_one(page):
    page.goto("/")
    assert (
        "No run to watch yet" in page.inner_text("#showcase") and page.locator("#home-demo-run").count() == 0
    )


def test_the_nav_links_to_compare(page):
    page.goto("/")
    page.click("#nav-compare")
    page.wait_for_url("**/compare/")
    assert [page.locator(f"#nav-{name}").count() for name in ("start", "compare", "api")] == [1, 1, 1]


def test_a_refused_upload_turns_the_progress_bar_red_beside_the_reason(
    nell, page, tmp_path, screenshot, log_in
):
    not_a_zip = tmp_path / "bundle.zip"
    not_a_zip.write_bytes(b"these bytes are not a zip archive" * 100)
    log_in(page, USERNAME, PASSWORD)
    page.goto("/competitions/upload/")
    page.set_input_files("#id_files", str(not_a_zip))
    page.click("#upload-submit")
    page.locator("#upload-errors").wait_for(state="visible")
    screenshot("upload-refused")
    bar = page.locator("#upload-progress")
    assert "refused" in (bar.get_attribute("class") or "")
    assert bar.evaluate("e => getComputedStyle(e).accentColor") == BAD, "red, not the accent blue"
    assert "refused" in page.inner_text("#upload-status") and page.locator("#upload-errors").inner_text()
