"""GrammarPolicy on competitions that are not two CSV tables: images, JSON records, text spans."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from rl_core.features import task_features
from rl_core.grading import GradingSpec, grade_submission
from rl_core.metrics import get_metric
from rl_core.policies.grammar import GrammarPolicy, simplest_program
from rl_core.policies.grammar_space import FAMILIES, HEADS, active_heads, is_active
from rl_core.policy import Prompt, TaskInfo

WORDS = ["great", "awful", "lovely", "bad", "the", "a", "day", "film", "was", "really", "quite", "show"]


def write_images(public: Path, rng: np.random.Generator) -> tuple[dict, pd.DataFrame]:
    """40 bright or dark 12x12 grey PNGs under images/, labelled by brightness."""
    from PIL import Image

    (public / "images").mkdir(parents=True)
    labels = np.arange(40) % 2
    for i, label in enumerate(labels):
        pixels = rng.integers(0, 100, size=(12, 12)) + 150 * label
        Image.fromarray(pixels.astype(np.uint8), mode="L").save(public / "images" / f"img_{i}.png")
    names = [f"img_{i}" for i in range(40)]
    pd.DataFrame({"image_id": names[:30], "bright": labels[:30]}).to_csv(public / "train.csv", index=False)
    pd.DataFrame({"image_id": names[30:]}).to_csv(public / "test.csv", index=False)
    answers = pd.DataFrame({"image_id": names[30:], "bright": labels[30:]})
    return {"metric": "accuracy", "id_column": "image_id", "target_columns": ["bright"]}, answers


def write_records(public: Path, rng: np.random.Generator) -> tuple[dict, pd.DataFrame]:
    """60 nested JSON records (an object, a list) with a binary target; test.json without it."""
    records = []
    for i in range(60):
        age = float(rng.normal(40, 10))
        records.append({
            "request_id": f"r{i}", "user": {"age": age, "city": str(rng.choice(["a", "b"]))},
            "tags": [str(t) for t in rng.choice(WORDS, size=3)], "got_it": bool(age > 40),
        })  # fmt: skip
    public.mkdir(parents=True)
    (public / "train.json").write_text(json.dumps(records[:45]))
    test = [{k: v for k, v in r.items() if k != "got_it"} for r in records[45:]]
    (public / "test.json").write_text(json.dumps(test))
    answers = pd.DataFrame({"request_id": [r["request_id"] for r in records[45:]],
                            "got_it": [int(r["got_it"]) for r in records[45:]]})  # fmt: skip
    return {"metric": "roc_auc", "id_column": "request_id", "target_columns": ["got_it"]}, answers


def write_spans(public: Path, rng: np.random.Generator) -> tuple[dict, pd.DataFrame]:
    """60 short texts; the span is the sentiment word for a positive or negative text, else the text."""
    rows = []
    for i in range(60):
        words = list(rng.choice(WORDS[4:], size=6))
        sentiment = ["positive", "negative", "neutral"][i % 3]
        if sentiment != "neutral":
            word = WORDS[0] if sentiment == "positive" else WORDS[1]
            words.insert(int(rng.integers(0, 6)), word)
            span = word
        text = " ".join(words)
        rows.append({"textID": f"t{i}", "text": text, "sentiment": sentiment,
                     "selected_text": text if sentiment == "neutral" else span})  # fmt: skip
    frame = pd.DataFrame(rows)
    public.mkdir(parents=True)
    frame[:45].to_csv(public / "train.csv", index=False)
    frame[45:].drop(columns="selected_text").to_csv(public / "test.csv", index=False)
    answers = frame[45:][["textID", "selected_text"]]
    return {"metric": "jaccard", "id_column": "textID", "target_columns": ["selected_text"]}, answers


WRITERS = {"images": write_images, "json": write_records, "text_span": write_spans}


def make_task(root: Path, kind: str) -> tuple[TaskInfo, GradingSpec, Path]:
    """(task with features, grading spec, answers path) of a tiny competition of `kind` under root/input."""
    config, answers = WRITERS[kind](root / "input", np.random.default_rng(0))
    answers.to_csv(root / "answers.csv", index=False)
    features = task_features(root / "input", **config)
    metric = get_metric(config["metric"])
    task = TaskInfo(f"tiny-{kind}", "", config["metric"], metric.higher_is_better, config["id_column"],
                    tuple(config["target_columns"]), 120.0, features=features)  # fmt: skip
    spec = GradingSpec(config["metric"], config["id_column"], tuple(config["target_columns"]))
    return task, spec, root / "answers.csv"


def solve(task: TaskInfo, n: int = 1) -> list[Prompt]:
    return [Prompt(task=task, kind="solve")] * n


@pytest.mark.parametrize("kind", WRITERS)
def test_the_features_name_the_data_kind(tmp_path, kind):
    task, _, _ = make_task(tmp_path, kind)
    assert task.features["data_kind"] == kind


def test_an_image_task_names_its_image_column_count_mode_and_size(tmp_path):
    features = make_task(tmp_path, "images")[0].features
    assert (features["image_column"], features["n_images"]) == ("image_id", 40)
    assert (features["image_mode"], features["image_size"]) == ("L", [12, 12])
    assert features["feature_columns"] == [] and features["task_type"] == "binary"


def test_a_json_task_flattens_nested_fields_into_columns(tmp_path):
    features = make_task(tmp_path, "json")[0].features
    assert features["train_file"] == "train.json"
    assert set(features["feature_columns"]) == {"tags", "user.age", "user.city"}
    assert "user.age" in features["numeric_columns"]


def test_a_span_task_finds_the_text_column_and_its_context(tmp_path):
    features = make_task(tmp_path, "text_span")[0].features
    assert (features["text_columns"], features["categorical_columns"]) == (["text"], ["sentiment"])
    assert (features["task_type"], features["prediction"]) == ("text_span", "text")


@pytest.mark.parametrize(("kind", "own", "absent"), [
    ("images", {"image.size", "image.features"}, {"impute", "encode", "text.analyzer", "span.threshold"}),
    ("text_span", {"span.threshold", "span.neighbours"}, {"impute", "encode", "text.analyzer", "image.size"}),
    ("json", {"impute", "encode"}, {"image.size", "span.threshold"}),
])  # fmt: skip
def test_each_kind_draws_its_own_heads_and_not_the_others(tmp_path, kind, own, absent):
    task, _, _ = make_task(tmp_path, kind)
    drawn = set()
    for sample in GrammarPolicy().sample(solve(task, 12), generator=torch.Generator().manual_seed(0)):
        drawn |= set(sample.action.drawn)
    assert own <= drawn and not absent & drawn


def test_a_table_task_never_activates_the_image_or_span_heads():
    features = {"numeric_columns": ["a"], "categorical_columns": ["b"], "text_columns": ["c"]}
    for family in FAMILIES:
        names = {h.name for h in active_heads({"family": family, "scale": "none"}, features)}
        assert not any(name.startswith(("image.", "span.")) for name in names)


def test_scale_is_drawn_for_pixels_only_with_scale_sensitive_families(tmp_path):
    features = make_task(tmp_path, "images")[0].features
    [scale] = [h for h in HEADS if h.name == "scale"]
    assert is_active(scale, {"family": "mlp"}, features)
    assert not is_active(scale, {"family": "lightgbm"}, features)


def run(root: Path, code: str) -> subprocess.CompletedProcess:
    (root / "program.py").write_text(code)
    return subprocess.run(
        [sys.executable, "program.py"], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )


def code_of(response: str) -> str:
    return response.split("```python\n", 1)[1].rsplit("```", 1)[0]


@pytest.mark.slow
@pytest.mark.parametrize("kind", WRITERS)
@pytest.mark.parametrize("family", ["linear", "random_forest", "lightgbm", "mlp"])
def test_every_kind_s_program_runs_prints_progress_and_writes_a_valid_submission(tmp_path, kind, family):
    task, spec, answers = make_task(tmp_path, kind)
    choices = {"family": family}
    for head in HEADS[1:]:
        if is_active(head, choices, task.features):
            choices[head.name] = head.options[len(choices) % len(head.options)]
    result = run(tmp_path, code_of(GrammarPolicy().render(choices, task)))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Fitted on" in result.stdout and "Wrote" in result.stdout
    grade = grade_submission(tmp_path / "submission" / "submission.csv", answers, spec)
    assert grade.valid, grade.error


@pytest.mark.slow
def test_the_simplest_span_program_finds_the_sentiment_words(tmp_path):
    task, spec, answers = make_task(tmp_path, "text_span")
    assert run(tmp_path, code_of(simplest_program(task))).returncode == 0
    whole = pd.read_csv(tmp_path / "input" / "test.csv").rename(columns={"text": "selected_text"})
    whole[["textID", "selected_text"]].to_csv(tmp_path / "whole.csv", index=False)
    learned = grade_submission(tmp_path / "submission" / "submission.csv", answers, spec).score
    assert learned > grade_submission(tmp_path / "whole.csv", answers, spec).score
