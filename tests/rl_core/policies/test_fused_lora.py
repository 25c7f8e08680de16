"""The fused LoRA product (rl_core.policies.lm.fused_lora): peft's function and gradients, one product."""

from __future__ import annotations

import peft
import pytest
import torch

from rl_core.policies.lm.config import LMPolicyConfig
from rl_core.policies.lm.fused_lora import FusedLoRAProduct, fuse_lora
from rl_core.policies.lm.policy import LMPolicy
from rl_core.policy import Prompt, Sample, TaskInfo
from rl_core.testing import tiny_llama, tiny_tokenizer

TOKENIZER = tiny_tokenizer()
TASK = TaskInfo("tiny", "Predict y.", "rmse", False, "id", ("y",), 60.0)
RESPONSE = "Plan: fit a line.\n\n```python\nprint(1)\n```\n"


def policy(*, fused: bool) -> LMPolicy:
    config = LMPolicyConfig(
        lora_r=4, lora_alpha=8, device="cpu", sampler="transformers", autocast="off", fused_lora=fused
    )
    made = LMPolicy(config, model=tiny_llama(TOKENIZER, seed=0, hidden=32), tokenizer=TOKENIZER)
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():  # B starts at 0: move both matrices, so both gradients are checked
        for parameter in made.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.3)
    return made


def scores_and_gradients(made: LMPolicy) -> tuple[torch.Tensor, list[torch.Tensor]]:
    samples = [
        Sample(Prompt(TASK, "solve"), RESPONSE, (), 0),
        Sample(Prompt(TASK, "solve"), "x = 1\n", (), 0),
    ]
    scored = made.score(samples)
    (scored.logprobs.sum() + scored.entropy.sum()).backward()
    return scored.logprobs.detach(), [p.grad.clone() for p in made.parameters()]


def test_the_product_has_the_gradients_of_x_a_and_b():
    x = torch.randn(2, 5, 6, dtype=torch.double, requires_grad=True)
    weight = torch.randn(7, 6, dtype=torch.double)
    a = torch.randn(3, 6, dtype=torch.double, requires_grad=True)
    b = torch.randn(7, 3, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, a, b: FusedLoRAProduct.apply(x, weight, a, b, 2.0), (x, a, b))
    expected = x @ weight.T + 2.0 * (x @ a.T) @ b.T
    torch.testing.assert_close(FusedLoRAProduct.apply(x, weight, a, b, 2.0), expected)


def test_a_fused_policy_scores_and_learns_as_peft_does(monkeypatch):
    fused, stock = policy(fused=True), policy(fused=False)
    calls, product = [], FusedLoRAProduct.apply
    monkeypatch.setattr(FusedLoRAProduct, "apply", lambda *args: calls.append(1) or product(*args))
    logprobs, gradients = scores_and_gradients(fused)
    assert len(calls) == 7 * len(fused.model.get_base_model().model.layers)  # every linear of every block
    expected_logprobs, expected_gradients = scores_and_gradients(stock)
    torch.testing.assert_close(logprobs, expected_logprobs, atol=1e-5, rtol=1e-4)
    for got, expected in zip(gradients, expected_gradients, strict=True):  # float32, summed in another order
        assert float((got - expected).norm() / expected.norm()) < 1e-4


def test_every_lora_layer_of_the_default_config_is_fused():
    made = policy(fused=False)
    layers = [m for m in made.model.modules() if isinstance(m, peft.tuners.lora.layer.Linear)]
    assert fuse_lora(made.model) == len(layers) > 0


def test_with_the_adapters_disabled_a_fused_policy_is_the_base_model():
    made, ids = policy(fused=True), torch.tensor([[1, 5, 9, 12]])
    with torch.no_grad():
        on = made.model(input_ids=ids).logits
        with made.model.disable_adapter():
            off = made.model(input_ids=ids).logits
        base = tiny_llama(TOKENIZER, seed=0, hidden=32)(input_ids=ids).logits  # the same base, never adapted
    assert not torch.allclose(on, base)  # the adapters change the output, so the check below means something
    torch.testing.assert_close(off, base)


def test_a_layer_with_dropout_keeps_peft_forward():
    model = tiny_llama(TOKENIZER, seed=0, hidden=32)
    config = peft.LoraConfig(
        r=4, lora_alpha=8, lora_dropout=0.1, target_modules="all-linear", task_type="CAUSAL_LM"
    )
    assert fuse_lora(peft.get_peft_model(model, config)) == 0


@pytest.mark.parametrize("device_type", ["cpu"])
def test_under_bf16_autocast_the_backward_runs_and_returns_float32_gradients(device_type):
    x = torch.randn(4, 6, requires_grad=True)
    weight, a, b = (
        torch.randn(7, 6),
        torch.randn(3, 6, requires_grad=True),
        torch.randn(7, 3, requires_grad=True),
    )
    with torch.autocast(device_type, dtype=torch.bfloat16):
        y = FusedLoRAProduct.apply(x, weight, a, b, 2.0)
    assert y.dtype == torch.bfloat16
    y.float().sum().backward()
    assert (x.grad.dtype, a.grad.dtype, b.grad.dtype) == (torch.float32,) * 3
    expected = (torch.ones(4, 7) @ (weight + 2.0 * b @ a)).detach()
    torch.testing.assert_close(x.grad, expected, atol=0.2, rtol=0.05)
