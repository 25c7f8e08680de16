"""Whether a run is active or cancelled is decided once (webapp.runs.selectors), for the web layer and the
workers alike; a run that no longer exists is neither active nor something to keep working for."""

from __future__ import annotations

import pytest

from rl_core.run_spec import RunConfig
from webapp.runs import selectors, services
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(iris):
    config = RunConfig().to_dict()
    return services.run_create(owner=None, competitions=[iris], policy="grammar", config=config)


def activity(run_id: int) -> tuple[bool, bool]:
    """(active, cancelled), as the selectors say."""
    return selectors.run_is_active(run_id=run_id), selectors.run_is_cancelled(run_id=run_id)


def test_a_queued_or_running_run_is_active_and_not_cancelled(run):
    assert activity(run.id) == (True, False)
    services.run_set_status(run_id=run.id, status=Run.Status.RUNNING)
    assert activity(run.id) == (True, False)
    assert list(selectors.runs_active()) == [run]


def test_a_cancelled_run_is_cancelled_and_no_longer_active(run):
    services.run_cancel(run_id=run.id)
    assert activity(run.id) == (False, True)
    assert list(selectors.runs_active()) == []


def test_a_finished_run_is_neither_active_nor_cancelled(run):
    services.run_set_status(run_id=run.id, status=Run.Status.FINISHED)
    assert activity(run.id) == (False, False)


def test_a_deleted_run_counts_as_cancelled_so_whatever_drives_it_stops(run):
    run_id = run.id
    run.delete()
    assert activity(run_id) == (False, True)
