"""Run pages: the list, the live run dashboard, one attempt, starting, cloning and cancelling runs, the
compare page, exports, the API token and API reference pages. Each view checks who is asking (the
selectors decide visibility), calls one service or builder, and renders; live data comes over the websocket.
"""

from __future__ import annotations

import gzip
from functools import lru_cache
from pathlib import Path

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_POST

from webapp.competitions import selectors as competition_selectors
from webapp.competitions.models import Competition
from webapp.dashboards import (
    ancestry,
    apidocs,
    compare,
    exports,
    forms,
    leaderboard,
    run_page,
    run_table,
    tokens,
)
from webapp.runs import arrival, selectors, services, studies, study_reads
from webapp.runs.models import Attempt, Run, Study
from webapp.runs.payloads import attempt_detail
from webapp.runs.presets import PRESETS

EXPORT_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json"}


def run_list(request: HttpRequest) -> HttpResponse:
    """`/runs/?competition=SLUG&status=running&sort=best`: the visible runs, filtered and sorted
    (run_table), each best score with its metric and direction; ticked runs open in compare."""
    filters = run_table.RunFilters.from_query(request.GET)
    context = {
        "rows": run_table.run_rows(user=request.user, filters=filters),
        "filters": filters,
        "sorts": run_table.SORTS,
        "statuses": Run.Status.values,
        "competition_choices": run_table.competition_choices(user=request.user),
    }
    return render(request, "dashboards/run_list.html", context)


def warm_start_list(request: HttpRequest) -> HttpResponse:
    """The stored warm starts the user may use, with what each was trained on."""
    warm_starts = selectors.warm_starts_visible_to(user=request.user)
    return render(request, "dashboards/warm_starts.html", {"warm_starts": warm_starts})


def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    """The live run page: a summary in words (run_page), the charts that matter, diagnostics folded."""
    run = visible_run_or_404(request, run_id)
    settings_in_words = run_page.run_setting_lines(run)
    context = {
        "run": run,
        "can_control": may_control(request, run),
        "evaluation": selectors.run_evaluation(run=run),
        "scores_untrustworthy": selectors.run_scores_untrustworthy(run=run),
        "metrics": run_page.run_metric_lines(run),
        "settings": settings_in_words,
        "settings_changed": sum(line.changed for line in settings_in_words),
        "reward_words": run_page.reward_in_words(run.config),
        "graded_on": run_page.graded_on_in_words(run.config),
        "reward_source": run.config.get("reward_source", "hidden"),
        "budget": run.config.get("attempts"),
        "best_number": run.best_attempt.number if run.best_attempt_id else None,
    }
    return render(request, "dashboards/run.html", context)


def run_arrival(request: HttpRequest, run_id: int) -> JsonResponse:
    """The run's launch share against completion share (webapp.runs.arrival), for its page's chart."""
    run = visible_run_or_404(request, run_id)
    return JsonResponse(arrival.run_arrival_shares(run=run))


def attempt_page(request: HttpRequest, run_id: int, number: int) -> HttpResponse:
    """One attempt: its grade in its metric's words, the diff from its parent (an improve prompt's program),
    a folded diff against the run's best, its neighbours by number and its bundle."""
    run = visible_run_or_404(request, run_id)
    attempt = attempt_or_404(run, number)
    parent = ancestry.attempt_parent(attempt)
    parent_attempt = parent.attempt if parent else None
    best = run.best_attempt if run.best_attempt_id and run.best_attempt_id != attempt.id else None
    previous_number, next_number = selectors.attempt_neighbour_numbers(attempt=attempt)
    context = {
        "run": run, "attempt": attempt, "detail": attempt_detail(attempt), "parent": parent, "best": best,
        "metric": competition_selectors.competition_metric(competition=attempt.competition),
        "parent_diff": program_diff(parent_attempt, attempt, "its parent") if parent_attempt else [],
        "best_diff": program_diff(best, attempt, "the run's best") if best else [],
        "previous_number": previous_number, "next_number": next_number,
    }  # fmt: skip
    return render(request, "dashboards/attempt.html", context)


def program_diff(old: Attempt, new: Attempt, label: str) -> list[ancestry.DiffLine]:
    return ancestry.program_diff_lines(old, new, old_label=label)


