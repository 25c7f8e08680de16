"""Per-user quotas and admission control, so that one user cannot starve the others of workers.

Two limits, checked when a run is started (`run_admit`, called by services.run_start):
- PRACTICUM_MAX_RUNS_PER_USER (default 2): runs of one user queued or running at once;
- PRACTICUM_MAX_IN_FLIGHT_PER_USER (default 8): attempts of one user in flight at once, over all of
  their active runs. A run keeps exactly `actors` attempts in flight (the loop replaces each one as it
  finishes), so the sum of `actors` over a user's active runs is what they hold of the sandbox queue.

Admission is the whole of the fairness policy: the sandbox queue itself is first in, first out, and a
user within quota holds at most PRACTICUM_MAX_IN_FLIGHT_PER_USER of its messages and worker slots, so
with that limit at or below (sandbox slots / users expected at once) nobody waits behind one user's
backlog. Runs without an owner (`manage.py train` without --owner, the operator's) are not limited.
Concurrent starts by one user are serialised by locking their user row, so two requests cannot both
take the last slot. A study counts as one active run from its start to its last run's end, between its runs
too (webapp.runs.studies).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from rl_core.run_spec import RunConfig
from webapp.runs import selectors, study_reads


class QuotaExceeded(ValueError):
    """A run refused by admission control; the message says which limit and what to do."""


@dataclass(frozen=True)
class Quota:
    max_runs: int
    """Runs queued or running at once."""
    max_in_flight: int
    """Attempts in flight at once, over all active runs."""


@dataclass(frozen=True)
class Usage:
    runs: int
    """Active (queued or running) runs."""
    in_flight: int
    """The sum of `actors` over them."""


def user_quota() -> Quota:
    """The limits in force (webapp.settings reads and checks them at start-up)."""
    return Quota(
        max_runs=settings.PRACTICUM_MAX_RUNS_PER_USER, max_in_flight=settings.PRACTICUM_MAX_IN_FLIGHT_PER_USER
    )


def user_usage(*, owner) -> Usage:
    """The owner's active runs, and their studies between two runs: a study holds its slot, and its widest
    arm's actors, from its start to its last run's end (webapp.runs.studies)."""
    configs = selectors.runs_active().filter(owner=owner).values_list("config", flat=True)
    actors = [int(config.get("actors", RunConfig.actors)) for config in configs]
    actors += [study_reads.widest_actors(study) for study in study_reads.studies_between_runs(owner=owner)]
    return Usage(runs=len(actors), in_flight=sum(actors))


def refusal(usage: Usage, quota: Quota, actors: int) -> str | None:
    """Why a new run with `actors` actors is refused, in one sentence, or None when it is admitted.

    >>> refusal(Usage(runs=1, in_flight=6), Quota(max_runs=2, max_in_flight=8), actors=4)[-45:]
    '(the limit is 8 per user): lower actors to 2.'
    >>> refusal(Usage(runs=1, in_flight=2), Quota(max_runs=2, max_in_flight=8), actors=4) is None
    True
    """
    if usage.runs >= quota.max_runs:
        return (
            f"You already have {usage.runs} run{'' if usage.runs == 1 else 's'} queued or running "
            f"(the limit is {quota.max_runs} per user): "
            "wait for one to finish, or cancel one."
        )
    if usage.in_flight + actors > quota.max_in_flight:
        room = quota.max_in_flight - usage.in_flight
        advice = f"lower actors to {room}" if room > 0 else "wait for a run to finish, or cancel one"
        return (
            f"This run would keep {actors} attempts in flight and your active runs already keep "
            f"{usage.in_flight} (the limit is {quota.max_in_flight} per user): {advice}."
        )
    return None


def run_admit(*, owner, config: RunConfig) -> None:
    """Admit a new run of `owner` with `config`, or raise QuotaExceeded. Call inside the transaction that
    creates the run (it locks the owner's row until that transaction ends)."""
    if owner is None:
        return
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=owner.pk).first()
        reason = refusal(user_usage(owner=owner), user_quota(), config.actors)
    if reason is not None:
        raise QuotaExceeded(reason)
