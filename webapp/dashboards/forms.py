"""The start-a-run form (also the clone form, prefilled). Its setting fields are derived from the run
specification (rl_core.run_spec: each setting's kind, default, choices, label, help, section and bounds), and
RunConfig decides what is valid, so the page, `manage.py train` and the API accept exactly the same
settings."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django import forms
from django.utils.html import format_html

from rl_core.declarations import Declared
from rl_core.run_spec import RunConfig, settings
from webapp.competitions.models import Competition
from webapp.runs.models import Run
from webapp.runs.study_plan import MAX_SEEDS, StudyError, parse_arms

DEFAULTS = RunConfig()
FIELD_IN_ERROR = re.compile(r"^config: (\w+):? ")
RUN_FIELDS = ("competitions", "name", "is_public")
"""The form's fields that are the run's own, not its settings; the page shows them first."""
STUDY_FIELDS = ("study_seeds", "study_arms")
"""The form's fields that make it start a study instead of one run (its "Study" part)."""
RL_AGAINST_STATIC = "static: updates=off\nrl"
"""The arms the "RL against static" button fills in: the policy frozen, and the same run learning."""


def form_settings() -> tuple[str, ...]:
    """The run settings the form sets; the rest keep their defaults, or in a clone the source's."""
    return tuple(name for name, declared in settings().items() if declared.in_form)


@dataclass(frozen=True)
class Section:
    """One group of the form's fields; `has_errors` opens a collapsed group so its errors show."""

    fields: list[forms.BoundField]

    @property
    def has_errors(self) -> bool:
        return any(field.errors for field in self.fields)


def form_field(declared: Declared) -> forms.Field:
    """The form field of one run setting: its kind's field with its label, help, default and bounds. Only
    the first settings must be given; any other left blank keeps its default (or a clone's value)."""
    common = {"label": declared.label, "help_text": declared.help, "initial": declared.default}
    required = declared.section == "first" and declared.kind != "bool"
    if declared.kind == "choice":
        labels = declared.choice_labels
        return forms.ChoiceField(choices=[(c, labels.get(c, c)) for c in declared.choices], required=required,
                                 **common)  # fmt: skip
    if declared.kind == "bool":
        return forms.BooleanField(required=False, **common)
    if declared.kind in ("int", "float"):
        number = forms.IntegerField if declared.kind == "int" else forms.FloatField
        return number(min_value=declared.minimum, max_value=declared.upper, required=required, **common)
    if declared.multiline:
        textarea = forms.Textarea(attrs={"rows": 4, "cols": 40})
        return forms.CharField(required=False, strip=False, widget=textarea, **common)
    if declared.kind == "ids":
        return forms.CharField(required=False, **common | {"initial": ""})
    return forms.CharField(required=False, **common)


class CompetitionsField(forms.ModelMultipleChoiceField):
    """The competitions to train on, as ticks labelled by name with the slug beside it (the page's script
    adds a search box); posts competition ids under `competitions`, as the API does."""

    widget = forms.CheckboxSelectMultiple(attrs={"class": "competition-pick"})

    def label_from_instance(self, obj: Competition) -> str:
        return format_html('{} <span class="muted">{}</span>', obj.name, obj.slug)


