"""`{% load run_boards %}{% run_leaderboard competition %}`: the runs leaderboard and a start-a-run
button, for the competition page's `run_leaderboard` block."""

from __future__ import annotations

from django import template

from webapp.dashboards.leaderboard import competition_leaderboard

register = template.Library()


@register.inclusion_tag("dashboards/_leaderboard.html", takes_context=True)
def run_leaderboard(context, competition) -> dict:
    user = context["request"].user
    rows = competition_leaderboard(competition=competition, user=user)
    return {"competition": competition, "rows": rows, "user": user, "with_start": True}
