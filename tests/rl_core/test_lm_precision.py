"""LMPolicy's bf16 autocast (rl_core.policies.lm.precision) on a tiny Llama built in code.

Tolerances. bfloat16 keeps 8 bits of mantissa, so each product in the forward pass is off by up to
2^-8 ≈ 4e-3 relative, and errors through a few layers and the backward pass reach about 1e-2. Measured here
on this tiny Llama (widths 32 and 64, three seeds): the mean token log-prob (the loss) differs from float32 by
at most 1e-4 relative (token errors average out), the adapter gradient by 1.1e-2 to 2.2e-2 in relative L2
norm. The tests allow 1e-2 on the loss and 5e-2 on the gradient: a factor 2 over the worst seed, and
still far below what a missing or misapplied autocast (an error of order 1) would give.
"""

from __future__ import annotations

import copy

import pytest
import torch

from rl_core.policies.lm import precision as lm_precision
from rl_core.policies.lm.config import LMPolicyConfig
from rl_core.policies.lm.policy import LMPolicy
from rl_core.policies.lm.precision import autocast_dtype
from rl_core.policy import PreviousSolution, Prompt, Sample
from rl_core.testing import TINY_TASK, tiny_llama, tiny_tokenizer

LOSS_RTOL = 1e-2
GRADIENT_RELATIVE_ERROR = 5e-2

TOKENIZER = tiny_tokenizer()
TASK = TINY_TASK
SOLVE = Prompt(task=TASK, kind="solve")
IMPROVE = Prompt(task=TASK, kind="improve", previous=PreviousSolution("print(1)\n", "ok", 0.5))


def tiny_model(seed: int = 0, hidden: int = 32):
    return tiny_llama(TOKENIZER, seed=seed, hidden=hidden, max_positions=4096)


def policy_with(base, autocast: str, **overrides) -> LMPolicy:
    """An LMPolicy on a copy of `base` with non-zero adapters (fresh ones have lora_B = 0, which would
    leave lora_A without gradient), the same for every `autocast` setting."""
    settings = {"max_new_tokens": 40, "lora_r": 4, "lora_alpha": 8, "device": "cpu", "autocast": autocast}
    config = LMPolicyConfig(**(settings | {"sampler": "transformers"} | overrides))
    policy = LMPolicy(config, model=copy.deepcopy(base), tokenizer=TOKENIZER)
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.1)
    return policy


def draw(policy: LMPolicy, prompts: list[Prompt], seed: int = 0) -> list[Sample]:
    return policy.sample(prompts, generator=torch.Generator().manual_seed(seed))


