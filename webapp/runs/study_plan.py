"""What a study is made of, checked before anything is stored: its arms (a name and the run settings it
overrides), its seeds, and the run configuration of every (seed, arm), in the order the runs are made.

An arm in words, as the start form and `manage.py train --study-arm` take it: `name: setting=value, ...`
(`static: updates=off`, `rl`). Values are read by the setting's kind in rl_core.run_spec (on/off, yes/no and
true/false for a switch; "none" or nothing for an optional number), and RunConfig checks the result, so a
refusal names the arm and the setting in RunConfig's words. No database: webapp.runs.studies stores a plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rl_core.declarations import Declared
from rl_core.run_spec import RunConfig, run_ids, settings

MAX_SEEDS = 20
MAX_ARMS = 6
ARM_NAME = re.compile(r"^[A-Za-z0-9][\w.+-]{0,39}$")
"""An arm's name: a letter or digit, then up to 39 letters, digits, _ . + or -."""
SWITCH_WORDS = {"on": True, "off": False, "true": True, "false": False, "yes": True, "no": False,
                "1": True, "0": False}  # fmt: skip
DEFAULT_ARM = "base"
"""The one arm of a study given seeds but no arms: the base configuration itself."""


class StudyError(ValueError):
    """A study refused before anything is stored; `field` is what the message is about: "seeds", "arms",
    or "config" (the base configuration, whose message names the setting as RunConfig's do)."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Arm:
    name: str
    settings: dict[str, Any] = field(default_factory=dict)
    """The run settings this arm changes from the study's base configuration."""

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "settings": dict(self.settings)}


@dataclass(frozen=True)
class Planned:
    """One run of a study: the arm on the seed, with its whole checked configuration."""

    seed: int
    arm: str
    config: dict[str, Any]


def parse_arm(line: str) -> Arm:
    """One arm from its words; StudyError naming the arm and what is wrong.

    >>> parse_arm("static: updates=off, lr=0.1")
    Arm(name='static', settings={'updates': False, 'lr': 0.1})
    >>> parse_arm("rl")
    Arm(name='rl', settings={})
    """
    name, _, rest = line.partition(":")
    name = name.strip()
    if not ARM_NAME.match(name):
        raise StudyError(
            f"arms: {name!r} is not an arm name (a letter or digit, then letters, digits, _ . + or -; at "
            "most 40).", field="arms",
        )  # fmt: skip
    return Arm(name, dict(parse_assignment(name, part) for part in rest.split(",") if part.strip()))


def parse_assignment(arm: str, text: str) -> tuple[str, Any]:
    """`setting=value` of `arm`, the value read by the setting's kind."""
    name, equals, value = (part.strip() for part in text.partition("="))
    if not equals:
        raise StudyError(f"arms: arm {arm!r}: write setting=value, not {text.strip()!r}.", field="arms")
    declared = settings().get(name)
    if declared is None:
        raise StudyError(f"arms: arm {arm!r}: unknown setting {name!r}.", field="arms")
    try:
        return name, read_value(declared, value)
    except ValueError:
        raise StudyError(
            f"arms: arm {arm!r}: {name} must be {kind_words(declared)}, not {value!r}.", field="arms"
        ) from None


def read_value(declared: Declared, text: str) -> Any:
    """`text` as a value of the setting's kind (ValueError when it cannot be one).

    >>> read_value(settings()["updates"], "off"), read_value(settings()["lr"], "none")
    (False, None)
    """
    if declared.optional and text.lower() in ("", "none"):
        return None
    if declared.kind == "bool":
        if text.lower() not in SWITCH_WORDS:
            raise ValueError(text)
        return SWITCH_WORDS[text.lower()]
    if declared.kind in ("int", "float"):
        return int(text) if declared.kind == "int" else float(text)
    if declared.kind == "ids":
        return list(run_ids(text.replace(" ", ",")))
    return text


