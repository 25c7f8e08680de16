"""Fixtures for the dashboard tests: attempts finished through the real services, a second run, a
public run, and clients logged in as the cast."""

from __future__ import annotations

import pytest

from rl_core.outcome import AttemptOutcome
from rl_core.run_spec import RunConfig
from webapp.runs import services

PROGRAM = "import pandas as pd\nmodel = 'knn'\nprint('fit')\n"


def result(*, score: float | None, program: str = PROGRAM, duration_s: float = 1.0) -> dict:
    valid = score is not None
    return {
        "status": "ok" if valid else "error", "exit_code": 0 if valid else 1, "duration_s": duration_s,
        "stages": ["imports_done", "data_loaded"] + (["submission_written"] if valid else []),
        "valid": valid, "score": score, "grade_error": "" if valid else "no file", "reward": score or -1.0,
        "isolation": "rlimits", "stdout_tail": "fit\n", "stderr_tail": "", "plan": "Fit a model.",
        "program": program, "instrumented_program": "mark()\n" + program, "instrumentation": "ast",
    }  # fmt: skip


@pytest.fixture
def finish():
    """finish(run, score=..., program=..., kind=..., info=...) -> Attempt: start and finish one attempt
    through the services (kind: its prompt kind; info: what the policy said of its sample)."""
    counter = iter(range(100_000))

    def make(
        run, *, score: float | None, program: str = PROGRAM, duration_s: float = 1.0, family: str = "knn",
        kind: str = "solve", info: dict | None = None,
    ):  # fmt: skip
        key = f"0-{next(counter)}"
        sample = {
            "prompt_kind": kind,
            "family": family,
            "info": info or {},
            "response": f"plan\n```python\n{program}```",
        }
        competition = run.competitions.get()
        services.attempt_start(
            run_id=run.id, key=key, competition=competition, sample_fields=sample, policy_version=0
        )
        return services.attempt_finish(
            run_id=run.id,
            key=key,
            outcome=AttemptOutcome.from_dict(result(score=score, program=program, duration_s=duration_s)),
            staleness=0,
        )

    return make


@pytest.fixture
def other_run(competition, owner):
    """A second run of `owner` on the same competition, with a different seed and batch."""
    config = RunConfig(attempts=4, seed=7, batch=2).to_dict()
    return services.run_create(owner=owner, competitions=[competition], policy="grammar", config=config)


@pytest.fixture
def public_run(competition, owner):
    config = RunConfig(attempts=4).to_dict()
    return services.run_create(
        owner=owner, competitions=[competition], policy="grammar", config=config, is_public=True
    )


@pytest.fixture
def as_user(client):
    """as_user(user or None) -> the test client logged in as that user (None: anonymous)."""

    def login(user):
        if user is not None:
            client.force_login(user)
        return client

    return login


@pytest.fixture
def validation_run(competition, owner):
    """A queued grammar run of `owner` on `competition` whose reward source is a validation split."""
    config = RunConfig(attempts=4, reward_source="validation").to_dict()
    return services.run_create(owner=owner, competitions=[competition], policy="grammar", config=config)


@pytest.fixture
def grade_final():
    """grade_final(run, score=..., chosen=attempt) -> Attempt: record the run's one final grading on the
    hidden answers (what workers.driver.record_final stores), of `chosen`'s program."""

    def make(run, *, score: float | None, chosen, duration_s: float = 1.0):
        outcome = AttemptOutcome.from_dict(result(score=score, duration_s=duration_s))
        competition = run.competitions.get()
        return services.final_grade_record(
            run_id=run.id, competition=competition, key=f"final-{competition.slug}", parent_key=chosen.key,
            response=chosen.response, outcome=outcome, policy_version=0,
        )  # fmt: skip

    return make
