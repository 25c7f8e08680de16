"""Sharing the cores: a sandboxed program's wall-clock while vLLM decodes beside it, against a quiet machine.

What runs: the embedded SmolLM2-135M in an LMPolicy sampled by vLLM at the thread count an LM run gives it
(rl_core.policies.lm.cores: half the cores), drawing batches of 16 solve prompts in a background thread of
this process, as the background sampler does in a run. The program is a sandboxed attempt's typical start:
it imports numpy, pandas, scikit-learn, LightGBM and XGBoost and fits a 50-tree random forest on 3,000
rows, through rl_core.sandbox.execute at this machine's isolation level. Rounds alternate: one run with the
sampler paused (after its current call has ended), one while a generation call is running; the learner is
idle throughout (what the learner and the sampler cost each other: docs/benchmarks.md, "Threads of the
sampler and the learner").

Reported: the program's median seconds quiet and beside the sampler, their ratio, the sampler's tokens/s
while it shared the machine, its share of the threads and the threads it decoded on (the mean over its
calls, weighted by their seconds: it takes every core while no program runs, rl_core.policies.lm.cores).
Target (issue 23): ratio <= 1.5.

Run: python bench/sampler_share.py [--quick] [--json PATH]   (quick: 4 rounds, full: 10)
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from pathlib import Path

from _common import bench_arguments, machine_info, print_table, target, write_json
from _lm import CACHE_DIR
from lm_engines import TASK
from sandbox_overhead import sandboxed, timed

PROGRAM = """import time
import numpy, pandas, sklearn.ensemble, lightgbm, xgboost
from sklearn.datasets import make_classification
X, y = make_classification(3000, 20, random_state=0)
sklearn.ensemble.RandomForestClassifier(50, n_jobs=1, random_state=0).fit(X, y)
"""


class Decoder:
    """vLLM drawing batches of 16 in a thread while `running` is set; `idle` is set between calls."""

    def __init__(self) -> None:
        from rl_core.policies.lm.config import LMPolicyConfig
        from rl_core.policies.lm.policy import LMPolicy

        config = LMPolicyConfig(cache_dir=str(CACHE_DIR / "models"), device="cpu", temperature=0.7,
                                max_new_tokens=512, reference=False, seed=0)  # fmt: skip
        self.policy = LMPolicy(config)
        self.running, self.idle, self.stop = threading.Event(), threading.Event(), False
        self.tokens, self.busy_s, self.thread_s = 0, 0.0, 0.0
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self) -> None:
        import torch

        from rl_core.policy import Prompt

        generator = torch.Generator().manual_seed(0)
        while not self.stop:
            self.idle.set()
            self.running.wait()
            if self.stop:
                return
            self.idle.clear()
            started = time.perf_counter()
            samples = self.policy.sample([Prompt(TASK, "solve")] * 16, generator=generator)
            seconds = time.perf_counter() - started
            self.busy_s += seconds
            self.thread_s += seconds * float(samples[0].info["sampler_threads"])
            self.tokens += sum(int(s.info["new_tokens"]) for s in samples)

    def pause(self) -> None:
        self.running.clear()
        self.idle.wait()

    def resume(self) -> None:
        self.running.set()
        while self.idle.is_set():  # a generation call has begun
            time.sleep(0.05)
        time.sleep(1.0)  # past its prefill, into decoding


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0])
    rounds = 4 if args.quick else 10
    decoder = Decoder()
    decoder.thread.start()
    decoder.resume()  # starts the engine and pushes the weights before anything is timed
    decoder.pause()
    times: dict[str, list[float]] = {"quiet": [], "beside_sampler": []}
    with tempfile.TemporaryDirectory() as root:
        input_dir = Path(root) / "input"
        input_dir.mkdir()
        run = sandboxed(PROGRAM, input_dir, Path(root))
        for _ in range(rounds):
            decoder.pause()
            times["quiet"].append(timed(run))
            decoder.resume()
            times["beside_sampler"].append(timed(run))
    decoder.pause()
    decoder.stop = True
    decoder.running.set()
    results = summarise(times) | {
        "sampler_share": decoder.policy.cpu_threads,
        "sampler_threads": decoder.thread_s / max(decoder.busy_s, 1e-9),
        "sampler_tokens_per_s": decoder.tokens / max(decoder.busy_s, 1e-9),
    }
    print_table([results], list(results), title=f"a sandboxed program quiet and beside vLLM, {rounds} rounds")
    targets = {"ratio": target(results["ratio"], "<=", 1.5)}
    write_json(args.json, benchmark="sampler_share", machine=machine_info(),
               config={"rounds": rounds, "program": PROGRAM}, targets=targets,
               results=results | {"times": times})  # fmt: skip


def summarise(times: dict[str, list[float]]) -> dict[str, float]:
    quiet, busy = statistics.median(times["quiet"]), statistics.median(times["beside_sampler"])
    return {"quiet_s": quiet, "beside_sampler_s": busy, "ratio": busy / quiet}


if __name__ == "__main__":
    main()
