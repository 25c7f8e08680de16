"""How one run setting is declared and checked, whatever the setting: `Setting` (what the interfaces need to
know about a field besides its type and default), `setting` (a field with its `Setting`), `Declared` (a
field with its type resolved into a kind, choices and optionality) and the checks of a value against its
declaration. rl_core.run_spec declares the settings themselves with these. Torch-free."""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Section = Literal["first", "lm", "advanced"]
"""Where the start form shows a setting: with the first few, with the LM-only ones, or folded."""
Feeds = Literal["run", "loop", "learner", "lm", "reward"]
"""Which config a setting feeds: the run itself (driver, policy choice), rl_core.loop's LoopConfig,
rl_core.learner's LearnerConfig, rl_core.policies.lm's LMPolicyConfig, or rl_core.reward's RewardConfig."""
Bound = Literal["positive", "non_negative", "probability"]
Kind = Literal["choice", "bool", "int", "float", "text", "ids"]


@dataclass(frozen=True)
class Setting:
    """What the interfaces need to know about one RunConfig field besides its type and default."""

    label: str
    help: str
    section: Section = "advanced"
    feeds: Feeds = "run"
    target: str | None = None
    """The field's name in the config it feeds, where it differs."""
    bound: Bound | None = None
    maximum: float | None = None
    choice_labels: Mapping[str, str] = field(default_factory=dict)
    flag: str | None = None
    """`manage.py train`'s option, where it is not the field's name (booleans on by default: --no-NAME)."""
    in_form: bool = True
    multiline: bool = False


def setting(default: Any, label: str, help: str, **details: Any) -> Any:
    """A RunConfig field: its default and its `Setting`."""
    return field(default=default, metadata={"setting": Setting(label, help, **details)})


@dataclass(frozen=True)
class Declared:
    """One setting as the interfaces use it: RunConfig's field with its type resolved."""

    name: str
    kind: Kind
    default: Any
    optional: bool
    choices: tuple[str, ...]
    setting: Setting

    def __getattr__(self, attribute: str) -> Any:  # label, help, section, feeds, ... of the Setting
        return getattr(self.setting, attribute)

    @property
    def flag(self) -> str:
        """`manage.py train`'s option for this setting."""
        if self.setting.flag:
            return self.setting.flag
        dashed = self.name.replace("_", "-")
        return f"--no-{dashed}" if self.kind == "bool" and self.default else f"--{dashed}"

    @property
    def minimum(self) -> float | None:
        """The least value a form or schema should offer (a positive float's bound is exclusive)."""
        if self.bound == "positive":
            return 1 if self.kind == "int" else 0
        return 0 if self.bound in ("non_negative", "probability") else None

    @property
    def upper(self) -> float | None:
        return 1 if self.bound == "probability" else self.maximum


def declared(name: str, hint: Any, default: Any, spec: Setting) -> Declared:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    optional = isinstance(hint, types.UnionType) and type(None) in typing.get_args(hint)
    base = args[0] if optional else hint
    if typing.get_origin(hint) is Literal:
        return Declared(name, "choice", default, False, tuple(typing.get_args(hint)), spec)
    if typing.get_origin(base) is tuple:
        return Declared(name, "ids", default, False, (), spec)
    kinds: dict[Any, Kind] = {bool: "bool", int: "int", float: "float", str: "text"}
    return Declared(name, kinds[base], default, optional, (), spec)


def check_value(name: str, spec: Declared, value: Any) -> None:
    """ValueError in the settings' words when `value` is not of the setting's kind or out of its bounds."""
    if value is None and spec.optional:
        return
    if spec.kind == "choice" and value not in spec.choices:
        options = " or ".join(repr(c) for c in spec.choices)
        raise ValueError(f"config: {name} must be {options}, not {value!r}.")
    if spec.kind == "bool" and not isinstance(value, bool):
        raise ValueError(f"config: {name} must be true or false, not {value!r}.")
    if spec.kind == "text" and not isinstance(value, str):
        raise ValueError(f"config: {name} must be text, not {value!r}.")
    if spec.kind in ("int", "float"):
        check_number(name, spec, value)


def check_number(name: str, spec: Declared, value: Any) -> None:
    types_ok = (int,) if spec.kind == "int" else (int, float)
    if isinstance(value, bool) or not isinstance(value, types_ok):
        raise ValueError(f"config: {name} must be {'a whole number' if spec.kind == 'int' else 'a number'}, "
                         f"not {value!r}.")  # fmt: skip
    if not math.isfinite(value):
        raise ValueError(f"config: {name} must be a finite number, not {value!r}.")
    if spec.bound == "positive" and not value > 0:
        raise ValueError(f"config: {name} must be positive, not {value!r}.")
    if spec.bound == "non_negative" and not value >= 0:
        raise ValueError(f"config: {name} must be 0 or more, not {value!r}.")
    if spec.bound == "probability" and not 0 <= value <= 1:
        raise ValueError(f"config: {name} must be between 0 and 1, not {value!r}.")
    if spec.maximum is not None and value > spec.maximum:
        raise ValueError(f"config: {name} must be at most {spec.maximum:g}, not {value!r}.")
