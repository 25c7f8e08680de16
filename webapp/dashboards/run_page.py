"""What a run page says in words before it draws anything: each competition's metric and its direction,
how the run's reward is made (and so why it can pass 1), and the run's settings with their labels from the
run specification (rl_core.run_spec), those changed from the defaults first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rl_core.declarations import Declared
from rl_core.metrics import get_metric
from rl_core.reward import DEFAULT_FAILURE, STAGE_COUNT
from rl_core.run_spec import RunConfig, settings
from webapp.runs.models import Run


@dataclass(frozen=True)
class MetricLine:
    """A competition of the run and the metric its scores are in."""

    slug: str
    name: str
    metric: str
    higher_is_better: bool
    description: str

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


@dataclass(frozen=True)
class SettingLine:
    """One run setting in words: its label, its value, its help, and whether it differs from the default."""

    name: str
    label: str
    value: str
    help: str
    changed: bool


def run_metric_lines(run: Run) -> list[MetricLine]:
    """The run's competitions by slug, each with its metric, direction and what the metric measures."""
    lines = []
    for competition in sorted(run.competitions.all(), key=lambda c: c.slug):
        metric = get_metric(competition.metric)
        lines.append(
            MetricLine(competition.slug, competition.name or competition.slug, metric.name,
                       metric.higher_is_better, metric.description)
        )  # fmt: skip
    return lines


def run_setting_lines(run: Run) -> list[SettingLine]:
    """Every setting that applies to the run's policy (language-model ones only for an LM run), in words;
    the ones changed from the defaults first, each group in the specification's order."""
    stored = run.config or {}
    lines = []
    for declared in settings().values():
        if declared.section == "lm" and run.policy != "lm":
            continue
        value = stored.get(declared.name, declared.default)
        value = tuple(value) if isinstance(value, list) else value
        lines.append(
            SettingLine(declared.name, declared.label, setting_in_words(declared, value), declared.help,
                        changed=value != declared.default)
        )  # fmt: skip
    return sorted(lines, key=lambda line: not line.changed)


def setting_in_words(declared: Declared, value: Any) -> str:
    """A setting's value as the start form would say it.

    >>> setting_in_words(settings()["sync"], True), setting_in_words(settings()["lr"], None)
    ('yes', 'the default')
    >>> setting_in_words(settings()["objective"], "ppo"), setting_in_words(settings()["imitate_runs"], (3, 4))
    ('PPO', '#3, #4')
    """
    if value is None or value == "":
        return "the default"
    if declared.kind == "bool":
        return "yes" if value else "no"
    if declared.kind == "ids":
        return ", ".join(f"#{each}" for each in value) or "none"
    if declared.kind == "choice":
        return declared.choice_labels.get(value, str(value))
    return str(value)


def graded_on_in_words(config: dict[str, Any]) -> str:
    """Which answers grade the run's attempts, and so what its scores mean (issue 28's reward sources).

    >>> graded_on_in_words({})[:40]
    "the competition's hidden answers (the pa"
    """
    spec = RunConfig.from_dict(config)
    if spec.reward_source == "hidden":
        return (
            "the competition's hidden answers (the paper's setup: the search sees test feedback, so its "
            "scores are not a held-out result)"
        )
    split = f"{spec.validation_fraction:.0%} of the labelled training rows held out, seed {spec.seed}"
    if spec.validation_group_column:
        split += f", groups of {spec.validation_group_column!r} kept whole"
    if spec.validation_time_column:
        split += f", the latest by {spec.validation_time_column!r}"
    return (
        f"a validation split of the labelled training table ({split}); the chosen program is graded once "
        "on the hidden answers at the end, and that grade is the run's result"
    )


def reward_in_words(config: dict[str, Any]) -> str:
    """How the run's reward is made, with the range it spans: why a reward above 1 is possible.

    >>> "can reach 1.6" in reward_in_words({}), "can reach" in reward_in_words({"credit_valid": False})
    (True, False)
    """
    spec = RunConfig.from_dict(config)
    credit = spec.credit_per_stage if spec.instrument else 0.0
    failure = spec.failure_reward if spec.failure_reward is not None else DEFAULT_FAILURE[spec.reward_preset]
    top = credit * STAGE_COUNT
    stages = (
        f", plus {credit:g} for each of the {STAGE_COUNT} progress stages its program really reached"
        if credit and spec.credit_valid
        else ""
    )
    if spec.reward_mode == "percentile":
        scored = "its leaderboard percentile mapped onto [-1, 1] (where the competition has a leaderboard)"
    elif spec.reward_preset == "paper":
        scored = "its raw score, signed so that higher is better"
    else:
        scored = (
            "its improvement over the sample submission's score, scaled so that the sample submission "
            "is 0 and a perfect score 1 (clipped to [-1, 1])"
        )
    ceiling = f", so a reward can reach {1 + top:g}" if stages and spec.reward_preset == "normalized" else ""
    failed = f"An attempt without a valid submission earns {failure:g}"
    failed += f" plus {credit:g} per stage reached." if credit else "."
    return f"A valid submission earns {scored}{stages}{ceiling}. {failed}"
