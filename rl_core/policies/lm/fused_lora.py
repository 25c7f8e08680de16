"""LoRA in one matrix product with its base weight, for the learner's forward and backward passes.

peft's LoRA linear layer computes y = x Wᵀ + s (x Aᵀ) Bᵀ: the base product, two thin products of rank r, a
scaling and an addition, each a pass over the (T, out) activations; backward does as much again. Here the
same y is x (W + s B A)ᵀ, one product with the merged weight (B A costs out · r · in, nothing beside the
T tokens), and backward needs one product for the input's gradient, with the merged weight recomputed, and
thin ones for A and B:

    ∂L/∂x = g (W + s B A),   ∂L/∂A = s (g B)ᵀ x,   ∂L/∂B = s gᵀ (x Aᵀ)     (g = ∂L/∂y, (T, out))

Same function, same gradients (float rounding aside: tests/rl_core/policies/test_fused_lora.py). Measured
on 2 cores of an AMD EPYC without AVX-512, float32 (docs/benchmarks.md, "Where an LM update's time goes"):
whole updates of 4 samples took 14.10 s per sample against peft's 16.58 (15 % less; 4 alternated pairs,
paired t = 5.4, df = 3, one-sided p = 0.006).

Only plain LoRA layers are fused: one active adapter, no dropout, no DoRA, no LoRA bias, a base
`nn.Linear` stored (out, in). Any other layer, and any layer while its adapters are disabled or merged (the
KL reference, the frozen LM, peft's merge), runs peft's own forward.
"""

from __future__ import annotations

from typing import Any

import torch


class FusedLoRAProduct(torch.autograd.Function):
    """y = x (weight + scaling · b a)ᵀ with gradients for x, a and b (the base `weight` is frozen)."""

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, weight: torch.Tensor, a: torch.Tensor, b: torch.Tensor, scaling: float
    ) -> torch.Tensor:
        ctx.save_for_backward(x, weight, a, b)
        ctx.scaling = scaling
        return x @ torch.addmm(weight, b, a, alpha=scaling).T

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        x, weight, a, b = ctx.saved_tensors
        scaling, dtype = ctx.scaling, grad.dtype  # under autocast the product ran in bf16, and so does this
        x2, g2 = x.reshape(-1, x.shape[-1]).to(dtype), grad.reshape(-1, grad.shape[-1])
        grad_x = None
        if ctx.needs_input_grad[0]:
            merged = torch.addmm(weight, b, a, alpha=scaling).to(dtype)
            grad_x = (grad @ merged).to(x.dtype)
        grad_a = scaling * ((g2 @ b.to(dtype)).T @ x2)
        grad_b = scaling * (g2.T @ (x2 @ a.to(dtype).T))
        return grad_x, None, grad_a.to(a.dtype), grad_b.to(b.dtype), None


def fuse_lora(model: Any) -> int:
    """Make every plain LoRA linear layer of the peft `model` run as `FusedLoRAProduct` (module docstring);
    returns how many were. The layers keep their parameters and state dict: only their forward changes."""
    from peft.tuners.lora.layer import Linear

    fused = 0
    for module in model.modules():
        if isinstance(module, Linear) and _plain(module):
            module.forward = _fused_forward.__get__(module)  # type: ignore[method-assign]
            fused += 1
    return fused


def _plain(layer: Any) -> bool:
    """Whether `layer` (a peft LoRA Linear) is one the fused product computes exactly."""
    names = layer.active_adapters
    name = names[0] if len(names) == 1 else None
    return (
        name is not None
        and type(layer.base_layer) is torch.nn.Linear
        and layer.base_layer.bias is None
        and not layer.fan_in_fan_out
        and name not in getattr(layer, "lora_variant", {})  # DoRA and other variants
        and isinstance(layer.lora_dropout[name], torch.nn.Identity)
        and layer.lora_A[name].bias is None
        and layer.lora_B[name].bias is None
    )


def _fused_forward(self: Any, x: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
    """The fused product, or peft's own forward where the adapters are off or merged, or where arguments
    beside the input ask for more (peft's `adapter_names` for a batch of mixed adapters)."""
    if self.disable_adapters or self.merged or args or kwargs:
        return type(self).forward(self, x, *args, **kwargs)
    name = self.active_adapters[0]
    return FusedLoRAProduct.apply(  # type: ignore[no-untyped-call]
        x, self.base_layer.weight, self.lora_A[name].weight, self.lora_B[name].weight, self.scaling[name]
    )
