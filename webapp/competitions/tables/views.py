"""Pages that make a competition from one labelled table: upload it, then check Practicum's proposal (id
column, targets, metric, test fraction) against a preview, edit it, and create the competition.

`table_upload` keeps the table as a draft (`tables.services`) and sends the user to `table_propose`, which
shows the proposal and preview; its "Update preview" button (and any change of target) re-renders them
for the edited choices, and "Create competition" stores the competition and lands on its page. When the
targets change so that the chosen metric no longer fits them, the metric proposed for the new targets
takes its place, and the page says so.
"""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from rl_core.metrics import get_metric, metric_names
from webapp.competitions.tables import bundle, services
from webapp.competitions.tables.proposal import (
    TEST_FRACTION_RANGE,
    Choices,
    Table,
    TableError,
    check_choices,
    fitting_metrics,
    held_out_rows,
    propose,
    propose_metric,
)

GENERATE_ID = ""  # the id select's value for "generate an id column"


class TableUploadForm(forms.Form):
    table = forms.FileField(
        allow_empty_file=True,  # an empty table is refused by `read_table`, in a sentence naming the file
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,.json,.jsonl,.ndjson"}),
        help_text="A CSV file, a JSON list of records, or JSON lines: one row per example, with its labels.",
    )


class TableChoicesForm(forms.Form):
    name = forms.CharField(max_length=200)
    slug = forms.SlugField(max_length=80)
    id_column = forms.ChoiceField(label="Id column", required=False)
    target_columns = forms.MultipleChoiceField(label="Target column(s)")
    metric = forms.ChoiceField(choices=[(m, m) for m in metric_names()])
    test_fraction = forms.FloatField(min_value=TEST_FRACTION_RANGE[0], max_value=TEST_FRACTION_RANGE[1])
    is_public = forms.BooleanField(required=False, label="Public (everyone can see it and run agents on it)")

    def __init__(self, *args, table: Table, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        columns = [(str(c), str(c)) for c in table.frame.columns]
        self.fields["id_column"].choices = [(GENERATE_ID, "(generate an id column)"), *columns]
        self.fields["target_columns"].choices = columns

    def choices(self) -> Choices:
        data = self.cleaned_data
        return Choices(
            id_column=data["id_column"] or None,
            target_columns=tuple(data["target_columns"]),
            metric=data["metric"],
            test_fraction=data["test_fraction"],
        )


@login_required
def table_upload(request: HttpRequest) -> HttpResponse:
    form = TableUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            token = services.draft_create(upload=form.cleaned_data["table"], owner=request.user)
        except TableError as error:
            form.add_error("table", str(error))
        else:
            return redirect("competitions:table_propose", token=token)
    status = 400 if request.method == "POST" else 200
    return render(request, "competitions/table_upload.html", {"form": form}, status=status)


@login_required
def table_propose(request: HttpRequest, token: str) -> HttpResponse:
    table = services.draft_table(token=token, owner=request.user)
    if table is None:
        raise Http404("No such uploaded table.")
    if request.method != "POST":
        return render_proposal(request, table, TableChoicesForm(initial=initial(table), table=table))
    form = TableChoicesForm(request.POST, table=table)
    if request.POST.get("action") != "create":
        form, note = refit_metric(form, table)  # a preview adapts the metric; a create never changes it
        return render_proposal(request, table, form, note=note)
    if not form.is_valid():
        return render_proposal(request, table, form, status=400)
    try:
        competition, _, _ = services.competition_from_table(
            table=table,
            choices=form.choices(),
            slug=form.cleaned_data["slug"],
            name=form.cleaned_data["name"],
            owner=request.user,
            is_public=form.cleaned_data["is_public"],
        )
    except TableError as error:
        form.add_error(None, str(error))
        return render_proposal(request, table, form, status=400)
    services.draft_delete(token=token)
    return redirect("competitions:detail", slug=competition.slug)


def initial(table: Table) -> dict:
    proposal = propose(table)
    slug = services.proposed_slug(table.name)
    return {
        "name": slug.replace("-", " ").capitalize(),
        "slug": slug,
        "id_column": proposal.id_column or GENERATE_ID,
        "target_columns": list(proposal.target_columns),
        "metric": proposal.metric,
        "test_fraction": proposal.test_fraction,
    }


def refit_metric(form: TableChoicesForm, table: Table) -> tuple[TableChoicesForm, str]:
    """The form, with the metric replaced by the proposed one when it does not fit the chosen targets."""
    targets = tuple(t for t in form.data.getlist("target_columns") if t in table.frame.columns)
    metric = form.data.get("metric", "")
    if not targets or metric in fitting_metrics(table.frame, targets):
        return form, ""
    data = form.data.copy()
    data["metric"] = propose_metric(table.frame, targets)
    note = f"The metric {metric!r} does not fit {', '.join(targets)}; {data['metric']!r} is proposed instead."
    return TableChoicesForm(data, table=table), note


def render_proposal(
    request: HttpRequest, table: Table, form: TableChoicesForm, *, note: str = "", status: int = 200
) -> HttpResponse:
    values = form.data if form.is_bound else form.initial
    targets = tuple(t for t in values_list(values, "target_columns") if t in table.frame.columns)
    id_column = values.get("id_column") or None
    columns, rows = bundle.head(table)
    context = {
        "form": form,
        "table": table,
        "note": note,
        "head_columns": columns,
        "head_rows": rows,
        "column_summaries": bundle.column_summaries(table, id_column, targets),
        "fitting_metrics": fitting_metrics(table.frame, targets) if targets else [],
        **plan_context(table, form, values, targets),
    }
    return render(request, "competitions/table_propose.html", context, status=status)


def plan_context(table: Table, form: TableChoicesForm, values, targets: tuple[str, ...]) -> dict:
    """The split's sizes, target summary and graded columns, or `plan_error` when the choices are wrong."""
    try:
        fraction = float(values.get("test_fraction") or 0)
        choices = Choices(values.get("id_column") or None, targets, values.get("metric") or "", fraction)
        plan = check_choices(table, choices)
        graded = bundle.graded_columns(table, plan)
    except (TableError, ValueError) as error:
        return {"plan_error": str(error)}
    n_test = held_out_rows(len(table.frame), plan.choices.test_fraction)
    return {
        "plan": plan,
        "metric": get_metric(plan.choices.metric),
        "metric_sentence": bundle.metric_sentence(plan),
        "graded_columns": graded,
        "target_summary": bundle.target_summary(table, plan),
        "train_rows": len(table.frame) - n_test,
        "test_rows": n_test,
    }


def values_list(values, key: str) -> list[str]:
    """A list value from bound data (a QueryDict) or from initial data (a dict)."""
    return values.getlist(key) if hasattr(values, "getlist") else list(values.get(key, []))
