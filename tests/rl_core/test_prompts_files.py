"""What a prompt says about the public files: sizes, JSON records, images, text columns, within budget."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from rl_core.features import data_preview
from rl_core.policy import Prompt, TaskInfo
from rl_core.prompts import PromptLimits, user_message


def image_folder(public, n: int) -> None:
    from PIL import Image

    (public / "images").mkdir(parents=True)
    for i in range(n):
        Image.fromarray(np.zeros((6, 9), dtype=np.uint8), mode="L").save(public / "images" / f"{i}.png")


def test_the_preview_lists_every_file_with_its_size(tmp_path):
    pd.DataFrame({"id": [1, 2], "y": [0, 1]}).to_csv(tmp_path / "train.csv", index=False)
    pd.DataFrame({"id": [3]}).to_csv(tmp_path / "test.csv", index=False)
    (tmp_path / "notes.txt").write_text("x" * 3000)
    preview = data_preview(tmp_path)
    assert "notes.txt (2.9 KB)" in preview and "train.csv (" in preview and "test.csv (" in preview


def test_a_folder_of_many_images_is_one_line_and_its_images_are_counted_and_measured(tmp_path):
    image_folder(tmp_path, 30)
    preview = data_preview(tmp_path)
    assert "images/ (30 files: .png x 30" in preview
    assert "images/: 30 images (.png x 30); pixel sizes of the first 20: 9x6; colour modes: L" in preview
    assert "images/7.png" not in preview


def test_the_first_json_records_are_shown_with_every_key(tmp_path):
    records = [{"id": i, "user": {"age": 30 + i}, "text": "hello"} for i in range(5)]
    (tmp_path / "train.json").write_text(json.dumps(records))
    preview = data_preview(tmp_path)
    assert "train.json: 5 records with keys id, text, user" in preview
    assert '{"id": 0, "user": {"age": 30}, "text": "hello"}' in preview
    assert '"id": 4' not in preview  # only the first records


def test_long_text_columns_are_named_under_their_table(tmp_path):
    long = "a sentence that goes on well past forty characters of text"
    pd.DataFrame({"id": [1], "review": [long], "y": [1]}).to_csv(tmp_path / "train.csv", index=False)
    assert "Text columns (cells cut above at 40 characters): review" in data_preview(tmp_path)


def test_the_preview_stays_within_its_budget(tmp_path):
    for i in range(200):
        (tmp_path / f"file_{i:03}.txt").write_text("x")
    records = [{"id": i, "blob": "y" * 2000} for i in range(3)]
    (tmp_path / "train.json").write_text(json.dumps(records))
    assert len(data_preview(tmp_path, budget_chars=1500)) <= 1500


def test_a_prompt_counts_the_files_of_a_big_folder_instead_of_naming_them(tmp_path):
    files = ("train.csv", "test.csv", *(f"images/{i}.png" for i in range(500)))
    task = TaskInfo("imgs", "d", "accuracy", True, "id", ("y",), 60.0, files=files, data_preview="p")
    text = user_message(Prompt(task=task, kind="solve"), PromptLimits())
    assert "./input/images/ (500 files)" in text and "./input/images/17.png" not in text
    assert "./input/train.csv" in text
