"""Solve and improve prompts: what the LM is told about a competition and an earlier solution."""

from __future__ import annotations

import pytest

from rl_core.policy import PreviousSolution, Prompt, TaskInfo
from rl_core.prompts import (
    SUBMISSION_PATH,
    SYSTEM_PROMPT,
    TRUNCATED,
    PromptLimits,
    build_messages,
    user_message,
)

TASK = TaskInfo(
    slug="house-prices",
    description="Predict the sale price of each house from its features.",
    metric="rmse",
    higher_is_better=False,
    id_column="Id",
    target_columns=("SalePrice",),
    time_limit_s=300.0,
    files=("train.csv", "test.csv", "sample_submission.csv"),
    data_preview="train.csv:\nId,LotArea,SalePrice\n1,8450,208500",
)
PREVIOUS = PreviousSolution(
    code="import pandas as pd\nprint('fitting a ridge model')\n",
    output="validation rmse 0.1432",
    score=0.1432,
)


def solve_text(task: TaskInfo = TASK, limits: PromptLimits | None = None) -> str:
    return user_message(Prompt(task=task, kind="solve"), limits)


def improve_text() -> str:
    return user_message(Prompt(task=TASK, kind="improve", previous=PREVIOUS))


def test_the_messages_are_a_system_turn_then_the_user_turn():
    messages = build_messages(Prompt(task=TASK, kind="solve"))
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == SYSTEM_PROMPT


def test_a_solve_prompt_includes_the_description_and_the_data_preview():
    text = solve_text()
    assert TASK.description in text
    assert "Id,LotArea,SalePrice\n1,8450,208500" in text


def test_a_solve_prompt_names_the_input_files_and_the_submission_path():
    text = solve_text()
    assert all(f"./input/{name}" in text for name in TASK.files)
    assert SUBMISSION_PATH in text


def test_a_solve_prompt_states_the_metric_and_its_direction():
    assert "rmse (lower is better)" in solve_text()
    higher = TaskInfo("c", "d", "accuracy", True, "id", ("y",), 60.0)
    assert "accuracy (higher is better)" in solve_text(higher)


def test_a_solve_prompt_states_the_time_limit_the_id_and_the_targets():
    text = solve_text()
    assert "within 300 seconds" in text
    assert "`Id`" in text and "`SalePrice`" in text


def test_a_prompt_asks_for_a_plan_then_one_python_block():
    text = solve_text()
    assert "plan" in text and "ONE ```python code block" in text


def test_an_improve_prompt_shows_the_earlier_code_its_output_and_its_score():
    text = improve_text()
    assert PREVIOUS.code.rstrip() in text
    assert "validation rmse 0.1432" in text
    assert "scored 0.1432 on rmse; lower is better" in text


def test_an_improve_prompt_still_describes_the_competition():
    text = improve_text()
    assert TASK.description in text and SUBMISSION_PATH in text


def test_an_improve_prompt_without_an_earlier_solution_is_refused():
    with pytest.raises(ValueError, match="previous"):
        user_message(Prompt(task=TASK, kind="improve"))


def test_a_long_description_is_cut_to_its_budget_and_marked():
    task = TaskInfo("c", "word " * 5000, "rmse", False, "id", ("y",), 60.0)
    text = solve_text(task, PromptLimits(description_chars=100))
    assert TRUNCATED in text
    assert text.count("word") < 30


def test_a_long_output_keeps_its_tail():
    previous = PreviousSolution("print(1)", "noise\n" * 1000 + "final score 0.9", 0.9)
    text = user_message(Prompt(task=TASK, kind="improve", previous=previous), PromptLimits(output_chars=50))
    assert "final score 0.9" in text and text.count("noise") < 10