class RunStartForm(forms.Form):
    competitions = CompetitionsField(queryset=Competition.objects.none())
    name = forms.CharField(
        required=False, max_length=200, help_text="Blank: named after policy and competition."
    )
    is_public = forms.BooleanField(required=False, label="Public (everyone can watch it)")
    study_seeds = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_SEEDS, initial=1, label="Seeds",
        help_text="1: one ordinary run. More: every arm runs once on each of seeds 0, 1, 2, ... (instead of "
        "the Seed setting), one run after another, and a study page compares the arms.",
    )  # fmt: skip
    study_arms = forms.CharField(
        required=False, label="Arms", widget=forms.Textarea(attrs={"rows": 3, "cols": 40}),
        help_text="One arm a line: a name, then the settings it changes from those above, e.g. "
        "'static: updates=off' then 'rl' (no changes). Empty: one arm, these settings.",
    )  # fmt: skip

    def __init__(
        self, *args: Any, competitions, warm_starts: Sequence[tuple[str, str]] = (),
        base: dict[str, Any] | None = None, **kwargs: Any,
    ) -> None:  # fmt: skip
        """`competitions`: the queryset the user may start runs on (the ones they can see); `warm_starts`:
        (value, label) choices besides a fresh start (webapp.runs.selectors.warm_start_choices); `base`: the
        config a clone starts from, whose fields the form does not show are kept."""
        super().__init__(*args, **kwargs)
        self.base = base or {}
        self.fields["competitions"].queryset = competitions.order_by("name", "slug")
        self.fields.update({name: form_field(settings()[name]) for name in form_settings()})
        warm_start = settings()["warm_start"]
        self.fields["warm_start"] = forms.ChoiceField(
            required=False, initial="", label=warm_start.label, help_text=warm_start.help,
            choices=[("", "fresh (no warm start)"), *warm_starts],
        )  # fmt: skip

    def sections(self) -> dict[str, Section]:
        """The fields grouped as the page shows them: "first" (the run's own fields, then the first
        settings), "lm" (LM-only), "advanced" (the rest), each in declaration order, and "study"."""
        groups: dict[str, list[str]] = {"first": list(RUN_FIELDS), "lm": [], "advanced": [],
                                        "study": list(STUDY_FIELDS)}  # fmt: skip
        for name in form_settings():
            groups[settings()[name].section].append(name)
        return {key: Section([self[name] for name in names]) for key, names in groups.items()}

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        given = {name: data[name] for name in form_settings() if not self.left_blank(name, data[name])}
        raw = self.base | given
        raw["model"] = raw["model"] or DEFAULTS.model
        raw["warm_start"] = raw["warm_start"] or ""
        try:
            data["config"] = RunConfig.from_dict(raw).to_dict()
        except ValueError as error:
            self.add_error(field_named_in(str(error)), str(error))
        try:
            data["arms"] = parse_arms(data.get("study_arms") or "") if self.is_study(data) else []
        except StudyError as error:
            self.add_error("study_arms", str(error))
        return data

    @staticmethod
    def is_study(data: dict[str, Any]) -> bool:
        """Whether the form starts a study: more than one seed, or any arm given."""
        return (data.get("study_seeds") or 1) > 1 or bool((data.get("study_arms") or "").strip())

    def left_blank(self, name: str, value: Any) -> bool:
        """A number or choice left empty keeps the default (or the cloned run's value), unless the setting
        may be None: then empty means None ("the policy's own learning rate", "the preset's failure
        reward"). An empty text means itself ("fresh", "no runs to imitate")."""
        declared = settings()[name]
        if declared.optional or declared.kind in ("text", "ids"):
            return False
        return value in (None, "")


def field_named_in(message: str) -> str | None:
    """The form field a RunConfig error names, or None (a form-wide error).

    >>> field_named_in("config: batch must be positive, not 0."), field_named_in("something else")
    ('batch', None)
    >>> field_named_in("config: reward_source: 'digits' offers only 'hidden'.")
    'reward_source'
    """
    match = FIELD_IN_ERROR.match(message)
    return match.group(1) if match and match.group(1) in form_settings() else None


def study_error_field(error: ValueError) -> str | None:
    """The form field a refused study's error is about (webapp.runs.study_plan.StudyError's `field`)."""
    fields = {"arms": "study_arms", "seeds": "study_seeds", "competitions": "competitions"}
    field = getattr(error, "field", None)
    return fields.get(field) if field in fields else field_named_in(str(error))


def initial_from_run(run: Run) -> dict[str, Any]:
    """The form's starting values for a clone of `run`: its configuration, competitions and visibility."""
    config = RunConfig.from_dict(run.config).to_dict()
    initial = {name: config[name] for name in form_settings()}
    initial["imitate_runs"] = ", ".join(str(i) for i in config["imitate_runs"])
    return {**initial, "competitions": list(run.competitions.all()), "is_public": run.is_public,
            "name": f"{run.name} (clone)"[:200]}  # fmt: skip


def initial_for_competition(competition: Competition | None) -> dict[str, Any]:
    return {"competitions": [competition]} if competition else {}
