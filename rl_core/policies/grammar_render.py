"""Render grammar choices as a complete, readable solution: a plan paragraph, then one Python block.

The program reads ``./input/train.csv`` and ``./input/test.csv``, builds one scikit-learn `Pipeline`
(a `ColumnTransformer` for imputation, scaling, categorical encoding and TF-IDF text features, then the
model), fits it, and writes ``./submission/submission.csv`` with the id column and the target columns in
the format the metric needs (labels, P(label == 1), one probability column per class, or values).
Competitions of other data kinds (`rl_core.data_kinds`) get their own reading and features from
`grammar_kinds`: JSON records are flattened into the same tables, images become pixel matrices, and
text spans become one row per word; the estimator, fitting and writing are shared.
Every model runs on one thread (``n_jobs=1``, ``OMP_NUM_THREADS=1``): the sandbox has one or two cores,
and a family's duration should reflect its own cost. Column lists come from the task's features, so a
program is specific to its competition. Its first line carries the choices (`grammar_space.embed_choices`).
The plan's wording lives in `grammar_plan`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rl_core.policies import grammar_kinds
from rl_core.policies.grammar_plan import render_plan
from rl_core.policies.grammar_space import DENSE_ONLY, check_choices, embed_choices, text_terms
from rl_core.policy import TaskInfo

ESTIMATORS: Mapping[str, tuple[str, str, str]] = {
    "linear": ("sklearn.linear_model", "LogisticRegression", "Ridge"),
    "knn": ("sklearn.neighbors", "KNeighborsClassifier", "KNeighborsRegressor"),
    "random_forest": ("sklearn.ensemble", "RandomForestClassifier", "RandomForestRegressor"),
    "extra_trees": ("sklearn.ensemble", "ExtraTreesClassifier", "ExtraTreesRegressor"),
    "hist_gb": ("sklearn.ensemble", "HistGradientBoostingClassifier", "HistGradientBoostingRegressor"),
    "lightgbm": ("lightgbm", "LGBMClassifier", "LGBMRegressor"),
    "xgboost": ("xgboost", "XGBClassifier", "XGBRegressor"),
    "mlp": ("sklearn.neural_network", "MLPClassifier", "MLPRegressor"),
}
"""family -> (module, classifier class, regressor class)."""

SINGLE_OUTPUT_REGRESSORS = frozenset({"hist_gb", "lightgbm"})
"""Regressors wrapped in MultiOutputRegressor for several targets (the others fit 2-D targets natively)."""
MAX_CATEGORIES = 50

CLASSIFICATION = frozenset({"binary", "multiclass", "multilabel"})


def literal(value: Any) -> str:
    """Python source for a JSON scalar, strings in double quotes.

    >>> literal("sqrt"), literal(None), literal(0.1)
    ('"sqrt"', 'None', '0.1')
    """
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


def _list(values: list[Any]) -> str:
    return "[" + ", ".join(literal(v) for v in values) + "]"


def _kwargs(family: str, c: Mapping[str, Any], classification: bool) -> list[str]:
    """The constructor arguments of `family`'s estimator, as ``name=value`` source."""
    p = {k.split(".", 1)[1]: v for k, v in c.items() if k.startswith(f"{family}.")}
    seed = "random_state=0"
    if family == "linear":
        return [f"C={p['C']}", "max_iter=1000"] if classification else [f"alpha={1.0 / p['C']:g}"]
    if family == "knn":
        return [
            f"n_neighbors=min({p['n_neighbors']}, len(train))",
            f"weights={literal(p['weights'])}",
            "n_jobs=1",
        ]
    if family == "mlp":
        hidden = tuple(int(size) for size in p["hidden"].split(","))
        return [f"hidden_layer_sizes={hidden}", f"alpha={p['alpha']}", f"max_iter={p['max_iter']}", seed]
    named = [f"{name}={literal(value)}" for name, value in p.items()]
    extra = {
        "random_forest": ["n_jobs=1", seed],
        "extra_trees": ["n_jobs=1", seed],
        "hist_gb": [seed],
        "lightgbm": ["n_jobs=1", seed, "verbose=-1"],
        "xgboost": ['tree_method="hist"', "n_jobs=1", seed, "verbosity=0"],
    }
    return named + extra[family]


