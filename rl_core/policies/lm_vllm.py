"""Sampling an LMPolicy with vLLM on a GPU (the optional `gpu` extra; imported only when used).

The policy drives the sampler through three calls and nothing else: `VLLMSampler.next_adapter_dir` (a
fresh folder for the policy to save its adapter into), `VLLMSampler.use_adapter` (sample with that adapter
from now on) and `VLLMSampler.generate`. The sampler knows nothing of the policy: what it needs is in
`VLLMSettings`, plain values; when to push a new adapter is the policy's decision (rl_core.policies.lm).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class VLLMSettings:
    """What the sampler needs of an LMPolicyConfig, and the tokens that end a response."""

    temperature: float
    top_p: float
    max_new_tokens: int
    max_prompt_tokens: int
    lora_r: int
    gpu_memory_utilization: float
    stop_token_ids: tuple[int, ...]


class VLLMSampler:
    """Sampling with vLLM on a GPU, under the LoRA adapter last given to `use_adapter` (the base model
    before the first). Untested here (no GPU in CI); see the `gpu` tests."""

    def __init__(self, model_path: Path | str, settings: VLLMSettings) -> None:
        from vllm import LLM

        self.settings = settings
        self.llm = LLM(
            model=str(model_path),
            enable_lora=True,
            max_lora_rank=max(settings.lora_r, 8),
            dtype="bfloat16",
            gpu_memory_utilization=settings.gpu_memory_utilization,
            max_model_len=settings.max_prompt_tokens + settings.max_new_tokens,
        )
        self.adapters = Path(tempfile.mkdtemp(prefix="practicum-lora-"))
        self.pushes = 0
        self.request: Any = None

    def next_adapter_dir(self) -> Path:
        """A new folder (not yet created) for the next adapter to be saved into."""
        return self.adapters / f"push-{self.pushes + 1}"

    def use_adapter(self, folder: Path) -> None:
        """Sample with the adapter saved in `folder` (from `next_adapter_dir`) from now on; the previous
        adapter's folder is removed."""
        from vllm.lora.request import LoRARequest

        self.pushes += 1
        if self.request is not None:
            shutil.rmtree(self.request.lora_path, ignore_errors=True)
        self.request = LoRARequest(f"practicum-{self.pushes}", self.pushes, str(folder))

    def generate(self, prompt_ids: list[list[int]], seed: int) -> list[list[int]]:
        """Sampled ids after each prompt, prompt i seeded with `seed` + i (cut afterwards by
        `lm_stopping.trim_response`)."""
        from vllm import SamplingParams

        settings = self.settings
        params = [
            SamplingParams(
                temperature=settings.temperature,
                top_p=settings.top_p,
                max_tokens=settings.max_new_tokens,
                seed=seed + index,
                stop_token_ids=sorted(settings.stop_token_ids),
            )
            for index in range(len(prompt_ids))
        ]
        prompts = [{"prompt_token_ids": ids} for ids in prompt_ids]
        outputs = self.llm.generate(prompts, params, lora_request=self.request, use_tqdm=False)
        return [list(output.outputs[0].token_ids) for output in outputs]
