"""Sampling an LMPolicy with CTranslate2 on a CPU (the optional `cpu-engines` extra; imported only when used).

CTranslate2 decodes from its own copy of the model, converted from the adapted policy: `CT2Sampler.sync`
merges the LoRA adapters into a copy of the model, saves it and converts it (int8 weights by default); the
policy calls it whenever its version moved since the last sync, so every sample is drawn from the newest
weights. `CT2Sampler.generate` samples over the whole vocabulary at the policy's temperature (and top-p),
stopping a row at an end token or, through CTranslate2's per-token callback, as soon as its text holds a
closed Python block (`lm_stopping.closes_code_block`), as transformers' stopping criterion does.

The int8 copy is an approximation of π: the recorded log-probs stay π's (the policy re-scores every sample
in float32/bf16), so samples come from a distribution a quantisation step away from the one PPO's ratio
assumes, as with vLLM's bf16 kernels. CTranslate2 forwards a batch's prompts together only up to the
shortest one and feeds the rest token by token, so prompts of very different lengths cost extra steps.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_core.policies.lm.weights import save_merged_model


@dataclass(frozen=True)
class CT2Settings:
    """What the sampler needs of an LMPolicyConfig, and the tokens that end a response."""

    temperature: float
    top_p: float
    max_new_tokens: int
    stop_token_ids: tuple[int, ...]
    compute_type: str = "int8"
    """CTranslate2's weight type (LMPolicyConfig.ct2_compute_type)."""
    threads: int = 0
    """Threads per generation call; 0 is CTranslate2's default (the cores it sees)."""


class CT2Sampler:
    """Sampling with CTranslate2 from a converted copy of the adapted model (rebuilt by `sync`)."""

    def __init__(self, settings: CT2Settings) -> None:
        import ctranslate2  # noqa: F401 - fail here, where the policy chose this sampler, if it is missing

        self.settings = settings
        self.root = Path(tempfile.mkdtemp(prefix="practicum-ct2-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.root, ignore_errors=True)  # at exit too
        self.generator: Any = None
        self.syncs = 0

    def sync(self, model: Any, tokenizer: Any) -> None:
        """Convert `model` (a peft model: its adapters are merged into a copy) and sample from it from now on;
        the previous conversion's folder is removed."""
        import ctranslate2

        self.syncs += 1
        source, target = self.root / f"hf-{self.syncs}", self.root / f"ct2-{self.syncs}"
        save_merged_model(model, tokenizer, source)
        converter = ctranslate2.converters.TransformersConverter(str(source))
        converter.convert(str(target), quantization=self.settings.compute_type, force=True)
        shutil.rmtree(source, ignore_errors=True)
        self.generator = ctranslate2.Generator(
            str(target), device="cpu", compute_type=self.settings.compute_type,
            intra_threads=self.settings.threads,
        )  # fmt: skip
        shutil.rmtree(self.root / f"ct2-{self.syncs - 1}", ignore_errors=True)

    def generate(
        self, prompt_ids: list[list[int]], seed: int, tokenizer: Any, *, done: Callable[[list[int]], bool]
    ) -> list[list[int]]:
        """Sampled ids after each prompt, each row stopped at an end token (kept) or once `done(ids so far)`
        holds (`done` sees a row's ids after each new token)."""
        import ctranslate2

        if self.generator is None:
            raise RuntimeError("CT2Sampler.generate before the first sync.")
        settings = self.settings
        rows: list[list[int]] = [[] for _ in prompt_ids]

        def step(result: Any) -> bool:
            rows[result.batch_id].append(int(result.token_id))
            return done(rows[result.batch_id])

        ctranslate2.set_random_seed(seed)
        self.generator.generate_batch(
            [tokenizer.convert_ids_to_tokens(ids) for ids in prompt_ids],
            max_length=settings.max_new_tokens, sampling_topk=0, sampling_topp=settings.top_p,
            sampling_temperature=settings.temperature, end_token=sorted(settings.stop_token_ids),
            return_end_token=True, include_prompt_in_result=False, callback=step,
        )  # fmt: skip
        return rows

    def logprobs(
        self, prompt_ids: list[list[int]], response_ids: list[list[int]], tokenizer: Any
    ) -> list[list[float]]:
        """Each response's per-token log-probs under the converted copy at temperature 1 (CTranslate2 scores
        only there): how far the copy is from the policy it was converted from."""
        if self.generator is None:
            raise RuntimeError("CT2Sampler.logprobs before the first sync.")
        pairs = zip(prompt_ids, response_ids, strict=True)
        tokens = [tokenizer.convert_ids_to_tokens(prompt + response) for prompt, response in pairs]
        results = self.generator.score_batch(tokens, max_input_length=0)
        return [list(result.log_probs[len(p) - 1 :]) for result, p in zip(results, prompt_ids, strict=True)]

    def close(self) -> None:
        """Remove the converted copy now (otherwise when the sampler is collected, or at exit)."""
        self._cleanup()
