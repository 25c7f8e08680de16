"""How the web layer hands a run to the workers without importing them: through the dispatcher that
`settings.RUN_DISPATCHER` names (a dotted path, like Django's EMAIL_BACKEND).

The settings choose by REDIS_URL: with a broker, workers.dispatch.CeleryDispatcher (the run's supervisor is
a task on the `gpu` queue); without, workers.dispatch.ThreadDispatcher (a thread of this process: the
embedded mode of `make demo`). Either way dependencies run one way, workers -> webapp -> rl_core: the web
process loads the dispatcher's module only when it first starts a run, and never torch (the thread
dispatcher imports it inside the thread).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string


class Dispatcher(Protocol):
    """Where a run's work happens. `start` returns at once; `drive` and `warm_start` run in the caller."""

    def start(self, run_id: int) -> None:
        """Hand the run to a supervisor elsewhere (a Celery worker, or a thread)."""

    def drive(self, run_id: int, *, observer_wrapper: Callable[[Any], Any] | None = None) -> Any:
        """Drive the run to its end in this thread (`manage.py train`); returns the loop's summary, or
        None when the run was cancelled."""

    def warm_start(self, *, request: Any, say: Callable[[str], None], on_step: Any = None) -> dict[str, Any]:
        """Fine-tune a fresh LM on demonstrations here (`manage.py warmstart`; request: a
        webapp.runs.warmstarts.WarmStartRequest); returns what it stored."""


def dispatcher() -> Dispatcher:
    """The dispatcher settings.RUN_DISPATCHER names."""
    return import_string(settings.RUN_DISPATCHER)()


def run_enqueue(*, run_id: int) -> None:
    """Hand the run to a supervisor once the current transaction commits (at once outside one): a
    supervisor never looks for a run the database does not have yet."""
    transaction.on_commit(lambda: dispatcher().start(run_id))
