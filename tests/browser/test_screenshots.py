"""The screenshot walk-through (`make screenshots`): the home, run, attempt, compare and API pages as PNGs
under PRACTICUM_SCREENSHOTS (default var/screenshots), so each release can be looked at. As a test it also
checks that every page of the walk renders: a 200, no script error, and a non-empty picture."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def walk(first: int, second: int) -> list[tuple[str, str, str]]:
    """(screenshot name, path, a selector that shows the page has drawn) for each page of the walk."""
    return [
        ("walk-01-home", "/", "main"),
        ("walk-02-run", f"/runs/{first}/", "#chart-score .main-svg"),
        ("walk-03-attempt", f"/runs/{first}/attempts/5/", "#program"),
        ("walk-04-compare", f"/compare/?runs={first},{second}", ".js-plotly-plot .main-svg"),
        ("walk-05-api", "/api/", "main, body"),
        ("walk-06-api-docs", "/api/schema/docs/", ".swagger-ui .opblock"),
    ]


def test_the_walk_through_saves_a_picture_of_every_page(finished_run, second_finished_run, page, screenshot):
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    saved = []
    for name, path, drawn in walk(finished_run, second_finished_run):
        response = page.goto(path)
        assert response is not None and response.status == 200, path
        page.wait_for_selector(drawn, timeout=30_000)
        page.wait_for_load_state("networkidle")
        saved.append(screenshot(name))
    assert errors == []
    for path in saved:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 10_000, path
    print("saved:", *saved, sep="\n  ")