def estimator(choices: Mapping[str, Any], task_type: str) -> tuple[list[str], str]:
    """(import lines, source that defines `estimator`), wrapped for several outputs where needed."""
    family = choices["family"]
    module, classifier, regressor = ESTIMATORS[family]
    name = classifier if task_type in CLASSIFICATION else regressor
    arguments = "".join(f"    {a},\n" for a in _kwargs(family, choices, task_type in CLASSIFICATION))
    source = f"estimator = {name}(\n{arguments})"
    imports = [f"from {module} import {name}"]
    wrapper = None
    if task_type == "multilabel":
        wrapper = "MultiOutputClassifier"
    elif task_type == "multi_target_regression" and family in SINGLE_OUTPUT_REGRESSORS:
        wrapper = "MultiOutputRegressor"
    if wrapper:
        imports.append(f"from sklearn.multioutput import {wrapper}")
        source += f"\nestimator = {wrapper}(estimator)  # one model per target column"
    return imports, source


def _numeric_step(choices: Mapping[str, Any]) -> tuple[str, list[str]]:
    strategy = choices["impute"]
    fill = ", fill_value=0" if strategy == "constant" else ""
    imputer = f'SimpleImputer(strategy="{strategy}"{fill})'
    scaler = {"standard": "StandardScaler()", "robust": "RobustScaler()"}.get(choices.get("scale", "none"))
    if scaler is None:
        return imputer, ["from sklearn.impute import SimpleImputer"]
    imports = [
        "from sklearn.impute import SimpleImputer",
        "from sklearn.pipeline import make_pipeline",
        f"from sklearn.preprocessing import {scaler[:-2]}",
    ]
    return f"make_pipeline({imputer}, {scaler})", imports


def _categorical_step(choices: Mapping[str, Any], dense: bool) -> tuple[str, list[str]]:
    if choices["encode"] == "ordinal":
        step = 'OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1)'
        return step, ["from sklearn.preprocessing import OrdinalEncoder"]
    sparse = ", sparse_output=False" if dense else ""
    step = f'OneHotEncoder(handle_unknown="ignore", max_categories={MAX_CATEGORIES}{sparse})'
    return step, ["from sklearn.preprocessing import OneHotEncoder"]


def _text_settings(choices: Mapping[str, Any]) -> str:
    analyzer, ngrams = ('"word"', "(1, 2)") if choices["text.analyzer"] == "word" else ('"char_wb"', "(2, 4)")
    terms = text_terms(choices)
    return f"TFIDF = dict(analyzer={analyzer}, ngram_range={ngrams}, max_features={terms}, sublinear_tf=True)"


