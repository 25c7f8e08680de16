"""Mixed precision for LMPolicy's scoring passes (bf16 autocast over float32 weights), and the dtype of
vLLM's copy of the weights (`sampler_dtype`): bf16 only where the hardware has it.

Under ``torch.autocast(dtype=torch.bfloat16)`` the matrix products of a forward pass (linear layers,
attention) run in bfloat16 while every parameter stays float32: the LoRA adapters, their gradients and
Adam's state are float32 (the "master weights"), and so are the frozen base weights, cast to bfloat16 on
the fly by each product. The backward pass of an autocast forward runs each product in the dtype its
forward used. bfloat16 keeps float32's range (no loss scaling is needed) with 8 bits of mantissa, so a
product's relative error is about 2^-8 ≈ 4e-3 and a loss or a gradient differs from float32 by about 1e-2.

Over a model already held in bfloat16 (LMPolicyConfig.dtype, "auto" on cuda) the base runs in bfloat16
with or without autocast; autocast then only moves the LoRA products (float32 adapters, as peft keeps them)
to bfloat16.
Not done here: float16 autocast (it needs loss scaling), and autocast of sampling (``generate``).
"""

from __future__ import annotations

import contextlib
from typing import Literal

import torch

Autocast = Literal["auto", "off", "bfloat16"]
SamplerDtype = Literal["auto", "bfloat16", "float32"]


def cpu_supports_bf16() -> bool:
    """Whether this CPU has native bfloat16 dot products (AVX512-BF16 or AMX), as torch detects them."""
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def native_bf16(device: torch.device) -> bool:
    """Whether `device` computes in bfloat16 natively: a cuda device with bf16
    (`torch.cuda.is_bf16_supported`), a CPU with AVX512-BF16 or AMX (`cpu_supports_bf16`); elsewhere it is
    emulated, and slower than float32."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    return device.type == "cpu" and cpu_supports_bf16()


def autocast_dtype(setting: Autocast, device: torch.device) -> torch.dtype | None:
    """The autocast dtype for scoring passes on `device`, or None for none.

    "off": None. "bfloat16": bfloat16 on any device (emulated, and slower, on hardware without it).
    "auto": bfloat16 where the device has it natively (`native_bf16`), which is where it was measured faster
    (see LMPolicyConfig.autocast); None elsewhere.

    >>> autocast_dtype("off", torch.device("cuda")) is None
    True
    >>> autocast_dtype("bfloat16", torch.device("cpu"))
    torch.bfloat16
    """
    if setting == "off":
        return None
    if setting == "bfloat16":
        return torch.bfloat16
    return torch.bfloat16 if native_bf16(device) else None


def sampler_dtype(setting: SamplerDtype, device: torch.device) -> Literal["bfloat16", "float32"]:
    """The dtype of vLLM's copy of the weights on `device` (LMPolicyConfig.vllm_dtype).

    "auto": bfloat16 where the device has it natively (`native_bf16`), float32 elsewhere, where vLLM emulates
    bf16 slowly. Measured, a lone call of 8 of the embedded LM at 2 threads: on an AMD EPYC with
    AVX512-BF16, bf16 1.5-1.7x faster than float32 (issue 23's table); on an AMD EPYC without AVX-512
    (2026-12-07, 2 calls each), bf16 34.8 and 37.0 tokens/s, float32 67.3 and 66.9 (docs/benchmarks.md
    "vLLM's dtype on a CPU without native bf16").

    >>> sampler_dtype("float32", torch.device("cuda"))
    'float32'
    """
    if setting != "auto":
        return setting
    return "bfloat16" if native_bf16(device) else "float32"


def autocast(dtype: torch.dtype | None, device: torch.device) -> contextlib.AbstractContextManager[object]:
    """A context that runs the forward passes inside it under autocast to `dtype`; nothing when None.

    Wrap only the model call: what follows it (log-softmax, entropy) then runs in float32 on float32 inputs.
    """
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)
