"""The run page and `manage.py demo` say loudly when scores come from programs that could read the answers
(rl_core.sandbox's "unisolated" level, allowed by PRACTICUM_ALLOW_UNISOLATED)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from rl_core import sandbox
from webapp.dashboards.management.commands import demo
from webapp.runs.models import Attempt

WARNING = "Scores are not trustworthy"


def test_the_run_page_warns_when_an_attempt_ran_unisolated(as_user, owner, run, finish):
    attempt = finish(run, score=0.5)
    Attempt.objects.filter(id=attempt.id).update(isolation="unisolated")
    assert WARNING in as_user(owner).get(reverse("dashboards:run", args=[run.id])).content.decode()


def test_the_run_page_does_not_warn_when_attempts_ran_isolated(as_user, owner, run, finish):
    finish(run, score=0.5)
    assert WARNING not in as_user(owner).get(reverse("dashboards:run", args=[run.id])).content.decode()


def test_the_run_page_warns_when_this_machine_runs_attempts_unisolated_by_opt_in(
    as_user, owner, run, settings, monkeypatch
):
    settings.PRACTICUM_ALLOW_UNISOLATED = True
    monkeypatch.setattr(sandbox, "isolation_level", lambda: "unisolated")
    assert WARNING in as_user(owner).get(reverse("dashboards:run", args=[run.id])).content.decode()


@pytest.mark.parametrize(("allowed", "says"), [(True, "NOT TRUSTWORTHY"), (False, "will be refused")])
def test_the_demo_says_loudly_what_an_unisolated_sandbox_means(allowed, says, settings, monkeypatch, capsys):
    settings.PRACTICUM_ALLOW_UNISOLATED = allowed
    monkeypatch.setattr(demo, "isolation_level", lambda: "unisolated")
    demo.warn_if_unisolated()
    err = capsys.readouterr().err
    assert says in err and "PRACTICUM_ALLOW_UNISOLATED" in err
