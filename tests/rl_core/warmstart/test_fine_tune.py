"""Warm starts on a tiny Llama built in code: demonstrations, supervised fine-tuning, saving and loading."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import AutoModelForCausalLM

from rl_core.features import data_preview, task_features
from rl_core.policies.grammar import simplest_program
from rl_core.policies.lm.config import LMPolicyConfig
from rl_core.policies.lm.policy import LMPolicy
from rl_core.policy import PreviousSolution, Prompt, Sample, TaskInfo
from rl_core.responses import parse_response
from rl_core.testing import tiny_llama, tiny_tokenizer
from rl_core.warmstart.demonstrations import (
    Demonstration,
    PastAttempt,
    format_response,
    grammar_demonstrations,
    imitation_demonstrations,
)
from rl_core.warmstart.fine_tune import (
    WarmStartConfig,
    demonstration_loss,
    describe,
    encode,
    fine_tune,
    save_warm_start,
    warm_start_policy,
)
from rl_core.warmstart.folders import (
    FULL_MODEL_FOLDER,
    WarmStartSource,
    list_warm_starts,
    read_manifest,
    warm_start_source,
)

FAST = WarmStartConfig(epochs=3, minibatch=2, lr=1e-2)


TOKENIZER = tiny_tokenizer()


def tiny_model():
    return tiny_llama(TOKENIZER)


def make_policy(**overrides) -> LMPolicy:
    settings = {
        "max_new_tokens": 4096,
        "max_prompt_tokens": 256,  # prompts lose their middle: short sequences keep the tests fast
        "lora_r": 4,
        "lora_alpha": 8,
        "device": "cpu",
        "sampler": "transformers",
    }
    return LMPolicy(LMPolicyConfig(**(settings | overrides)), model=tiny_model(), tokenizer=TOKENIZER)


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> TaskInfo:
    """A small regression competition with real public files, so the grammar renders real programs."""
    public = tmp_path_factory.mktemp("public")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"id": range(40), "x1": rng.normal(size=40), "x2": rng.normal(size=40)})
    frame.assign(y=frame.x1 * 2 + frame.x2)[:30].to_csv(public / "train.csv", index=False)
    frame[30:].to_csv(public / "test.csv", index=False)
    features = task_features(public, id_column="id", target_columns=("y",), metric="rmse")
    return TaskInfo(
        "tiny", "Predict y from x1 and x2.", "rmse", False, "id", ("y",), 60.0,
        files=("train.csv", "test.csv"), data_preview=data_preview(public), features=features,
    )  # fmt: skip


@pytest.fixture(scope="module")
def pool(task) -> dict[str, list[PreviousSolution]]:
    code = parse_response(simplest_program(task)).code
    return {"tiny": [PreviousSolution(code, "Wrote 10 rows to ./submission/submission.csv", 0.42)]}


@pytest.fixture(scope="module")
def demos(task, pool) -> list[Demonstration]:
    return grammar_demonstrations([task], 4, pools=pool, seed=1)


@pytest.fixture(scope="module")
def short_demos(demos) -> list[Demonstration]:
    """The grammar demonstrations' prompts with short responses, for the tests of training mechanics."""
    programs = ["print('ridge')", "print('forest')", "print('ridge, scaled')", "print('boosting')"]
    return [
        dataclasses.replace(d, response=format_response(f"Plan {i}.", program))
        for i, (d, program) in enumerate(zip(demos, programs, strict=True))
    ]


def weights(policy: LMPolicy, *, lora: bool) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in policy.model.named_parameters() if ("lora_" in n) == lora}


def test_grammar_demonstrations_are_solve_and_improve_prompts_answered_by_one_program(task, pool, demos):
    assert [d.prompt.kind for d in demos] == ["solve", "solve", "improve", "improve"]
    for demo in demos:
        parsed = parse_response(demo.response)
        assert parsed.error is None and parsed.plan and demo.response.endswith(f"{parsed.code}```")
        assert demo.response == format_response(parsed.plan, parsed.code)
        assert demo.source == "grammar" and demo.prompt.task == task
    for demo in demos[2:]:
        assert demo.prompt.previous == pool["tiny"][0]
        assert parse_response(demo.response).code != pool["tiny"][0].code  # the improvement changes it


def test_without_a_pool_there_are_only_solve_demonstrations(task):
    assert {d.prompt.kind for d in grammar_demonstrations([task], 3)} == {"solve"}


def test_demonstrations_are_tokenized_as_the_policy_scores_its_samples(demos):
    policy = make_policy()
    demo = demos[2]
    sample = Sample(demo.prompt, demo.response, (), 0)
    [(prompt_ids, response_ids)] = encode(policy, [demo])
    assert prompt_ids == policy.prompt_ids(demo.prompt) and response_ids == policy.response_ids(sample)
    scored = policy.score([sample])
    expected = -float(scored.logprobs[scored.mask].mean().detach())
    assert demonstration_loss(policy, [demo]) == pytest.approx(expected, rel=1e-5)


def test_a_warm_start_lowers_the_demonstration_loss_and_changes_only_the_adapter_weights(demos):
    policy = make_policy()
    base, adapter = weights(policy, lora=False), weights(policy, lora=True)
    before = demonstration_loss(policy, demos)
    result = fine_tune(policy, demos, FAST)
    assert demonstration_loss(policy, demos) < before - 0.1  # nats per token
    assert all(torch.equal(value, weights(policy, lora=False)[name]) for name, value in base.items())
    assert any(not torch.equal(value, weights(policy, lora=True)[name]) for name, value in adapter.items())
    assert (result.steps, result.demonstrations, result.skipped) == (6, 4, 0)
    assert policy.version == 0