@login_required
def run_start(request: HttpRequest) -> HttpResponse:
    """GET: the form (`?competition=SLUG` preselects one). POST: start the run and open its page."""
    slug = request.GET.get("competition", "")
    competition = (
        competition_selectors.competition_get_visible(slug=slug, user=request.user) if slug else None
    )
    initial = forms.initial_for_competition(competition)
    if request.GET.get("warm_start"):  # from the warm starts page: an LM run starting from it
        initial |= {"warm_start": request.GET["warm_start"], "policy": "lm"}
    return run_form(request, initial=initial, source=None)


@login_required
def run_clone(request: HttpRequest, run_id: int) -> HttpResponse:
    """The start form prefilled with another visible run's settings; the new run records `cloned_from`."""
    source = visible_run_or_404(request, run_id)
    return run_form(request, initial=forms.initial_from_run(source), source=source)


def run_form(request: HttpRequest, *, initial: dict, source: Run | None) -> HttpResponse:
    visible = competition_selectors.competitions_visible_to(user=request.user)
    warm_starts = selectors.warm_start_choices(user=request.user)
    if initial.get("warm_start") and initial["warm_start"] not in dict(warm_starts):
        warm_starts.append((initial["warm_start"], f"{initial['warm_start']} (the cloned run's)"))
    form = forms.RunStartForm(
        request.POST or None, initial=initial, competitions=visible, warm_starts=warm_starts,
        base=source.config if source else None,
    )  # fmt: skip
    if request.method == "POST" and form.is_valid() and form.is_study(form.cleaned_data):
        study = start_study(request, form)
        if study is not None:
            return redirect("dashboards:study", study_id=study.id)
    elif request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = services.run_start(
                owner=request.user, competitions=list(data["competitions"]), config=data["config"],
                name=data["name"], is_public=data["is_public"], cloned_from=source,
            )  # fmt: skip
        except ValueError as error:  # a quota refusal, or a config the form could not check
            form.add_error(forms.field_named_in(str(error)), str(error))
        else:
            return redirect("dashboards:run", run_id=run.id)
    status = 400 if request.method == "POST" else 200
    context = {"form": form, "source": source, "sections": form.sections(), "presets": preset_choices(),
               "rl_against_static": forms.RL_AGAINST_STATIC}  # fmt: skip
    return render(request, "dashboards/run_start.html", context, status=status)


def start_study(request: HttpRequest, form: forms.RunStartForm) -> Study | None:
    """Start the study the valid form describes, or None with the refusal shown at its field."""
    data = form.cleaned_data
    try:
        return studies.study_start(
            owner=request.user, competitions=list(data["competitions"]), config=data["config"],
            arms=data["arms"], seeds=data["study_seeds"] or 1, name=data["name"], is_public=data["is_public"],
        )  # fmt: skip
    except ValueError as error:  # a quota refusal, or an arm whose settings do not go together
        form.add_error(forms.study_error_field(error), str(error))
        return None


def preset_choices() -> list[dict]:
    """The start form's preset buttons: key, label, description and the field values each fills in."""
    return [
        {"key": key, "label": p.label, "description": p.description, "fields": dict(p.fields)}
        for key, p in PRESETS.items()
    ]


@require_POST
@login_required
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    """Only the run's owner (or staff) may cancel it; others who can see the run get 403."""
    run = visible_run_or_404(request, run_id)
    if not may_control(request, run):
        return HttpResponse("Only the run's owner can cancel it.", status=403)
    services.run_cancel(run_id=run.id)
    return redirect("dashboards:run", run_id=run.id)


