"""The paper's instrumenter in training: an Executor wrapper that has the frozen LM mark up each program
before it is dispatched (DESIGN.md §4).

The instrumenting LM lives where the policy is (the run's supervisor); the program runs where the executor
sends it (a thread of this process, or a Celery sandbox worker on another machine). So the work is split in
two: here, before the inner executor sees a job, `rl_core.instrument.lm_markup` asks the LM for the program
with marker calls and the job carries that text (`Job.lm_markup`); where the program runs,
`rl_core.instrument.accept_lm_markup` keeps it only if the original program passes the forgery guard, the
markup without its marker calls has exactly the original's AST, and each marker follows an event of its
stage (then the events it points at are wrapped as the rules wrap them), and otherwise runs the AST rules'
markers (instrumentation ``"lm-fallback"``). The nonce is chosen there, never here, so the markup cannot
print it.

Every submit asks the LM again, including the loop's re-dispatch of in-flight attempts after a resume: the
loop's checkpoints hold the plain jobs, and a greedy LM writes the same markup again.
Costs: one greedy decode (up to twice the policy's `max_new_tokens`) per attempt, in the thread that calls
`submit` (the loop's), one at a time.
The LM and the policy share one model whose adapters the LM's decode switches off: `generate_frozen` holds
the policy's weights lock meanwhile, so a draw in the background sampler's thread waits and never samples
the base weights (tests/rl_core/test_lm_policy.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from rl_core.executors import Executor, Finished, Job
from rl_core.instrument import lm_markup
from rl_core.responses import parse_response

Generate = Callable[[str], str]
"""prompt -> completion of the frozen LM (rl_core.policies.lm.policy.LMPolicy.generate_frozen)."""


def with_lm_markup(job: Job, generate: Generate) -> Job:
    """`job` carrying the LM's markup of its program ("" when the LM wrote none, or the response holds no
    single Python block: such a response runs nothing anyway)."""
    code = parse_response(job.sample.response).code
    return replace(job, lm_markup=lm_markup(code, generate) if code is not None else "")


class LMInstrumentingExecutor:
    """An Executor that attaches the frozen LM's markup to every job, then hands it to `inner`.

    Args:
        inner: the executor that runs the attempts (LocalExecutor, CeleryExecutor, ...).
        generate: the frozen LM, prompt -> completion.
    Everything but `submit` is `inner`'s, attributes included (`state_dict`, `timings`, `busy_s`, ...).
    """

    def __init__(self, inner: Executor, generate: Generate) -> None:
        self.inner = inner
        self.generate = generate
        self.capacity = inner.capacity

    def submit(self, job: Job) -> None:
        self.inner.submit(with_lm_markup(job, self.generate))

    def wait(self, timeout_s: float | None) -> list[Finished]:
        return self.inner.wait(timeout_s)

    def cancel(self, attempt_id: str) -> None:
        self.inner.cancel(attempt_id)

    def now(self) -> float:
        return self.inner.now()

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (unpickling, copying): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)
