"""The CTranslate2 sampler on a tiny Llama built in code: it samples the policy's newest weights (re-converted
once per version), stops rows where it is told, and the samples keep π's log-probs; and which engine a
policy gets."""

from __future__ import annotations

import importlib.util
import re

import pytest
import torch

from rl_core.policies import lm_samplers
from rl_core.policies.lm.policy import LMPolicy
from rl_core.policies.lm.config import LMPolicyConfig
from rl_core.policies.lm.engines import choose_engine
from rl_core.policy import Prompt
from rl_core.testing import TINY_TASK, tiny_llama, tiny_tokenizer

needs_ct2 = pytest.mark.skipif(importlib.util.find_spec("ctranslate2") is None, reason="needs ctranslate2")

TASK = TINY_TASK
SOLVE = Prompt(task=TASK, kind="solve")
TOKENIZER = tiny_tokenizer()
LLAMA = tiny_llama(TOKENIZER)


def make_policy(**overrides) -> LMPolicy:
    settings = {"max_new_tokens": 12, "lora_r": 4, "lora_alpha": 8, "device": "cpu", "autocast": "off"}
    config = LMPolicyConfig(**(settings | {"sampler": "ctranslate2"} | overrides))
    return LMPolicy(config, model=tiny_llama(TOKENIZER, max_positions=4096), tokenizer=TOKENIZER)


def perturb_adapters(policy: LMPolicy) -> None:
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.5)


def draw(policy: LMPolicy, count: int = 2):
    return policy.sample([SOLVE] * count, generator=torch.Generator().manual_seed(0))


def ct2_logprobs(policy: LMPolicy, prompt_ids: list[int], response_ids: list[int]) -> torch.Tensor:
    """The CTranslate2 copy's log-probs (temperature 1) of `response_ids` after `prompt_ids`."""
    [row] = policy._engine.sampler.logprobs([prompt_ids], [response_ids], TOKENIZER)
    return torch.tensor(row)


def torch_logprobs(policy: LMPolicy, prompt_ids: list[int], response_ids: list[int]) -> torch.Tensor:
    """The adapted model's log-probs (temperature 1) of `response_ids` after `prompt_ids`."""
    ids = torch.tensor([prompt_ids + response_ids])
    with torch.no_grad():
        logits = policy.model(input_ids=ids).logits[0, len(prompt_ids) - 1 : -1]
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, ids[0, len(prompt_ids) :, None]).squeeze(-1)


@needs_ct2
def test_samples_drawn_by_ctranslate2_record_the_policys_own_log_probs():
    policy = make_policy()
    samples = draw(policy)
    scored = policy.score(samples)
    for row, sample in enumerate(samples):
        assert sample.info["sampler"] == "ctranslate2" and 1 <= len(sample.logprobs) <= 12
        torch.testing.assert_close(scored.logprobs[row, scored.mask[row]], torch.tensor(sample.logprobs))


@needs_ct2
def test_the_copy_is_reconverted_once_per_version_and_after_a_load():
    policy = make_policy()
    draw(policy)
    draw(policy)
    perturb_adapters(policy)
    policy.version += 1
    draw(policy)
    policy.load_state_dict(policy.state_dict())
    draw(policy)
    sampler = policy._engine.sampler
    assert sampler.syncs == 3 and [folder.name for folder in sampler.root.iterdir()] == ["ct2-3"]
    sampler.close()
    assert not sampler.root.exists()


@needs_ct2
def test_the_copy_samples_the_updated_weights_not_the_base():
    """After an update, the copy is converted again and scores tokens as the adapted model does (a float32
    copy: equal up to float rounding), no longer as the base model (adapters off) does."""
    policy = make_policy(ct2_compute_type="float32")
    draw(policy, 1)  # converts the base (adapters start at zero)
    perturb_adapters(policy)
    policy.version += 1
    [sample] = draw(policy, 1)
    prompt_ids, response_ids = policy.prompt_ids(SOLVE), list(sample.action.token_ids)
    copied = ct2_logprobs(policy, prompt_ids, response_ids)
    torch.testing.assert_close(copied, torch_logprobs(policy, prompt_ids, response_ids), atol=1e-3, rtol=1e-3)
    with policy.model.disable_adapter():
        base = torch_logprobs(policy, prompt_ids, response_ids)
    assert (copied - base).abs().max() > 1e-2


@needs_ct2
def test_a_row_stops_when_its_response_is_done_and_the_others_go_on():
    policy = make_policy(max_new_tokens=10)
    policy._engine.sync_if_moved()
    prompt_ids = [policy.prompt_ids(SOLVE)] * 3
    rows = policy._engine.sampler.generate(prompt_ids, 0, TOKENIZER, done=lambda ids: len(ids) == 4)
    eos = policy.eos_ids
    assert all(len(row) == 4 or row[-1] in eos for row in rows)  # stopped by `done`, or ended earlier
    rows = policy._engine.sampler.generate(prompt_ids, 0, TOKENIZER, done=lambda ids: False)
    assert all(len(row) == 10 or row[-1] in eos for row in rows)


def test_an_engine_that_cannot_run_here_is_an_error_naming_what_is_missing():
    missing = "The ctranslate2 engine (LMPolicyConfig.sampler, a run's lm_engine) needs CTranslate2"
    with pytest.raises(ValueError, match=re.escape(missing)):
        choose_engine("ctranslate2", torch.device("cuda"), None, LLAMA)
    with pytest.raises(ValueError, match=re.escape("vLLM installed (pip install '.[gpu]'), a cuda device")):
        choose_engine("vllm", torch.device("cpu"), None, LLAMA)
    unknown = "The engine 'ct2' is not auto, transformers, continuous, vllm or ctranslate2"
    with pytest.raises(ValueError, match=re.escape(unknown)):
        choose_engine("ct2", torch.device("cpu"), None, LLAMA)


def test_auto_on_a_cpu_takes_the_configured_engine_when_it_is_installed(monkeypatch):
    monkeypatch.setattr(lm_samplers, "installed", lambda module: module == "ctranslate2")
    monkeypatch.setattr(lm_samplers, "CPU_AUTO_ENGINE", "ctranslate2")
    assert choose_engine("auto", torch.device("cpu"), None, LLAMA) == "ctranslate2"
    monkeypatch.setattr(lm_samplers, "installed", lambda module: False)
    assert choose_engine("auto", torch.device("cpu"), None, LLAMA) == "transformers"