def compare_page(request: HttpRequest) -> HttpResponse:
    """`/compare/?runs=1,2,3[&all=1][&group=1]`: the visible runs among the first MAX_RUNS asked, side by side
    (with `group`, also grouped by the settings that differ, each group's mean reward with a band); the page
    names the ids it left out and those it cannot show (missing or not visible, without saying which)."""
    run_ids, dropped = compare.split_at_limit(compare.parse_run_ids(request.GET.get("runs", "")))
    runs = selectors.runs_get_visible(run_ids=run_ids, user=request.user)
    show_all = request.GET.get("all") == "1"
    grouped = request.GET.get("group") == "1"
    competitions = visible_competitions_of(runs, request)
    charts = compare.chart_groups(runs)
    context = {
        "runs": runs,
        "dropped": dropped,
        "unseen": compare.unseen_ids(run_ids, shown=[r.id for r in runs]),
        "max_runs": compare.MAX_RUNS,
        "run_ids": ",".join(str(r.id) for r in runs),
        "show_all": show_all,
        "grouped": grouped,
        "groups": compare.settings_groups(runs) if grouped else [],
        "curves": [compare.run_curve(run) for run in runs],
        "charts": charts,
        "metric_note": compare.metric_note([group["metric"] for group in charts["best"]]),
        "poll_s": compare.POLL_S,
        "config_rows": compare.config_rows(runs, show_all=show_all),
        "best": compare.best_submissions(runs),
        "leaderboards": [
            (c, leaderboard.competition_leaderboard(competition=c, user=request.user)) for c in competitions
        ],
    }
    return render(request, "dashboards/compare.html", context)


def compare_curves(request: HttpRequest) -> JsonResponse:
    """`/compare/curves.json?runs=1,2,3`: the compare page's curves and best-submission numbers for the
    visible runs among the first MAX_RUNS asked, which the page polls while any of them is active."""
    run_ids, _ = compare.split_at_limit(compare.parse_run_ids(request.GET.get("runs", "")))
    runs = selectors.runs_get_visible(run_ids=run_ids, user=request.user)
    return JsonResponse(compare.live_payload(runs, grouped=request.GET.get("group") == "1"))


def visible_competitions_of(runs: list[Run], request: HttpRequest) -> list[Competition]:
    """The competitions of `runs` the user may see, in order: a public run may be on a private
    competition, whose leaderboard (medals, percentiles) stays its owner's."""
    visible = competition_selectors.competitions_visible_to(user=request.user)
    ids = set(visible.filter(runs__in=runs).values_list("id", flat=True))
    competitions = {c.id: c for run in runs for c in run.competitions.all()}
    return [c for c in competitions.values() if c.id in ids]


def run_export(request: HttpRequest, run_id: int, what: str, fmt: str) -> HttpResponse:
    """`/runs/<id>/export/attempts.csv` (or .json), `/runs/<id>/export/metrics.csv` (or .json)."""
    run = visible_run_or_404(request, run_id)
    body = exports.run_export(run, what, fmt)
    if body is None:
        raise Http404("No such export.")
    return attachment(body, EXPORT_TYPES[fmt], f"run-{run.id}-{what}.{fmt}")


def run_export_mlebench(request: HttpRequest, run_id: int) -> HttpResponse:
    """`/runs/<id>/export/mlebench.zip`: the run's final submissions in MLE-bench's layout
    (exports.mlebench_bundle); a 404 whose text says why when there is nothing to export."""
    run = visible_run_or_404(request, run_id)
    try:
        body = exports.mlebench_bundle(run)
    except exports.NothingToExport as reason:
        return HttpResponse(str(reason), status=404, content_type="text/plain; charset=utf-8")
    return attachment(body, "application/zip", f"run-{run.id}-mlebench.zip")


def attempt_bundle(request: HttpRequest, run_id: int, number: int) -> HttpResponse:
    attempt = attempt_or_404(visible_run_or_404(request, run_id), number)
    return attachment(
        exports.attempt_bundle(attempt), "application/zip", f"run-{run_id}-attempt-{number}.zip"
    )


