"""The grammar of pipeline programs: the choice heads, their options, and when each head matters.

A program is a dict of choices, head name -> option value, e.g. ``{"family": "lightgbm",
"lightgbm.n_estimators": 300, ..., "impute": "median"}``. Heads are listed in one fixed order (`HEADS`);
the model family comes first because it decides which hyper-parameter heads are active. A head is
*active* for a task and a partial set of choices when it changes the program:

- a family's hyper-parameter heads (``"<family>.<name>"``) only when that family is chosen;
- ``impute`` only when the task has numeric columns, ``scale`` only then and only for the families that
  are sensitive to feature scale (linear, kNN, MLP: trees are not);
- ``encode`` only with categorical columns; ``text.*`` only with text columns;
- ``image.*`` only for image competitions, ``span.*`` only for text-span ones (`rl_core.data_kinds`); the
  table heads (``impute``, ``encode``, ``text.*``) never for those two kinds, whose programs build their
  own features (pixels; one row per word), and ``scale`` there for the scale-sensitive families alone.

The model family is drawn for every kind: an image program fits it on pixel features, a text-span program
on per-word features to decide which words belong to the span (`grammar_kinds`).

Inactive heads are neither sampled nor scored. Choices travel inside each rendered program as one
machine-readable comment line, ``# practicum-grammar: {"grammar": 1, "choices": {...}}``, so an improve
prompt can recover the earlier program's choices from its code (`embed_choices`, `parse_choices`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

GRAMMAR_VERSION = 1

FAMILIES = ("linear", "knn", "random_forest", "extra_trees", "hist_gb", "lightgbm", "xgboost", "mlp")
SCALE_SENSITIVE = frozenset({"linear", "knn", "mlp"})
DENSE_ONLY = frozenset({"hist_gb"})
"""Families that reject sparse input: their one-hot and TF-IDF features are dense, the vocabulary capped."""
DENSE_TEXT_TERMS = 300

Choices = dict[str, Any]


@dataclass(frozen=True)
class Head:
    """One categorical choice.

    Attributes:
        name: unique, e.g. ``"lightgbm.num_leaves"``; the part before a dot names the family it belongs to.
        options: the values it can take (JSON scalars, so choices survive the comment line).
        needs: the column kind the task must have for the head to matter ("numeric", "categorical",
            "text"), or the data kind ("images", "text_span"), or None.
    """

    name: str
    options: tuple[Any, ...]
    needs: str | None = None

    @property
    def family(self) -> str | None:
        prefix = self.name.split(".")[0]
        return prefix if prefix in FAMILIES else None

    def index(self, value: Any) -> int:
        """The position of `value` among the options; ValueError if it is not one."""
        for i, option in enumerate(self.options):
            if option == value and type(option) is type(value):
                return i
        raise ValueError(f"Grammar head {self.name!r} has no option {value!r}; options are {self.options}.")


def _forest(family: str) -> tuple[Head, ...]:
    return (
        Head(f"{family}.n_estimators", (50, 100, 200, 400)),
        Head(f"{family}.max_depth", (None, 8, 16)),
        Head(f"{family}.max_features", ("sqrt", 0.5, 1.0)),
        Head(f"{family}.min_samples_leaf", (1, 3, 10)),
    )


def _boosting(family: str, size: str, sizes: tuple[int, ...]) -> tuple[Head, ...]:
    rounds = "max_iter" if family == "hist_gb" else "n_estimators"
    return (
        Head(f"{family}.{rounds}", (100, 300, 600)),
        Head(f"{family}.learning_rate", (0.03, 0.1, 0.3)),
        Head(f"{family}.{size}", sizes),
    )


HEADS: tuple[Head, ...] = (
    Head("family", FAMILIES),
    Head("linear.C", (0.01, 0.1, 1.0, 10.0, 100.0)),
    Head("knn.n_neighbors", (3, 5, 11, 25, 51)),
    Head("knn.weights", ("uniform", "distance")),
    *_forest("random_forest"),
    *_forest("extra_trees"),
    *_boosting("hist_gb", "max_leaf_nodes", (15, 31, 63)),
    *_boosting("lightgbm", "num_leaves", (15, 31, 63)),
    *_boosting("xgboost", "max_depth", (3, 6, 9)),
    Head("mlp.hidden", ("64", "128", "128,64")),
    Head("mlp.alpha", (0.0001, 0.001, 0.01)),
    Head("mlp.max_iter", (100, 300)),
    Head("impute", ("mean", "median", "most_frequent", "constant"), needs="numeric"),
    Head("scale", ("none", "standard", "robust"), needs="numeric"),
    Head("encode", ("one_hot", "ordinal"), needs="categorical"),
    Head("text.analyzer", ("word", "char"), needs="text"),
    Head("text.max_features", (1000, 5000, 20000), needs="text"),
    Head("image.size", (8, 16, 32), needs="images"),
    Head("image.features", ("pixels", "pixels_and_gradients"), needs="images"),
    Head("span.threshold", (0.3, 0.5, 0.7), needs="text_span"),
    Head("span.neighbours", (0, 1, 2), needs="text_span"),
)
"""Every head, in the fixed order in which heads are sampled and their log-probs are listed."""

HEAD_BY_NAME: Mapping[str, Head] = {head.name: head for head in HEADS}


OWN_FEATURES = frozenset({"images", "text_span"})
"""Data kinds whose programs build their own features instead of the table pipeline."""


def _needed(head: Head, features: Mapping[str, Any]) -> bool:
    """Whether the task has what `head` needs (a column kind, or a data kind)."""
    kind = features.get("data_kind", "tabular")
    if head.needs in OWN_FEATURES:
        return bool(kind == head.needs)
    if kind in OWN_FEATURES:
        return head.name == "scale"  # their own features are numbers, never missing, never categories
    return bool(features.get(f"{head.needs}_columns"))


def is_active(head: Head, choices: Mapping[str, Any], features: Mapping[str, Any]) -> bool:
    """Whether `head` changes the program, given the choices made before it and the task's features."""
    if head.family is not None:
        return choices.get("family") == head.family
    if head.needs is not None and not _needed(head, features):
        return False
    return head.name != "scale" or choices.get("family") in SCALE_SENSITIVE


