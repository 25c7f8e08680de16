"""A run's result on a competition, and the reads that leaderboards, exports and retention need for it
(issue 28). A validation run's result there is its final grading (`selectors.FINAL_KIND`: its chosen program
graded once on the hidden answers); a hidden run's is its first attempt with its best valid score (test
feedback, as the paper's setup has it). Every read here is a fixed number of queries however many runs."""

from __future__ import annotations

from typing import Any

from django.db.models import Case, Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Sum, When
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from rl_core.metrics import get_metric
from webapp.competitions.models import Competition
from webapp.runs.models import Attempt, Run
from webapp.runs.selectors import FINAL_KIND, run_competitions

VALIDATION_RUN = Q(config__reward_source="validation")
"""The runs whose reward source is "validation"; a run without the setting (older runs) is "hidden"."""
LIGHT_FIELDS = ("run_id", "key", "number", "prompt_kind", "parent_key", "valid", "score", "finished_at")


def runs_with_reward_source(runs: QuerySet[Run], *, source: str) -> QuerySet[Run]:
    """The runs among `runs` whose reward source is `source` ("validation"; anything else: "hidden")."""
    if source == "validation":
        return runs.filter(VALIDATION_RUN)
    # not .exclude(VALIDATION_RUN): SQL's NOT would drop the runs without the key (NULL) too
    return runs.filter(~Q(config__has_key="reward_source") | Q(config__reward_source="hidden"))


def runs_annotate_result(runs: QuerySet[Run], *, competition: Competition) -> QuerySet[Run]:
    """`runs` with `result_id`: the attempt whose grade is each run's result on `competition`, computed in
    the same query. A validation run's is its final grading there (valid or not; None before it is graded);
    a hidden run's, its first attempt with its best valid score there (None without a valid attempt)."""
    on_competition = Attempt.objects.filter(run_id=OuterRef("id"), competition=competition)
    final = on_competition.filter(prompt_kind=FINAL_KIND)
    best_first = "-score" if get_metric(competition.metric).higher_is_better else "score"
    graded = on_competition.filter(valid=True, score__isnull=False).exclude(prompt_kind=FINAL_KIND)
    best = graded.order_by(best_first, "number")
    return runs.annotate(
        result_id=Case(
            When(VALIDATION_RUN, then=Subquery(final.values("id")[:1])),
            default=Subquery(best.values("id")[:1]),
        )
    )


def result_attempt_rows(*, attempt_ids: list[int]) -> dict[int, Attempt]:
    """run id -> its attempt among `attempt_ids` (results, one per run), light (no program text)."""
    return {a.run_id: a for a in Attempt.objects.filter(id__in=attempt_ids).only(*LIGHT_FIELDS)}


def chosen_attempt_rows(*, finals: list[Attempt]) -> dict[int, Attempt]:
    """run id -> the attempt whose program each final grading graded (its `parent_key`), light."""
    wanted = {(a.run_id, a.parent_key) for a in finals}
    rows = Attempt.objects.filter(run_id__in={r for r, _ in wanted}, key__in={k for _, k in wanted})
    return {a.run_id: a for a in rows.only(*LIGHT_FIELDS) if (a.run_id, a.key) in wanted}


def competition_run_tallies(*, competition: Competition, run_ids: list[int]) -> dict[int, dict[str, Any]]:
    """run id -> {attempts, valid, executor_s, tokens}, in one grouped query. `attempts` and `valid` count
    the run's finished training attempts on `competition` (lost ones and final gradings left out);
    `executor_s` (the sum of duration_s) and `tokens` (of info["new_tokens"]: an LM's sampled tokens; None
    for the grammar policy) are over all the run's attempts: the compute the whole run spent."""
    trained = Q(competition=competition) & ~Q(prompt_kind=FINAL_KIND)
    trained &= ~Q(status__in=(Attempt.Status.RUNNING, Attempt.Status.LOST))
    rows = (
        Attempt.objects.filter(run_id__in=run_ids)
        .values("run_id")
        .annotate(
            attempts=Count("id", filter=trained),
            valid=Count("id", filter=trained & Q(valid=True)),
            executor_s=Sum("duration_s"),
            tokens=Sum(Cast(KT("info__new_tokens"), IntegerField())),
        )
        .order_by()  # the model's default ordering would split the groups
    )
    return {row.pop("run_id"): row for row in rows}


def run_results(*, run: Run) -> list[tuple[Competition, Attempt | None]]:
    """Each of the run's competitions, by slug, with the attempt whose grade is its result there
    (`runs_annotate_result`), or None."""
    results = []
    for competition in run_competitions(run_id=run.id):
        one = runs_annotate_result(Run.objects.filter(id=run.id), competition=competition)
        attempt_id = one.values_list("result_id", flat=True).first()
        results.append((competition, Attempt.objects.filter(id=attempt_id).first() if attempt_id else None))
    return results


def runs_result_attempt_keys(*, run_ids: list[int]) -> set[tuple[int, str]]:
    """(run id, key) of every attempt whose submission is one of these runs' results (what exports need):
    final gradings, each run's `final_attempt`, and each run's result per competition."""
    gradings = Attempt.objects.filter(run_id__in=run_ids, prompt_kind=FINAL_KIND)
    keys = set(gradings.values_list("run_id", "key"))
    finals = Run.objects.filter(id__in=run_ids, final_attempt__isnull=False)
    keys |= set(finals.values_list("id", "final_attempt__key"))
    for competition in Competition.objects.filter(runs__id__in=run_ids).distinct():
        runs = Run.objects.filter(id__in=run_ids, competitions=competition)
        ids = runs_annotate_result(runs, competition=competition).values("result_id")
        keys |= set(Attempt.objects.filter(id__in=ids).values_list("run_id", "key"))
    return keys
