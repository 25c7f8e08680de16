"""The start-a-run form (also the clone form, prefilled): its fields are RunConfig's, and RunConfig decides
what is valid, so the page, `manage.py train` and the API accept exactly the same settings."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from webapp.competitions.models import Competition
from webapp.runs.config import RunConfig
from webapp.runs.models import Run

DEFAULTS = RunConfig()
CONFIG_FIELDS = (
    "policy", "model", "attempts", "actors", "batch", "sync", "duration_aware", "instrument",
    "reward_preset", "improve_prob", "objective", "lr", "seed",
)  # fmt: skip
FIELD_IN_ERROR = re.compile(r"^config: (\w+) ")


class RunStartForm(forms.Form):
    competitions = forms.ModelMultipleChoiceField(
        queryset=Competition.objects.none(), widget=forms.SelectMultiple(attrs={"size": 6})
    )
    name = forms.CharField(
        required=False, max_length=200, help_text="Blank: named after policy and competition."
    )
    is_public = forms.BooleanField(required=False, label="Public (everyone can watch it)")
    policy = forms.ChoiceField(choices=Run.PolicyKind.choices, initial=DEFAULTS.policy)
    model = forms.CharField(
        initial=DEFAULTS.model,
        required=False,
        help_text="LM policy only: embedded name, local path or cached HF name.",
    )
    attempts = forms.IntegerField(
        initial=DEFAULTS.attempts, min_value=1, max_value=100_000, label="Attempt budget"
    )
    actors = forms.IntegerField(
        initial=DEFAULTS.actors, min_value=1, max_value=256, label="K (actors in flight)"
    )
    batch = forms.IntegerField(
        initial=DEFAULTS.batch, min_value=1, max_value=4096, label="B (attempts per update)"
    )
    sync = forms.BooleanField(required=False, label="Synchronous baseline (wait for all B)")
    duration_aware = forms.BooleanField(
        required=False, initial=True, label="Duration-aware updates (Δt weights)"
    )
    instrument = forms.BooleanField(required=False, initial=True, label="Instrumentation (partial credit)")
    reward_preset = forms.ChoiceField(
        choices=[("normalized", "normalized"), ("paper", "paper (−10 failure, raw score)")],
        initial=DEFAULTS.reward_preset,
    )
    improve_prob = forms.FloatField(initial=DEFAULTS.improve_prob, min_value=0, max_value=1)
    objective = forms.ChoiceField(
        choices=[("ppo", "PPO"), ("reinforce", "REINFORCE")], initial=DEFAULTS.objective
    )
    lr = forms.FloatField(initial=DEFAULTS.lr, help_text="~0.05 for the grammar policy, ~1e-5 for an LM.")
    seed = forms.IntegerField(initial=DEFAULTS.seed, min_value=0)

    def __init__(self, *args: Any, competitions, **kwargs: Any) -> None:
        """`competitions`: the queryset the user may start runs on (the ones they can see)."""
        super().__init__(*args, **kwargs)
        self.fields["competitions"].queryset = competitions

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        raw = {name: data[name] for name in CONFIG_FIELDS}
        raw["model"] = raw["model"] or DEFAULTS.model
        try:
            data["config"] = RunConfig.from_dict(raw).to_dict()
        except ValueError as error:
            self.add_error(field_named_in(str(error)), str(error))
        return data


def field_named_in(message: str) -> str | None:
    """The form field a RunConfig error names, or None (a form-wide error).

    >>> field_named_in("config: batch must be positive, not 0."), field_named_in("something else")
    ('batch', None)
    """
    match = FIELD_IN_ERROR.match(message)
    return match.group(1) if match and match.group(1) in CONFIG_FIELDS else None


def initial_from_run(run: Run) -> dict[str, Any]:
    """The form's starting values for a clone of `run`: its configuration, competitions and visibility."""
    config = RunConfig.from_dict(run.config).to_dict()
    initial = {name: config[name] for name in CONFIG_FIELDS}
    return {**initial, "competitions": list(run.competitions.all()), "is_public": run.is_public,
            "name": f"{run.name} (clone)"[:200]}  # fmt: skip


def initial_for_competition(competition: Competition | None) -> dict[str, Any]:
    return {"competitions": [competition]} if competition else {}
