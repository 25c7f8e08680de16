"""Sampling an LMPolicy with vLLM on a GPU (the optional `gpu` extra; imported only when used)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rl_core.policies.lm import LMPolicy, LMPolicyConfig


class VLLMSampler:
    """Sampling with vLLM on a GPU. The policy's adapter is pushed as a new LoRARequest whenever the policy
    version differs from the last push. Untested here (no GPU in CI); see the `gpu` tests."""

    def __init__(self, model_path: Path | str | None, config: LMPolicyConfig) -> None:
        from vllm import LLM

        self.config = config
        self.llm = LLM(
            model=str(model_path),
            enable_lora=True,
            max_lora_rank=max(config.lora_r, 8),
            dtype="bfloat16",
            gpu_memory_utilization=config.vllm_gpu_memory_utilization,
            max_model_len=config.max_prompt_tokens + config.max_new_tokens,
        )
        self.adapters = Path(tempfile.mkdtemp(prefix="practicum-lora-"))
        self.pushed_version: int | None = None
        self.pushes = 0
        self.request: Any = None

    def push(self, policy: LMPolicy) -> None:
        """Save the current adapter and make it the one vLLM samples with (only when the version moved)."""
        from vllm.lora.request import LoRARequest

        if self.pushed_version == policy.version:
            return
        self.pushes += 1
        folder = policy.save_adapter(self.adapters / f"push-{self.pushes}")
        if self.request is not None:
            shutil.rmtree(self.request.lora_path, ignore_errors=True)
        self.request = LoRARequest(f"practicum-{self.pushes}", self.pushes, str(folder))
        self.pushed_version = policy.version

    def generate(self, policy: LMPolicy, prompt_ids: list[list[int]], seed: int) -> list[list[int]]:
        """Sampled ids after each prompt (cut afterwards by `trim_response`)."""
        from vllm import SamplingParams

        self.push(policy)
        params = [
            SamplingParams(
                temperature=self.config.temperature,
                top_p=self.config.top_p,
                max_tokens=self.config.max_new_tokens,
                seed=seed + index,
                stop_token_ids=sorted(policy.eos_ids),
            )
            for index in range(len(prompt_ids))
        ]
        prompts = [{"prompt_token_ids": ids} for ids in prompt_ids]
        outputs = self.llm.generate(prompts, params, lora_request=self.request, use_tqdm=False)
        return [list(output.outputs[0].token_ids) for output in outputs]