def preprocessing(choices: Mapping[str, Any], features: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(source that defines `preprocess`, import lines) for the task's column kinds."""
    dense = choices["family"] in DENSE_ONLY
    steps, imports, lines = [], ["from sklearn.compose import ColumnTransformer"], []
    if features["numeric_columns"]:
        step, more = _numeric_step(choices)
        steps.append(f'("numeric", {step}, NUMERIC)')
        imports += more
    if features["categorical_columns"]:
        step, more = _categorical_step(choices, dense)
        steps.append(f'("categorical", {step}, CATEGORICAL)')
        imports += more
    lines.append("transformers = [\n" + "".join(f"    {s},\n" for s in steps) + "]")
    if features["text_columns"]:
        imports.append("from sklearn.feature_extraction.text import TfidfVectorizer")
        lines.insert(0, _text_settings(choices))
        lines.append(
            'transformers += [(f"text_{column}", TfidfVectorizer(**TFIDF), column) for column in TEXT]'
        )
    lines.append(f"preprocess = ColumnTransformer(transformers, sparse_threshold={0 if dense else 0.3})")
    return "\n".join(lines), imports


def _class_map(features: Mapping[str, Any]) -> str:
    rows = "".join(
        f"    {literal(column)}: {literal(label)},\n" for column, label in features["class_columns"]
    )
    return "CLASS_OF_COLUMN = {\n" + rows + "}"


def constants(task: TaskInfo, features: Mapping[str, Any]) -> str:
    """The column constants every program starts from."""
    lines = [
        f"ID = {literal(task.id_column)}",
        f"TARGETS = {_list(list(task.target_columns))}",
        f"NUMERIC = {_list(features['numeric_columns'])}",
        f"CATEGORICAL = {_list(features['categorical_columns'])}",
        f"TEXT = {_list(features['text_columns'])}",
        "FEATURES = NUMERIC + CATEGORICAL + TEXT",
    ]
    if features.get("label_column") is not None:
        lines.insert(2, f"LABEL = {literal(features['label_column'])}")
    if features["task_type"] == "binary" and features["prediction"] == "probability":
        lines.insert(
            3, f"POSITIVE = {literal(features['positive_label'])}  # the label whose probability is scored"
        )
    if features["class_columns"]:
        lines.append(_class_map(features))
    return "\n".join(lines)


def loading(features: Mapping[str, Any]) -> str:
    """Read both files, drop training rows without a target, make categories and text plain strings."""
    label_columns = "[LABEL]" if features.get("label_column") is not None else "TARGETS"
    reads = ['train = pd.read_csv("./input/train.csv")', 'test = pd.read_csv("./input/test.csv")']
    if features.get("data_kind") == "json":
        reads = [grammar_kinds.JSON_READER + "\n\n", *grammar_kinds.json_reads(features)]
    lines = [*reads, f"train = train.dropna(subset={label_columns}).reset_index(drop=True)"]
    cleaning = []
    if features["categorical_columns"]:
        cleaning.append('    frame[CATEGORICAL] = frame[CATEGORICAL].fillna("missing").astype(str)')
    if features["text_columns"]:
        cleaning.append('    frame[TEXT] = frame[TEXT].fillna("").astype(str)')
    if cleaning:
        lines.append("for frame in (train, test):\n" + "\n".join(cleaning))
    return "\n".join(lines)


def _fit_classifier(features: Mapping[str, Any]) -> str:
    labels = "train[LABEL]" if features.get("label_column") is not None else "train[TARGETS].idxmax(axis=1)"
    return f"encoder = LabelEncoder()\ny = encoder.fit_transform({labels})\nmodel.fit(train[FEATURES], y)"


def _predict(features: Mapping[str, Any]) -> str:
    """Source that fills `submission` (already holding the ids) from the fitted model."""
    task_type, prediction = features["task_type"], features["prediction"]
    if task_type == "multilabel":
        return (
            "probabilities = model.predict_proba(test[FEATURES])  # one (rows, 2) array per target\n"
            "for column, column_probabilities in zip(TARGETS, probabilities):\n"
            "    submission[column] = column_probabilities[:, -1]"
        )
    if task_type not in CLASSIFICATION:
        clip = (
            "\npredictions = np.clip(predictions, 0, None)  # the metric needs values >= 0"
            if (features.get("min_value") is not None)
            else ""
        )
        return (
            f"predictions = model.predict(test[FEATURES]){clip}\n"
            "submission[TARGETS] = np.asarray(predictions).reshape(len(test), len(TARGETS))"
        )
    if prediction == "label":
        return "submission[TARGETS[0]] = encoder.inverse_transform(model.predict(test[FEATURES]))"
    if not features["class_columns"]:
        return (
            "positive = list(encoder.classes_).index(POSITIVE)\n"
            "submission[TARGETS[0]] = model.predict_proba(test[FEATURES])[:, positive]"
        )
    return (
        "probabilities = model.predict_proba(test[FEATURES])\n"
        "classes = list(encoder.classes_)\n"
        "for column, label in CLASS_OF_COLUMN.items():\n"
        "    submission[column] = probabilities[:, classes.index(label)] if label in classes else 0.0"
    )


def fitting(features: Mapping[str, Any]) -> str:
    """Fit the pipeline, predict the test rows, build the submission."""
    single_label = features["task_type"] in ("binary", "multiclass")
    if single_label:
        fit = _fit_classifier(features)
    elif features["task_type"] == "multilabel":
        fit = "model.fit(train[FEATURES], train[TARGETS].astype(int))"
    else:
        fit = "model.fit(train[FEATURES], train[TARGETS[0]] if len(TARGETS) == 1 else train[TARGETS])"
    return (
        f"started = time.time()\n{fit}\n"
        'print(f"Fitted on {len(train)} rows in {time.time() - started:.1f} s")\n\n'
        f"submission = pd.DataFrame({{ID: test[ID]}})\n{_predict(features)}"
    )


WRITING = (
    'os.makedirs("./submission", exist_ok=True)\n'
    'submission.to_csv("./submission/submission.csv", index=False)\n'
    'print(f"Wrote {len(submission)} rows to ./submission/submission.csv")'
)


HEADER = """import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread per model: the sandbox has 1-2 cores

import time
import warnings

import numpy as np
import pandas as pd
"""


def import_block(imports: list[str]) -> str:
    """``from M import A`` lines merged per module and sorted, e.g. one line for sklearn.preprocessing.

    >>> import_block(["from b import Y", "from a import Z", "from b import X"])
    'from a import Z\\nfrom b import X, Y'
    """
    names: dict[str, set[str]] = {}
    for line in imports:
        module, name = line.removeprefix("from ").split(" import ")
        names.setdefault(module, set()).add(name)
    return "\n".join(f"from {m} import {', '.join(sorted(names[m]))}" for m in sorted(names))


def header(features: Mapping[str, Any]) -> str:
    """The first lines: the thread limit, then the plain imports (json for JSON records)."""
    return (
        HEADER.replace("import time\n", "import json\nimport time\n")
        if features.get("data_kind") == "json"
        else HEADER
    )


def _table_sections(choices: Mapping[str, Any], task: TaskInfo, imports: list[str]) -> list[str]:
    features = task.features
    prep, more = preprocessing(choices, features)
    imports += more
    model = 'model = Pipeline([("preprocess", preprocess), ("model", estimator)])'
    return [constants(task, features), loading(features), prep, model, fitting(features)]


def _image_sections(choices: Mapping[str, Any], task: TaskInfo, imports: list[str]) -> list[str]:
    features = task.features
    model, more = grammar_kinds.image_model(choices)
    imports += [*more, "from pathlib import Path", "from PIL import Image"]
    fit = fitting(features).replace("train[FEATURES]", "X_train").replace("test[FEATURES]", "X_test")
    return [
        constants(task, features) + "\n" + grammar_kinds.image_constants(choices, features),
        loading(features),
        grammar_kinds.image_reading(choices),
        model,
        fit,
    ]


def _span_sections(choices: Mapping[str, Any], task: TaskInfo, imports: list[str]) -> list[str]:
    features = task.features
    model, more = grammar_kinds.image_model(choices)  # the same optional scaler before the model
    imports += more
    constants = f"ID = {literal(task.id_column)}"
    sections = grammar_kinds.span_sections(choices, features, task.target_columns[0])
    return [constants, *sections, model, grammar_kinds.SPAN_FITTING]


def render_code(choices: Mapping[str, Any], task: TaskInfo) -> str:
    """The Python program for `choices` on `task` (whose `features` must be filled)."""
    features = task.features
    kind = features.get("data_kind", "tabular")
    task_type = "binary" if kind == "text_span" else features["task_type"]  # spans: P(word in span)
    model_imports, model = estimator(choices, task_type)
    imports = [*model_imports, "from sklearn.pipeline import Pipeline"]
    if task_type in ("binary", "multiclass") and kind != "text_span":
        imports.append("from sklearn.preprocessing import LabelEncoder")
    build = {"images": _image_sections, "text_span": _span_sections}.get(kind, _table_sections)
    body = build(choices, task, imports)
    sections = [
        embed_choices(choices),
        header(features)
        + import_block(imports)
        + '\n\nwarnings.filterwarnings("ignore")  # keep the output readable',
        *body[:-2],
        f"{model}\n{body[-2]}",
        body[-1],
        WRITING,
    ]
    return sections[0] + "\n" + "\n\n".join(sections[1:]) + "\n"


def render(choices: Mapping[str, Any], task: TaskInfo) -> str:
    """The full response for `choices`: the plan, then the program in one ```python block.

    Raises:
        ValueError: `task.features` is empty, or a choice is missing or invalid.
    """
    if not task.features:
        raise ValueError(
            f"Task {task.slug!r} has no features: "
            "fill TaskInfo.features with rl_core.features.task_features()."
        )
    check_choices(choices, task.features)
    return f"{render_plan(choices, task)}\n\n```python\n{render_code(choices, task)}```\n"
