"""`{% load scores %}`: scores as people read them, at the precision of rl_core.metrics.format_score.

`{{ attempt.score|score }}` gives "0.21940" (or "–" for no score); `{{ attempt.score|score_in:metric }}`,
with a Metric or a metric's name, gives "rmsle 0.21940 (lower is better)".
"""

from __future__ import annotations

from django import template

from rl_core.metrics import Metric, format_score, get_metric

register = template.Library()


@register.filter
def score(value: float | None) -> str:
    """The score with five significant digits, or "–" when there is none."""
    return "–" if value is None else format_score(float(value))


@register.filter
def score_in(value: float | None, metric: Metric | str) -> str:
    """The score with its metric's name and direction: "rmsle 0.21940 (lower is better)"."""
    metric = metric if isinstance(metric, Metric) else get_metric(str(metric))
    return f"{metric.name} {score(value)} ({metric.direction})"
