"""The home page: what Practicum is in two sentences, the run worth watching now, and where to go next."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.competitions import selectors as competition_selectors
from webapp.runs import selectors


def home(request: HttpRequest) -> HttpResponse:
    """`/`: the newest active run the visitor may see (the demo's live run), else the newest finished one,
    linked first; then starting a run, uploading a competition, the competitions, compare and the API."""
    context = {
        "showcase": selectors.run_showcase_for(user=request.user),
        "competition_count": competition_selectors.competitions_visible_to(user=request.user).count(),
    }
    return render(request, "home.html", context)