def loss_and_gradient(policy: LMPolicy, samples: list[Sample]) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean token log-prob's negative (the warm start's loss) and its gradient over all adapters."""
    scored = policy.score(samples)
    loss = -(scored.logprobs * scored.mask).sum() / scored.mask.sum()
    loss.backward()
    return loss.detach(), torch.cat([p.grad.flatten() for p in policy.parameters()])


def plain_log_probs(policy: LMPolicy, prompt: list[int], response: list[int]) -> torch.Tensor:
    """(T,) log-probs of one unpadded response by a forward pass written out here, with no autocast."""
    ids = torch.tensor([prompt + response])
    logits = policy.model(
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        position_ids=torch.arange(ids.shape[1])[None, :],
        logits_to_keep=len(response) + 1,
        use_cache=False,
    ).logits[0, :-1]
    logp = torch.log_softmax(logits.float() / policy.config.temperature, dim=-1)
    return logp.gather(-1, torch.tensor(response)[:, None]).squeeze(-1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_loss_and_adapter_gradients_under_bf16_autocast_agree_with_float32(seed):
    base = tiny_model(seed=seed, hidden=64)
    samples = draw(policy_with(base, "off"), [SOLVE, IMPROVE], seed=seed)
    loss_32, gradient_32 = loss_and_gradient(policy_with(base, "off"), samples)
    loss_16, gradient_16 = loss_and_gradient(policy_with(base, "bfloat16"), samples)
    assert not torch.equal(gradient_16, gradient_32)  # autocast did change the arithmetic
    torch.testing.assert_close(loss_16, loss_32, rtol=LOSS_RTOL, atol=0.0)
    assert float((gradient_16 - gradient_32).norm() / gradient_32.norm()) < GRADIENT_RELATIVE_ERROR


def test_under_bf16_autocast_weights_gradients_and_log_probs_stay_float32():
    policy = policy_with(tiny_model(), "bfloat16")
    scored = policy.score(draw(policy, [SOLVE]))
    (-scored.logprobs.sum()).backward()
    assert scored.logprobs.dtype == scored.entropy.dtype == torch.float32
    assert {p.dtype for p in policy.model.parameters()} == {torch.float32}
    assert {p.grad.dtype for p in policy.parameters()} == {torch.float32}


def test_off_gives_log_probs_and_gradients_bit_identical_to_a_plain_float32_forward():
    policy = policy_with(tiny_model(), "off", checkpoint_activations=False, reference=False)
    sample = draw(policy, [SOLVE])[0]
    prompt, response = policy.prompt_ids(SOLVE), list(sample.action.token_ids)
    scored = policy.score([sample])
    scored.logprobs.sum().backward()
    gradient_policy = [p.grad.clone() for p in policy.parameters()]
    policy.model.zero_grad()
    expected = plain_log_probs(policy, prompt, response)
    expected.sum().backward()
    assert torch.equal(scored.logprobs[0], expected.detach())
    assert all(torch.equal(a, p.grad) for a, p in zip(gradient_policy, policy.parameters(), strict=True))


def autocast_states_of_scoring_passes(setting: str) -> set[bool]:
    """Whether autocast was on, at each forward pass of sampling's scoring and of `score`."""
    policy = policy_with(tiny_model(), setting)
    seen: list[bool] = []
    policy.model.register_forward_pre_hook(lambda *_: seen.append(torch.is_autocast_enabled("cpu")))
    policy.score(draw(policy, [SOLVE]))
    return set(seen)


def test_bf16_autocast_runs_every_scoring_pass_under_autocast_and_off_runs_none():
    assert autocast_states_of_scoring_passes("bfloat16") == {True}
    assert autocast_states_of_scoring_passes("off") == {False}


def test_old_log_probs_equal_score_log_probs_under_bf16_autocast():
    """Both go through the same autocast forward, so at unchanged parameters PPO's ratio is 1."""
    policy = policy_with(tiny_model(), "bfloat16")
    samples = draw(policy, [SOLVE, IMPROVE])
    scored = policy.score(samples)
    for row, sample in enumerate(samples):
        torch.testing.assert_close(scored.logprobs[row, scored.mask[row]], torch.tensor(sample.logprobs))


def test_auto_autocasts_on_cuda_with_bf16_support(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    assert autocast_dtype("auto", torch.device("cuda")) is torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: False)
    assert autocast_dtype("auto", torch.device("cuda")) is None


def test_auto_autocasts_on_a_cpu_only_with_native_bf16(monkeypatch):
    monkeypatch.setattr(lm_precision, "cpu_supports_bf16", lambda: True)
    assert autocast_dtype("auto", torch.device("cpu")) is torch.bfloat16
    monkeypatch.setattr(lm_precision, "cpu_supports_bf16", lambda: False)
    assert autocast_dtype("auto", torch.device("cpu")) is None


@pytest.mark.parametrize("native", [True, False])
def test_vllms_auto_dtype_is_bf16_only_where_the_hardware_has_it(monkeypatch, native):
    monkeypatch.setattr(lm_precision, "cpu_supports_bf16", lambda: native)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: native)
    expected = "bfloat16" if native else "float32"
    assert lm_precision.sampler_dtype("auto", torch.device("cpu")) == expected
    assert lm_precision.sampler_dtype("auto", torch.device("cuda")) == expected
    assert lm_precision.sampler_dtype("bfloat16", torch.device("cpu")) == "bfloat16", "a set dtype stays"


@pytest.mark.parametrize(("native", "expected"), [(True, "bfloat16"), (False, "float32")])
def test_the_vllm_settings_carry_the_resolved_dtype(monkeypatch, native, expected):
    from rl_core.policies.lm.engines import vllm_settings

    monkeypatch.setattr(lm_precision, "cpu_supports_bf16", lambda: native)
    config = LMPolicyConfig(model="unused", device="cpu")
    assert vllm_settings(config, "unused", {0}, 1, torch.device("cpu")).dtype == expected
