"""The distributed-execution settings, each read from Django settings when defined there, otherwise from the
environment (through webapp.env's strict readers), otherwise its default.

| variable                         | default | meaning                                                     |
|----------------------------------|---------|-------------------------------------------------------------|
| PRACTICUM_ATTEMPT_LEASE_S        | 30      | a running attempt's heartbeat lease; a worker silent this   |
|                                  |         | long is presumed dead and the attempt is re-dispatched      |
| PRACTICUM_SUPERVISOR_LEASE_S     | 60      | the same for a run's supervisor                             |
| PRACTICUM_MAX_TRIES              | 3       | executions of one attempt before it is marked `lost`        |
| PRACTICUM_VISIBILITY_TIMEOUT_S   | 172800  | Redis visibility timeout: above the longest run (2 days)    |
| PRACTICUM_RESULT_POLL_S          | 1       | how often the supervisor checks leases when no result comes |
| PRACTICUM_RECOVERY_INTERVAL_S    | 60      | how often celery beat looks for runs whose supervisor died  |
"""

from __future__ import annotations

from django.conf import settings

from webapp.env import env_int

DEFAULTS = {
    "PRACTICUM_ATTEMPT_LEASE_S": 30,
    "PRACTICUM_SUPERVISOR_LEASE_S": 60,
    "PRACTICUM_MAX_TRIES": 3,
    "PRACTICUM_VISIBILITY_TIMEOUT_S": 2 * 24 * 3600,
    "PRACTICUM_RESULT_POLL_S": 1,
    "PRACTICUM_RECOVERY_INTERVAL_S": 60,
}


def option(name: str) -> int:
    """The value of one of `DEFAULTS`' settings (always at least 1).

    >>> option("PRACTICUM_MAX_TRIES") >= 1
    True
    """
    configured = getattr(settings, name, None)
    if configured is not None:
        return int(configured)
    return env_int(name, DEFAULTS[name], minimum=1)
