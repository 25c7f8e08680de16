"""The `scores` template filters: a score at five significant digits, with its metric's name and direction."""

from __future__ import annotations

from django.template import Context, Template

from webapp.dashboards.templatetags.scores import score, score_in


def test_a_score_reads_with_its_metrics_name_and_direction_by_name_or_metric():
    from rl_core.metrics import get_metric

    assert score_in(25432.123, "rmse") == "rmse 25432 (lower is better)"
    assert score_in(0.912345678, get_metric("roc_auc")) == "roc_auc 0.91235 (higher is better)"


def test_no_score_reads_as_a_dash():
    assert score(None) == "–"


def test_the_filters_load_in_a_template():
    template = Template("{% load scores %}{{ value|score }} / {{ value|score_in:'rmsle' }}")
    assert template.render(Context({"value": 0.21940183})) == "0.21940 / rmsle 0.21940 (lower is better)"
