"""Why a run stops before its budget: the exceptions an observer or an executor raises inside
rl_core.loop.run_loop to end it early.

The loop does not catch them: they pass through it to its caller (workers.driver), which tells them apart
from a failure. Both live here, in the library, because the executors that raise them (workers.executor)
and the driver that handles them sit in different layers.
"""

from __future__ import annotations


class RunCancelled(Exception):
    """The run was cancelled from the UI or the API, or deleted: stop, and kill the attempts in flight."""


class Superseded(Exception):
    """Another supervisor has taken the run over (this one was presumed dead after a long stall). Not a
    failure: the run, its attempts in flight and its status are the new one's, so stop without touching
    them."""
