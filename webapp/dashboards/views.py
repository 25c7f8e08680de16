"""Run pages: the list, the live run dashboard, one attempt. The live data comes over the websocket."""

from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control

from webapp.runs import selectors
from webapp.runs.models import Attempt, Run
from webapp.runs.payloads import attempt_detail


def run_list(request: HttpRequest) -> HttpResponse:
    runs = selectors.runs_visible_to(user=request.user).select_related("owner").prefetch_related("competitions")
    return render(request, "dashboards/run_list.html", {"runs": runs[:200]})


def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = visible_run_or_404(request, run_id)
    return render(request, "dashboards/run.html", {"run": run})


def attempt_page(request: HttpRequest, run_id: int, number: int) -> HttpResponse:
    run = visible_run_or_404(request, run_id)
    attempt = run.attempts.select_related("competition").filter(number=number).first()
    if attempt is None:
        raise Http404("No such attempt.")
    best = run.best_attempt if run.best_attempt_id and run.best_attempt_id != attempt.id else None
    context = {"run": run, "attempt": attempt, "detail": attempt_detail(attempt), "best": best,
               "diff": program_diff(best, attempt) if best else ""}  # fmt: skip
    return render(request, "dashboards/attempt.html", context)


def program_diff(old: Attempt, new: Attempt) -> str:
    lines = difflib.unified_diff(
        old.program.splitlines(), new.program.splitlines(),
        fromfile=f"attempt {old.number} (best)", tofile=f"attempt {new.number}", lineterm="",
    )  # fmt: skip
    return "\n".join(lines)


ASSETS = Path(__file__).resolve().parent / "assets"


def asset(request: HttpRequest, name: str) -> HttpResponse:
    """The dashboards' own scripts (a fixed set of files in assets/)."""
    path = ASSETS / name
    if name not in {p.name for p in ASSETS.iterdir()}:
        raise Http404("No such asset.")
    return HttpResponse(path.read_text(), content_type="application/javascript")


@cache_control(max_age=86400, public=True)
def plotly_js(request: HttpRequest) -> HttpResponse:
    """plotly.js from the installed plotly package: dashboards work with no internet access."""
    return HttpResponse(bundled_plotly_js(), content_type="application/javascript")


@lru_cache(maxsize=1)
def bundled_plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def visible_run_or_404(request: HttpRequest, run_id: int) -> Run:
    run = selectors.run_get_visible(run_id=run_id, user=request.user)
    if run is None:
        raise Http404("No such run.")
    return run
