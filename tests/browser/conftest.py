"""Fixtures for the browser tests: the whole stack as real processes and a headless Chromium driving it.

`asgi_server` is daphne (HTTP and websockets), plus, for tests marked `workers`, Celery workers (one on the
`gpu` queue for run supervisors, one on `sandbox` for attempts), all from tests/workers/cluster.py, on the
pytest-django test database, a Redis database of their own and this test's data dir. `page` is a Chromium
page (Debian's /usr/bin/chromium, driven by playwright; skipped when it is missing) whose relative URLs go to
that server.
`screenshot(name)` saves the page as PNG under PRACTICUM_SCREENSHOTS (default var/screenshots).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest

_NAME = "practicum_test_cluster"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
VIEWPORT = {"width": 1280, "height": 900}
ROOT = Path(__file__).resolve().parents[2]


def load_cluster_module():
    if _NAME not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "workers" / "cluster.py"
        spec = importlib.util.spec_from_file_location(_NAME, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[_NAME]


_cluster = load_cluster_module()
redis_url = _cluster.redis_url
cluster = _cluster.cluster


@pytest.fixture
def asgi_server(cluster, request) -> str:
    """The base URL of daphne serving the webapp; for a test marked `workers`, with Celery workers ready to
    supervise runs and execute attempts (most pages only read the database, and starting the workers is most
    of a test's set-up). (pytest-django's `live_server` serves WSGI only: no websockets, so no live pages.)"""
    if request.node.get_closest_marker("workers") is None:
        return cluster.start_daphne()
    with ThreadPoolExecutor() as pool:  # the three start up (import Django, Celery) side by side
        started = [
            pool.submit(cluster.start_worker, "gpu", "gpu"),
            pool.submit(cluster.start_worker, "sandbox", "sandbox", concurrency=2),
            pool.submit(cluster.start_daphne),
        ]
    return [each.result() for each in started][-1]


@pytest.fixture
def sync_api():
    """playwright's sync API, or a skip (before any server starts) when Chromium or playwright is missing."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (scripts/system.sh installs Debian's chromium)")
    return pytest.importorskip("playwright.sync_api")


@pytest.fixture
def browser(sync_api, asgi_server):
    """Headless Chromium, per test: playwright's sync API keeps an asyncio loop running in this thread,
    where Django refuses ORM calls, so it must be gone before the test database is flushed."""
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser, asgi_server) -> Iterator:
    """A fresh browser context (no cookies) whose relative URLs go to `asgi_server`."""
    context = browser.new_context(base_url=asgi_server, viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def log_in() -> Callable[..., None]:
    """`log_in(page, username, password)`: sign `page` in through the login form, as a user would."""

    def sign(page, username: str, password: str) -> None:
        page.goto("/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("main button[type=submit]")
        page.wait_for_load_state()

    return sign


@pytest.fixture
def iris(asgi_server):
    """The bundled iris competition, seeded once the server runs and before the browser opens a page."""
    from webapp.competitions.management.commands.seed_competitions import seed_one

    return seed_one("iris-species")


@pytest.fixture
def screenshot(page) -> Callable[[str], Path]:
    """`screenshot("run-live")` writes the whole page to <PRACTICUM_SCREENSHOTS>/run-live.png."""
    folder = Path(os.environ.get("PRACTICUM_SCREENSHOTS") or ROOT / "var" / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)

    def take(name: str) -> Path:
        path = folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


def load_bundle_helpers():
    """tests/webapp/conftest.py, whose write_bundle and zip_folder make the tiny churn competition."""
    path = Path(__file__).resolve().parents[1] / "webapp" / "conftest.py"
    spec = importlib.util.spec_from_file_location("practicum_test_bundles", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def bundle_zip(tmp_path) -> Path:
    """A valid competition bundle (tiny-churn, "Tiny Churn") as a .zip, as a user would upload it."""
    helpers = load_bundle_helpers()
    folder = helpers.write_bundle(tmp_path / "tiny-churn")
    return helpers.zip_folder(folder, tmp_path / "tiny-churn.zip")


# A finished run made in the database, for pages that only read it (the run page, the screenshot walk).
FINISHED_ATTEMPTS, FINISHED_BUDGET = 6, 10
FINISHED_SCORES = [0.50, None, 0.40, 0.45, 0.30, None]  # rmsle: lower is better, so attempt 5 is the best


@pytest.fixture
def rmsle_competition(owner):
    from webapp.competitions.models import Competition

    return Competition.objects.create(
        slug="house-prices", name="House prices", owner=owner, is_public=True, description="Predict prices.",
        metric="rmsle", id_column="id", target_columns=["price"], time_limit_s=60, memory_mb=512,
    )  # fmt: skip


@pytest.fixture
def finished_run(owner, rmsle_competition) -> int:
    """A finished grammar run of six attempts (two invalid) and three policy updates, made in the database."""
    return make_finished_run(owner, rmsle_competition, "summary")


@pytest.fixture
def second_finished_run(owner, rmsle_competition) -> int:
    """Another such run on the same competition, its scores 10 % better: something to compare with."""
    return make_finished_run(owner, rmsle_competition, "second", scale=0.9)


def make_finished_run(owner, competition, name: str, *, scale: float = 1.0) -> int:
    """A finished run like `finished_run`'s, its scores multiplied by `scale`; returns its id."""
    from django.utils import timezone

    from rl_core.run_spec import RunConfig
    from webapp.runs.models import Attempt, LearnerStep, Run

    start = timezone.now() - timedelta(minutes=5)
    run = Run.objects.create(
        owner=owner, name=name, is_public=True, status=Run.Status.FINISHED, policy="grammar",
        config=RunConfig(attempts=FINISHED_BUDGET, batch=2).to_dict(), policy_version=3,
        attempts_done=FINISHED_ATTEMPTS, started_at=start, finished_at=start + timedelta(seconds=125),
    )  # fmt: skip
    run.competitions.add(competition)
    for number, score in enumerate(FINISHED_SCORES, start=1):
        Attempt.objects.create(
            run=run, key=f"0-{number}", competition=competition, number=number, policy_version=number // 2,
            status="ok" if score else "error", valid=score is not None, score=score and score * scale,
            stages=["imports_done"], reward=1.2 if score else -0.9, duration_s=float(number),
            started_at=start, finished_at=start + timedelta(seconds=10 * number),
            program=f"print({number} * {scale})\n",
        )  # fmt: skip
    best = Attempt.objects.get(run=run, number=5)
    Run.objects.filter(id=run.id).update(best_score=best.score, best_attempt=best)
    for version in (1, 2, 3):
        metrics = {"losses/policy": 0.1 * version, "charts/entropy": 1.0}
        LearnerStep.objects.create(
            run=run, version=version, attempts_done=2 * version, wall_s=float(version), metrics=metrics
        )
    return run.id
