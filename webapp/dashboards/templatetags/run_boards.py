"""`{% load run_boards %}{% run_leaderboard competition %}`: the runs leaderboard, for the competition
page's `run_leaderboard` block (the page's start-a-run button sits at its top), filtered by reward source
when the page's URL asks (`?source=validation` or `?source=hidden`; `all` or nothing shows every run)."""

from __future__ import annotations

from django import template

from webapp.dashboards.leaderboard import SOURCES, competition_leaderboard

register = template.Library()

SOURCE_CHOICES = (
    ("", "all"),
    ("validation", "validation · clean"),
    ("hidden", "hidden answers · test feedback"),
)


@register.inclusion_tag("dashboards/_leaderboard.html", takes_context=True)
def run_leaderboard(context, competition) -> dict:
    request = context["request"]
    source = request.GET.get("source", "")
    source = source if source in SOURCES else ""
    rows = competition_leaderboard(competition=competition, user=request.user, source=source or None)
    return {
        "competition": competition, "rows": rows, "user": request.user, "with_start": False,
        "with_filter": True, "source": source, "source_choices": SOURCE_CHOICES,
    }  # fmt: skip
