"""TablePolicy: a categorical over named families, tagged programs, and the improve keep-bonus."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from rl_core.policies.table import TablePolicy, family_of, render_program
from rl_core.policy import PreviousSolution, Prompt, TaskInfo

TASK = TaskInfo("comp", "a task", "accuracy", True, "id", ("y",), 60.0)
SOLVE = Prompt(task=TASK, kind="solve")


def improve_on(family: str) -> Prompt:
    return Prompt(
        task=TASK, kind="improve", previous=PreviousSolution(f"# family: {family}\nprint(1)\n", "", 0.5)
    )


def test_it_samples_each_family_with_its_probability():
    policy = TablePolicy(["a", "b"], init_logits=[0.0, torch.log(torch.tensor(3.0)).item()])
    samples = policy.sample([SOLVE] * 4000, generator=torch.Generator().manual_seed(0))
    share_b = Counter(s.info["family"] for s in samples)["b"] / 4000
    assert share_b == pytest.approx(0.75, abs=0.03)


def test_a_response_is_a_fenced_program_tagged_with_its_family():
    [sample] = TablePolicy(["lightgbm"]).sample([SOLVE], generator=torch.Generator())
    assert "```python\n" in sample.response
    assert family_of(sample.response) == sample.info["family"] == "lightgbm"


def test_a_sample_is_tagged_with_the_policy_version():
    policy = TablePolicy(["a", "b"])
    policy.version = 7
    assert policy.sample([SOLVE], generator=torch.Generator())[0].policy_version == 7


def test_score_gives_the_log_probability_the_sample_was_drawn_with():
    policy = TablePolicy(["a", "b", "c"], init_logits=[0.5, -1.0, 2.0])
    samples = policy.sample([SOLVE] * 5, generator=torch.Generator().manual_seed(1))
    scored = policy.score(samples)
    assert scored.logprobs.shape == (5, 1)
    torch.testing.assert_close(scored.logprobs[:, 0], torch.tensor([s.logprobs[0] for s in samples]))


def test_score_is_differentiable_with_respect_to_the_logits():
    policy = TablePolicy(["a", "b"])
    policy.score(policy.sample([SOLVE], generator=torch.Generator())).logprobs.sum().backward()
    assert policy.logits.grad is not None and torch.count_nonzero(policy.logits.grad) == 2


def test_the_keep_bonus_raises_the_earlier_solutions_family_on_improve_prompts():
    policy = TablePolicy(["a", "b", "c"], keep_bonus=2.0)
    assert policy.probabilities(improve_on("b"))["b"] > 0.7
    assert policy.probabilities(SOLVE)["b"] == pytest.approx(1 / 3)


def test_without_a_keep_bonus_improve_prompts_change_nothing():
    policy = TablePolicy(["a", "b", "c"])
    assert policy.probabilities(improve_on("b")) == policy.probabilities(SOLVE)


def test_render_program_output_is_plain_python_that_runs():
    code = render_program("knn").split("```python\n")[1].split("```")[0]
    exec(compile(code, "<table>", "exec"), {})


def test_duplicate_family_names_are_refused():
    with pytest.raises(ValueError, match="distinct"):
        TablePolicy(["a", "a"])