def kind_words(declared: Declared) -> str:
    words = {"bool": "on or off", "int": "a whole number", "float": "a number", "ids": "run ids"}
    if declared.kind == "choice":
        return " or ".join(declared.choices)
    return words.get(declared.kind, "text")


def parse_arms(text: str) -> list[Arm]:
    """The arms of a multi-line text, one a line (blank lines skipped), checked as `check_arms` does."""
    return check_arms([parse_arm(line) for line in text.splitlines() if line.strip()])


def arms_from_dicts(raw: Any) -> list[Arm]:
    """Arms as the API and the database hold them: [{"name": ..., "settings": {...}}, ...]."""
    if not isinstance(raw, list) or not all(isinstance(a, dict) for a in raw):
        raise StudyError('arms: give a list of {"name": ..., "settings": {...}}.', field="arms")
    arms = []
    for item in raw:
        arm = parse_arm(str(item.get("name", "")))
        overrides = item.get("settings") or {}
        if not isinstance(overrides, dict):
            raise StudyError(f"arms: arm {arm.name!r}: settings must be an object.", field="arms")
        arms.append(Arm(arm.name, dict(overrides)))
    return check_arms(arms)


def check_arms(arms: list[Arm]) -> list[Arm]:
    """1 to MAX_ARMS arms with different names, none setting the seed (the study's seeds do); none given
    means one arm, the base configuration."""
    arms = arms or [Arm(DEFAULT_ARM)]
    if len(arms) > MAX_ARMS:
        raise StudyError(f"arms: a study has at most {MAX_ARMS} arms, not {len(arms)}.", field="arms")
    names = [arm.name for arm in arms]
    repeated = next((name for name in names if names.count(name) > 1), None)
    if repeated:
        raise StudyError(f"arms: two arms are called {repeated!r}; give each its own name.", field="arms")
    for arm in arms:
        if "seed" in arm.settings:
            raise StudyError(f"arms: arm {arm.name!r}: the study's seeds set the seed.", field="arms")
    return arms


def seeds_from(raw: Any) -> list[int]:
    """The seeds: a count N (0..N-1) or a list of different whole numbers, 1 to MAX_SEEDS of them.

    >>> seeds_from(3), seeds_from([7, 2])
    ([0, 1, 2], [7, 2])
    """
    if isinstance(raw, int) and not isinstance(raw, bool):
        seeds = list(range(raw))
    elif isinstance(raw, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in raw):
        seeds = list(raw)
    else:
        raise StudyError(f"seeds: give a count or a list of whole numbers, not {raw!r}.", field="seeds")
    if not 1 <= len(seeds) <= MAX_SEEDS:
        raise StudyError(f"seeds: a study has 1 to {MAX_SEEDS} seeds, not {len(seeds)}.", field="seeds")
    if len(set(seeds)) < len(seeds) or min(seeds) < 0:
        raise StudyError(f"seeds: give different seeds, 0 or more, not {raw!r}.", field="seeds")
    return seeds


def study_plan(base: dict[str, Any], arms: list[Arm], seeds: list[int]) -> list[Planned]:
    """Every (seed, arm) run in the order a study makes them: seed-major (seed 0's arms in order, then seed
    1's, ...), each config = base | arm's settings | {"seed": seed}, checked by RunConfig. StudyError names
    the base's setting, or the arm and its setting."""
    try:
        RunConfig.from_dict(base)
    except ValueError as error:
        raise StudyError(str(error), field="config") from None
    return [Planned(seed, arm.name, arm_config(base, arm, seed)) for seed in seeds for arm in arms]


def arm_config(base: dict[str, Any], arm: Arm, seed: int) -> dict[str, Any]:
    try:
        return RunConfig.from_dict(base | arm.settings | {"seed": seed}).to_dict()
    except (TypeError, ValueError) as error:
        reason = str(error).removeprefix("config: ")
        raise StudyError(f"arms: arm {arm.name!r}: {reason}", field="arms") from None
