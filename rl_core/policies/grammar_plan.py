"""The plan paragraph of a grammar program: what the program does and why, in plain prose.

It states the task as the features see it (for images and JSON records also how they are read; a text-span
task has its own paragraph, `_span_plan`) (kind, sizes, column kinds, missing values, metric and
direction), what the submission must hold, each preprocessing step, the model with its hyper-parameters,
and the trade-off that family makes. Only facts the program acts on appear: nothing is claimed about
scores it has not measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rl_core.policies.grammar_space import text_terms
from rl_core.policy import TaskInfo

FAMILY_TEXT: Mapping[str, tuple[str, str]] = {
    "linear": ("a regularised linear model", "a fast, robust baseline that cannot model interactions"),
    "knn": (
        "a k-nearest-neighbours model",
        "it predicts from the most similar training rows, so it needs "
        "well-scaled features and is slow to predict on large data",
    ),
    "random_forest": (
        "a random forest",
        "an average of deep trees that models interactions with little tuning",
    ),
    "extra_trees": (
        "an extra-trees ensemble",
        "a random forest with random split thresholds: faster to grow and often as accurate",
    ),
    "hist_gb": (
        "scikit-learn's histogram gradient boosting",
        "boosted trees on binned features, strong on "
        "tabular data (it needs dense input, so text features are capped)",
    ),
    "lightgbm": (
        "a LightGBM gradient-boosted tree model",
        "leaf-wise boosting, usually among the strongest models on tabular data",
    ),
    "xgboost": (
        "an XGBoost gradient-boosted tree model",
        "depth-wise boosting with histogram splits, strong on tabular data and slower as trees deepen",
    ),
    "mlp": (
        "a small neural network (multi-layer perceptron)",
        "it can fit smooth non-linear functions but trains slowest and depends on feature scaling",
    ),
}
"""family -> (what it is, why one would choose it)."""

HYPER_TEXT: Mapping[str, str] = {
    "C": "inverse regularisation C = {}",
    "n_neighbors": "k = {}",
    "weights": "{} neighbour weights",
    "n_estimators": "{} trees",
    "max_iter": "{} iterations",
    "max_depth": "maximum depth {}",
    "max_features": "{} of the features per split",
    "min_samples_leaf": "at least {} rows per leaf",
    "learning_rate": "learning rate {}",
    "max_leaf_nodes": "{} leaves per tree",
    "num_leaves": "{} leaves per tree",
    "hidden": "hidden layers of {} units",
    "alpha": "L2 penalty {}",
}

IMPUTE_TEXT = {
    "mean": "column mean",
    "median": "column median",
    "most_frequent": "most frequent value",
    "constant": "constant 0",
}


def _kind(features: Mapping[str, Any]) -> str:
    task_type, n_targets = features["task_type"], len(features["target_columns"])
    return {
        "binary": "a binary classification task",
        "multiclass": f"a multiclass classification task ({features['n_classes']} classes)",
        "regression": "a regression task",
        "multi_target_regression": f"a regression task ({n_targets} targets)",
        "multilabel": f"a multi-label classification task ({n_targets} labels)",
    }[task_type]


def _columns(features: Mapping[str, Any]) -> str:
    if features.get("data_kind") == "images":
        return f"{features['n_images']} images"
    counts = [(len(features[f"{k}_columns"]), k) for k in ("numeric", "categorical", "text")]
    kinds = ", ".join(f"{n} {k}" for n, k in counts if n)
    return f"{features['n_features']} feature columns ({kinds or 'none usable'})"


def _output(features: Mapping[str, Any]) -> str:
    targets = ", ".join(features["target_columns"])
    if features["prediction"] == "label":
        return f"the predicted label in {targets}"
    if features["prediction"] == "value":
        clipped = ", clipped at 0 as the metric requires" if features.get("min_value") is not None else ""
        return f"a predicted value for {targets}{clipped}"
    if features["task_type"] == "binary":
        return f"the probability that {targets} is {features['positive_label']!r}"
    if features["task_type"] == "multilabel":
        return f"the probability of each label ({targets})"
    return "one probability column per class"


def _hyper(choices: Mapping[str, Any], family: str) -> str:
    parts = []
    for key, value in choices.items():
        if key.startswith(f"{family}."):
            name = key.split(".", 1)[1]
            shown = "unlimited" if value is None else value
            parts.append(HYPER_TEXT[name].format(shown))
    return ", ".join(parts)


def _steps(choices: Mapping[str, Any], features: Mapping[str, Any]) -> list[str]:
    steps = []
    if features.get("data_kind") == "json":
        steps.append(
            f"reads the records of {features['train_file']} and {features['test_file']}, flattening nested "
            "fields into columns and lists into text"
        )
    if features.get("data_kind") == "images":
        return _image_steps(choices, features)
    if features["numeric_columns"]:
        step = f"fills missing numeric values with the {IMPUTE_TEXT[choices['impute']]}"
        scale = choices.get("scale", "none")
        if scale != "none":
            step += " and " + (
                "standardises them" if scale == "standard" else "scales them by median and IQR"
            )
        steps.append(step)
    if features["categorical_columns"]:
        steps.append(
            "one-hot encodes the categorical columns (unseen categories ignored)"
            if choices["encode"] == "one_hot"
            else "encodes the categorical columns as integers"
        )
    if features["text_columns"]:
        grams = "word 1-2-gram" if choices["text.analyzer"] == "word" else "character 2-4-gram"
        steps.append(
            f"turns each text column into {grams} TF-IDF features (up to {text_terms(choices)} terms)"
        )
    return steps


def _image_steps(choices: Mapping[str, Any], features: Mapping[str, Any]) -> list[str]:
    colour = "grey" if features["image_mode"] == "L" else "RGB"
    size = choices["image.size"]
    what = "pixels and their gradient magnitudes" if choices["image.features"] != "pixels" else "pixels"
    step = (
        f"opens each of the {features['n_images']} images (named by {features['image_column']}) with Pillow, "
        f"converts it to {colour}, resizes it to {size}x{size} and flattens its {what}"
    )
    scale = choices.get("scale", "none")
    if scale != "none":
        step += ", " + ("standardised" if scale == "standard" else "scaled by median and IQR")
    return [step]


def _span_plan(choices: Mapping[str, Any], task: TaskInfo) -> str:
    features, family = task.features, choices["family"]
    what, why = FAMILY_TEXT[family]
    hyper = _hyper(choices, family)
    context = ", ".join(features["categorical_columns"]) or "none"
    return (
        f"Plan: this is a text-span extraction task with {features['n_rows']} training rows and "
        f"{features['n_test_rows']} test rows: each test row gets the part of its "
        f"{features['text_columns'][0]} that {task.target_columns[0]} should hold, scored by {task.metric} "
        "(word overlap, higher is better). "
        "The program makes one row per word (its position, shape and how often the word, and the "
        f"{choices['span.neighbours']} words on each side, fall inside training spans, counted out of fold; "
        f"context columns: {context}), then fits {what}"
        + (f" ({hyper})" if hyper else "")
        + f" to tell span words from the others: {why}. It keeps the words with a probability of at least "
        f"{choices['span.threshold']} and returns the text from the first to the last of them, or the whole "
        "text when there is none. Every model runs on a single thread. "
        f"It writes {task.id_column} and {task.target_columns[0]} to ./submission/submission.csv."
    )


def render_plan(choices: Mapping[str, Any], task: TaskInfo) -> str:
    """One paragraph: the task, the submission's contents, the preprocessing, the model and why."""
    features = task.features
    if features.get("data_kind") == "text_span":
        return _span_plan(choices, task)
    family = choices["family"]
    what, why = FAMILY_TEXT[family]
    direction = "higher" if task.higher_is_better else "lower"
    missing = f"{features['missing_fraction']:.1%} of feature cells missing"
    if features.get("data_kind") == "images":
        missing = (
            f"{features['image_mode']} images, mostly {'x'.join(map(str, features['image_size']))} pixels"
        )
    steps = _steps(choices, features)
    hyper = _hyper(choices, family)
    return (
        f"Plan: this is {_kind(features)} with {features['n_rows']} training rows, {features['n_test_rows']} "
        f"test rows and {_columns(features)}; {missing}. It is scored by {task.metric} ({direction} is "
        f"better), so each test row gets {_output(features)}. The program "
        + (", ".join(steps) + ", then fits " if steps else "fits ")
        + f"{what}"
        + (f" ({hyper})" if hyper else "")
        + f": {why}. Every model runs on a single thread. "
        f"It writes {task.id_column} and the targets to ./submission/submission.csv."
    )