def active_heads(choices: Mapping[str, Any], features: Mapping[str, Any]) -> list[Head]:
    """The heads active under complete `choices`, in `HEADS` order."""
    return [head for head in HEADS if is_active(head, choices, features)]


def check_choices(choices: Mapping[str, Any], features: Mapping[str, Any]) -> None:
    """ValueError naming the first active head whose choice is missing or not one of its options."""
    for head in active_heads(choices, features):
        if head.name not in choices:
            raise ValueError(f"The choices lack a value for the active grammar head {head.name!r}.")
        head.index(choices[head.name])


def default_choices(features: Mapping[str, Any]) -> Choices:
    """The simplest valid program: median imputation, standard scaling, one-hot encoding, word TF-IDF
    (5,000 terms) and a linear model with C = 1 (logistic regression, or ridge with alpha = 1)."""
    defaults = {"family": "linear", "linear.C": 1.0, "impute": "median", "scale": "standard"}
    defaults |= {"encode": "one_hot", "text.analyzer": "word", "text.max_features": 5000}
    defaults |= {"image.size": 16, "image.features": "pixels", "span.threshold": 0.5, "span.neighbours": 1}
    return {
        h.name: defaults[h.name] for h in HEADS if h.name in defaults and is_active(h, defaults, features)
    }


def text_terms(choices: Mapping[str, Any]) -> int:
    """TF-IDF vocabulary per text column: the choice, capped at `DENSE_TEXT_TERMS` for dense-only families.

    >>> text_terms({"family": "hist_gb", "text.max_features": 5000})
    300
    """
    terms = int(choices["text.max_features"])
    return min(terms, DENSE_TEXT_TERMS) if choices["family"] in DENSE_ONLY else terms


MARKER = "# practicum-grammar:"
_MARKER_LINE = re.compile(r"^[ \t]*# practicum-grammar:[ \t]*(\{.*\})[ \t]*$", re.MULTILINE)


def embed_choices(choices: Mapping[str, Any]) -> str:
    """The comment line that carries `choices` inside a program.

    >>> embed_choices({"family": "linear", "linear.C": 1.0})
    '# practicum-grammar: {"grammar": 1, "choices": {"family": "linear", "linear.C": 1.0}}'
    """
    return f"{MARKER} {json.dumps({'grammar': GRAMMAR_VERSION, 'choices': dict(choices)})}"


def parse_choices(code: str) -> Choices | None:
    """The choices embedded in a program's code by `embed_choices`, or None when it carries none.

    >>> parse_choices(embed_choices({"family": "knn"}) + "\\nimport numpy")
    {'family': 'knn'}
    >>> parse_choices("print('hello')") is None
    True
    """
    match = _MARKER_LINE.search(code)
    if match is None:
        return None
    try:
        payload = json.loads(match.group(1))
    except json.JSONDecodeError:
        return None
    choices = payload.get("choices") if isinstance(payload, dict) else None
    return choices if isinstance(choices, dict) else None