def test_progress_is_reported_after_every_step_with_the_total(short_demos):
    calls = []
    result = fine_tune(make_policy(), short_demos, FAST, progress=lambda *call: calls.append(call))
    assert [(step, total) for step, total, _ in calls] == [(s, 6) for s in range(1, 7)]
    assert [loss for _, _, loss in calls] == list(result.losses)


def test_demonstrations_the_policy_could_not_write_in_max_new_tokens_are_skipped(demos, short_demos):
    result = fine_tune(make_policy(max_new_tokens=64), [demos[0], *short_demos[:2]], FAST)
    assert (result.demonstrations, result.skipped) == (2, 1)


def test_the_saved_adapter_and_manifest_record_the_sources_and_reload(short_demos, task, tmp_path):
    demos = short_demos
    imitation = imitation_demonstrations([PastAttempt(task, demos[0].response, "", 0.3, "run:7")])
    policy = make_policy(model="tiny-llama")  # the name the manifest records
    result = fine_tune(policy, [*demos, *imitation], FAST)
    manifest = describe([*demos, *imitation], result, policy=policy, config=FAST)
    folder = save_warm_start(policy, tmp_path / "adapters" / "first", manifest)
    saved = read_manifest(folder)
    assert saved["sources"] == ["grammar", "run:7"] and saved["competitions"] == ["tiny"]
    assert saved["by_kind"] == {"solve": 3, "improve": 2} and saved["demonstrations"] == 5
    assert (saved["kind"], saved["base_model"], saved["steps"]) == ("lora", "tiny-llama", 9)
    assert [m["name"] for m in list_warm_starts(tmp_path / "adapters")] == ["first"]
    assert warm_start_source(folder) == WarmStartSource(None, str(folder), "tiny-llama")
    reloaded = make_policy(adapter_path=str(folder))
    assert demonstration_loss(reloaded, demos) == pytest.approx(demonstration_loss(policy, demos), rel=1e-5)
    with pytest.raises(FileExistsError):
        save_warm_start(policy, folder, manifest)


def test_full_fine_tuning_changes_the_base_weights_and_saves_a_merged_model(short_demos, tmp_path):
    demos = short_demos
    policy = make_policy()
    base = weights(policy, lora=False)
    config = dataclasses.replace(FAST, full=True, lr=1e-3)
    result = fine_tune(policy, demos, config)
    assert any(not torch.equal(value, weights(policy, lora=False)[name]) for name, value in base.items())
    assert all("lora_" in name for name, p in policy.model.named_parameters() if p.requires_grad)
    manifest = describe(demos, result, policy=policy, config=config)
    folder = save_warm_start(policy, tmp_path / "full", manifest)
    assert warm_start_source(folder).model == str(folder / FULL_MODEL_FOLDER)
    merged = AutoModelForCausalLM.from_pretrained(folder / FULL_MODEL_FOLDER)
    reloaded = LMPolicy(policy.config, model=merged, tokenizer=TOKENIZER)
    assert demonstration_loss(reloaded, demos) == pytest.approx(demonstration_loss(policy, demos), rel=1e-4)


def test_self_imitation_answers_improve_prompts_with_the_better_program(task):
    program = "Plan {}.\n\n```python\nprint({})\n```\ntrailing words"
    attempts = [
        PastAttempt(task, program.format("a", 1), "out a", 0.9, "run:1"),
        PastAttempt(task, program.format("b", 2), "out b", 0.2, "run:2"),  # rmse: lower is better
        PastAttempt(task, program.format("c", 2), "out c", 0.5, "run:2"),  # the same program, worse
        PastAttempt(task, "no code at all", "", 0.1, "run:2"),
    ]
    demos = imitation_demonstrations(attempts)
    assert [(d.prompt.kind, d.source) for d in demos] == [
        ("solve", "run:2"),
        ("improve", "run:2"),
        ("solve", "run:1"),
    ]
    improve = demos[1]
    assert improve.prompt.previous == PreviousSolution("print(1)\n", "out a", 0.9)
    assert improve.response == "Plan b.\n\ntrailing words\n\n```python\nprint(2)\n```"


def test_self_imitation_writes_its_responses_in_the_runs_prompt_style(task):
    response = "Plan: a task. The program fits a tree. Done.\n\n```python\nx = 1  # one\n\nprint(x)\n```"
    [demo] = imitation_demonstrations([PastAttempt(task, response, "", 0.5, "run:4")], style="compact")
    assert demo.response == "The program fits a tree.\n\n```python\nx = 1\nprint(x)\n```"


def test_warm_start_policy_builds_grammar_demonstrations_and_trains_on_them_and_the_extra_ones(task, pool):
    extra = [Demonstration(Prompt(task, "solve"), "Plan.\n\n```python\nprint(1)\n```", "run:3")]
    one_step = WarmStartConfig(epochs=1, minibatch=3)
    demos, result = warm_start_policy(
        make_policy(), [task], demonstrations=2, pools=pool, extra=extra, config=one_step
    )
    assert [d.source for d in demos] == ["grammar", "grammar", "run:3"]
    assert [d.prompt.kind for d in demos] == ["solve", "improve", "solve"]
    assert (result.demonstrations, result.steps) == (3, 1)


def test_gradient_checkpointing_takes_the_same_steps_and_leaves_the_model_in_eval_mode(short_demos):
    plain, checkpointed = make_policy(), make_policy()
    fine_tune(plain, short_demos, FAST)
    fine_tune(checkpointed, short_demos, dataclasses.replace(FAST, gradient_checkpointing=True))
    for name, value in weights(plain, lora=True).items():
        torch.testing.assert_close(weights(checkpointed, lora=True)[name], value, rtol=1e-4, atol=1e-5)
    assert not checkpointed.model.training
    assert not checkpointed.model.get_base_model().is_gradient_checkpointing
