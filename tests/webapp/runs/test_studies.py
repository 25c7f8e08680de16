"""Studies: arms in words, checked before anything is stored; one quota slot; runs made one at a time in
seed-major order; advancing once however often it is asked; cancelling; the statistics from the runs' rows."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rl_core import studies as stats
from rl_core.outcome import AttemptOutcome
from webapp.runs import quotas, services, studies, study_reads
from webapp.runs.models import Run, Study
from webapp.runs.quotas import QuotaExceeded
from webapp.runs.study_plan import Arm, StudyError, parse_arm, parse_arms

pytestmark = pytest.mark.django_db

BASE = {"attempts": 4, "actors": 1, "batch": 2}
ARMS = [Arm("static", {"updates": False}), Arm("rl")]


@pytest.fixture
def start(competition, owner):
    def start_study(*, arms=ARMS, seeds=2, config=BASE, who=owner) -> Study:
        return studies.study_start(
            owner=who, competitions=[competition], config=config, arms=arms, seeds=seeds
        )

    return start_study


def end(run: Run, status=Run.Status.FINISHED) -> None:
    services.run_set_status(run_id=run.id, status=status)


def test_an_arm_in_words_reads_each_value_by_its_settings_kind():
    assert parse_arm("fast: updates=on, lr=0.1, batch=4, objective=reinforce") == Arm(
        "fast", {"updates": True, "lr": 0.1, "batch": 4, "objective": "reinforce"}
    )
    assert parse_arms("static: updates=off\n\nrl\n") == [Arm("static", {"updates": False}), Arm("rl")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("static: updates=maybe", "arm 'static': updates must be on or off, not 'maybe'"),
        ("static: speed=3", "arm 'static': unknown setting 'speed'"),
        ("static: updates", "arm 'static': write setting=value"),
        ("a\na", "two arms are called 'a'"),
        ("x: seed=3", "arm 'x': the study's seeds set the seed"),
        ("no name: x=1", "is not an arm name"),
    ],
)
def test_an_arm_that_cannot_be_read_is_refused_naming_the_arm_and_the_setting(text, message):
    with pytest.raises(StudyError, match=message) as refused:
        parse_arms(text)
    assert refused.value.field == "arms"


def test_a_study_starts_with_its_first_run_of_its_first_seed_and_arm(start):
    study = start()
    (run,) = study.runs.all()
    assert (run.study_arm, run.config["seed"], run.config["updates"], run.status) == (
        "static",
        0,
        False,
        "queued",
    )
    assert study.arms == [{"name": "static", "settings": {"updates": False}}, {"name": "rl", "settings": {}}]
    assert study.seeds == [0, 1] and study_reads.study_status(study) == "queued"


@pytest.mark.parametrize(
    ("arms", "seeds", "message"),
    [
        ([Arm("static", {"updates": "x"})], 2, "arm 'static': updates must be true or false"),
        ([Arm("big", {"batch": 0})], 2, "arm 'big': batch must be positive"),
        ([Arm("lm", {"instrumenter": "lm"})], 2, "arm 'lm': instrumenter 'lm' needs policy 'lm'"),
        (ARMS, 0, "seeds: a study has 1 to 20 seeds, not 0"),
        (ARMS, 21, "a study has 1 to 20 seeds"),
        ([Arm(f"a{i}") for i in range(7)], 2, "at most 6 arms"),
    ],
)
def test_a_refused_study_stores_nothing(start, arms, seeds, message):
    with pytest.raises(StudyError, match=message):
        start(arms=arms, seeds=seeds)
    assert not Study.objects.exists() and not Run.objects.exists()


def test_a_study_holds_one_run_slot_of_its_owners_quota(start, owner, settings):
    settings.PRACTICUM_MAX_RUNS_PER_USER = 1
    start()
    with pytest.raises(QuotaExceeded):
        start()
    assert Study.objects.count() == 1 and Run.objects.count() == 1


def test_between_two_runs_the_study_keeps_its_slot_until_its_last_run_ends(
    start, owner, settings, competition
):
    settings.PRACTICUM_MAX_RUNS_PER_USER = 1

    def start_a_run():
        return services.run_admit_create(owner=owner, competitions=[competition], config=BASE)

    study = start(seeds=1)
    first = study.runs.get()
    end(first)  # its supervisor has not made the next run yet
    with pytest.raises(QuotaExceeded, match="already have 1 run"):
        start_a_run()
    end(studies.study_continue(study_id=study.id))  # the last run ends: the slot is free
    start_a_run()


def test_a_study_between_runs_holds_its_widest_arms_actors(start, owner, settings):
    study = start(arms=[Arm("narrow"), Arm("wide", {"actors": 3})], seeds=1)
    end(study.runs.get())
    assert quotas.user_usage(owner=owner) == quotas.Usage(runs=1, in_flight=3)
    studies.study_cancel(study_id=study.id)
    assert quotas.user_usage(owner=owner) == quotas.Usage(runs=0, in_flight=0)


def test_the_runs_follow_in_seed_major_order_and_then_the_study_finishes(start):
    study = start()
    order = []
    for _ in range(4):
        run = study.runs.filter(status=Run.Status.QUEUED).get()
        order.append((run.config["seed"], run.study_arm))
        end(run)
        studies.study_advance(run_id=run.id)
    assert order == [(0, "static"), (0, "rl"), (1, "static"), (1, "rl")]
    assert study.runs.count() == 4 and study_reads.study_status(study) == "finished"
    assert studies.study_next_run(study) is None


def test_advancing_twice_makes_one_next_run_and_enqueues_it_once(start, django_capture_on_commit_callbacks):
    study = start()
    first = study.runs.get()
    end(first)
    with django_capture_on_commit_callbacks() as enqueued:
        made = studies.study_advance(run_id=first.id)
        again = studies.study_advance(run_id=first.id)
    handed_over = [c for c in enqueued if "run_enqueue" in c.__qualname__]  # the others publish events
    assert made is not None and again is None and study.runs.count() == 2 and len(handed_over) == 1


def test_a_study_does_not_advance_while_one_of_its_runs_is_active(start):
    study = start()
    assert studies.study_advance(run_id=study.runs.get().id) is None and study.runs.count() == 1


def test_a_failed_run_makes_way_for_the_next(start):
    study = start()
    first = study.runs.get()
    end(first, Run.Status.FAILED)
    assert studies.study_advance(run_id=first.id).study_arm == "rl"


def test_cancelling_a_study_cancels_its_active_run_and_starts_no_other(start):
    study = start()
    first = study.runs.get()
    studies.study_cancel(study_id=study.id)
    first.refresh_from_db()
    assert first.status == Run.Status.CANCELLED
    assert studies.study_advance(run_id=first.id) is None and study.runs.count() == 1
    assert study_reads.study_status(Study.objects.get(id=study.id)) == "cancelled"


def test_a_run_outside_any_study_advances_nothing(run):
    end(run)
    assert studies.study_advance(run_id=run.id) is None


def record(run: Run, valid: list[bool], versions: list[int]) -> None:
    """Training attempts finished one second apart, through the services."""
    services.run_set_status(run_id=run.id, status=Run.Status.RUNNING)
    for i, (ok, version) in enumerate(zip(valid, versions, strict=True)):
        key = f"{run.id}-{i}"
        services.attempt_start(
            run_id=run.id, key=key, competition=run.competitions.get(), policy_version=version,
            sample_fields={"prompt_kind": "solve", "family": "knn", "info": {}, "response": ""},
        )  # fmt: skip
        outcome = {"status": "ok", "duration_s": 1.0, "stages": [], "grade_error": "", "program": "x",
                   "valid": ok, "score": 0.5 if ok else None, "reward": 0.5 if ok else None}  # fmt: skip
        services.attempt_finish(
            run_id=run.id, key=key, outcome=AttemptOutcome.from_dict(outcome), staleness=0
        )
        run.attempts.filter(key=key).update(
            finished_at=Run.objects.get(id=run.id).started_at + timedelta(seconds=i + 1)
        )


def test_the_statistics_are_rl_core_studies_on_the_runs_training_attempts(start):
    study = start()
    pattern = {
        (0, "static"): ([True, False, False, True], [0, 0, 0, 0]),
        (0, "rl"): ([False, True, True, True], [0, 0, 1, 1]),
        (1, "static"): ([False, False, True, False], [0, 0, 0, 0]),
        (1, "rl"): ([True, False, True, True], [0, 0, 1, 1]),
    }
    for _ in range(4):
        run = study.runs.filter(status=Run.Status.QUEUED).get()
        record(run, *pattern[(run.config["seed"], run.study_arm)])
        end(run)
        studies.study_advance(run_id=run.id)
    expected_runs = [
        stats.SeedArm(arm, seed, valid, versions, [0.5 if v else 0.0 for v in valid], [1.0, 2.0, 3.0, 4.0])
        for (seed, arm), (valid, versions) in pattern.items()
    ]
    data = study_reads.study_statistics(study, smoothing=0.3)
    (test,) = stats.compare_arms(expected_runs, ["static", "rl"], after_first_update=True)
    assert [{k: v for k, v in t.items() if k != "words"} for t in data["tests"]] == [test.as_dict()]
    assert data["after_first_update"] and "after the first policy update" in data["counted"]
    rl_runs = [r for r in expected_runs if r.arm == "rl"]
    assert data["curves"]["rl"] == {"seeds": 2, **stats.arm_curves(rl_runs, 0.3)}
    assert data["windows"]["rl"] == stats.windows(rl_runs, count=4, budget=4)
    assert data["time"]["grid"] == stats.time_grid(expected_runs)
    assert data["status"] == "finished" and [r["arm"] for r in data["runs"]] == ["static", "rl"] * 2


def test_a_study_stalled_between_two_runs_gets_its_next_run_from_recovery(start):
    study = start()
    first = study.runs.get()
    end(first)  # and its supervisor died before study_advance
    (made,) = studies.studies_continue_stalled()
    assert (made.study_arm, made.status) == ("rl", Run.Status.QUEUED)
    assert studies.studies_continue_stalled() == [], "its next run is active now"