def attachment(body: str | bytes, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
def api_token(request: HttpRequest) -> HttpResponse:
    """GET shows the user's API token; POST makes a new one (the old one stops working)."""
    token = tokens.api_token_rotate(user=request.user) if request.method == "POST" else None
    token = token or tokens.api_token_get(user=request.user)
    return render(request, "dashboards/api_token.html", {"token": token})


def api_reference(request: HttpRequest) -> HttpResponse:
    """The OpenAPI schema as a readable page, drawn on the server (no CDN: works offline)."""
    return render(request, "dashboards/api_reference.html", {"operations": apidocs.operations()})


ASSETS = Path(__file__).resolve().parent / "assets"


def asset(request: HttpRequest, name: str) -> HttpResponse:
    """The dashboards' own scripts (a fixed set of files in assets/)."""
    path = ASSETS / name
    if name not in {p.name for p in ASSETS.iterdir()}:
        raise Http404("No such asset.")
    return javascript(request, path.read_bytes())


@cache_control(max_age=86400, public=True)
def plotly_js(request: HttpRequest) -> HttpResponse:
    """plotly.js's basic bundle, vendored (vendor/README.md): dashboards work with no internet access."""
    return javascript(request, bundled_plotly_js())


@lru_cache(maxsize=1)
def bundled_plotly_js() -> bytes:
    return (Path(__file__).resolve().parent / "vendor" / "plotly-basic.min.js").read_bytes()


def javascript(request: HttpRequest, body: bytes) -> HttpResponse:
    """A script, gzipped for a browser that accepts it (plotly's 1.2 MB bundle travels as about 0.4 MB)."""
    if "gzip" not in request.headers.get("Accept-Encoding", ""):
        response = HttpResponse(body, content_type="application/javascript")
    else:
        response = HttpResponse(gzipped(body), content_type="application/javascript")
        response["Content-Encoding"] = "gzip"
    patch_vary_headers(response, ("Accept-Encoding",))
    return response


@lru_cache(maxsize=16)
def gzipped(body: bytes) -> bytes:
    return gzip.compress(body, compresslevel=9, mtime=0)


def study_list(request: HttpRequest) -> HttpResponse:
    """`/studies/`: the studies the user may see, newest first."""
    rows = [study_reads.study_summary(s) for s in study_reads.studies_visible_to(user=request.user)[:200]]
    return render(request, "dashboards/study_list.html", {"rows": rows})


def study_detail(request: HttpRequest, study_id: int) -> HttpResponse:
    """`/studies/<id>/`: each arm's curves with their bands over seeds, the valid rate per tenth of the
    budget, and the test of each arm against the first, drawn from data.json (polled while it runs)."""
    study = visible_study_or_404(request, study_id)
    context = {"study": study, "data": study_reads.study_statistics(study), "poll_s": compare.POLL_S,
               "can_control": may_control_study(request, study)}  # fmt: skip
    return render(request, "dashboards/study.html", context)


def study_data(request: HttpRequest, study_id: int) -> JsonResponse:
    """`/studies/<id>/data.json?smoothing=0.6`: the study's statistics (study_reads.study_statistics)."""
    study = visible_study_or_404(request, study_id)
    try:
        smoothing = min(max(float(request.GET.get("smoothing", "0.6")), 0.0), 0.99)
    except ValueError:
        smoothing = 0.6
    return JsonResponse(study_reads.study_statistics(study, smoothing=smoothing))


@require_POST
@login_required
def study_cancel(request: HttpRequest, study_id: int) -> HttpResponse:
    """Only the study's owner (or staff) may stop it: its active run is cancelled and no other starts."""
    study = visible_study_or_404(request, study_id)
    if not may_control_study(request, study):
        return HttpResponse("Only the study's owner can cancel it.", status=403)
    studies.study_cancel(study_id=study.id)
    return redirect("dashboards:study", study_id=study.id)


def may_control_study(request: HttpRequest, study: Study) -> bool:
    """Cancelling a study is its owner's (and staff's) alone, as for a run."""
    user = request.user
    return user.is_authenticated and (study.owner_id == user.id or user.is_staff)


def visible_study_or_404(request: HttpRequest, study_id: int) -> Study:
    study = study_reads.study_get_visible(study_id=study_id, user=request.user)
    if study is None:
        raise Http404("No such study.")
    return study


def visible_run_or_404(request: HttpRequest, run_id: int) -> Run:
    run = selectors.run_get_visible(run_id=run_id, user=request.user)
    if run is None:
        raise Http404("No such run.")
    return run


def attempt_or_404(run: Run, number: int) -> Attempt:
    attempt = selectors.attempt_get(run=run, number=number)
    if attempt is None:
        raise Http404("No such attempt.")
    return attempt


def may_control(request: HttpRequest, run: Run) -> bool:
    """Cancelling is the owner's (and staff's) alone; cloning is open to anyone who can see the run."""
    user = request.user
    return user.is_authenticated and (run.owner_id == user.id or user.is_staff)
