"""Decoding while the learner updates: what the continuous decoder's overlap with an update buys on this CPU.

What runs: the embedded SmolLM2-135M-Instruct with fresh LoRA adapters on the CPU at 2 threads (no warm start:
what a decoding step or an update costs does not depend on what the adapters learned), and
- a decode: one LMPolicy.sample call of 8 solve prompts (the continuous decoder, 8 rows, at most
  `--new-tokens` new tokens each, temperature 0.7, seeded), as the loop's background sampler draws;
- an update: one Learner.update with an LM run's PPO settings (1 epoch, micro-batch 1, minibatches of 4) on
  the first 4 programs a warm-up decode drew.
Modes, in one process, each repeated (`--repeats`, alternating so a slow spell hits all of them):
- serial: the decode, then the update (how the loop ran them before: the update held the policy);
- overlap-2+2: both at once in two threads, each at the process's 2 threads (the policy's ThreadSplit off);
- overlap-split: both at once as the loop now runs them: the update under the weights lock, the decode
  outside it, ThreadSplit giving each 1 thread while both run and 2 when alone (rl_core.policies.lm.cores).
  The update starts once the decode has taken its weights, as in the loop, where the decoder is nearly
  always busy.
Reported per run: the decode's and the update's seconds, the wall seconds from the first start to the last
end, new tokens; per mode the mean wall and its ratio to serial's (lower is better).

Run: python bench/lm_overlap.py [--quick] [--json PATH] [--repeats N] [--new_tokens N]
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

import torch
from _common import bench_arguments, machine_info, print_table, write_json
from _lm import PATHS, LMSettings, learner_config, lm_policy, tasks_for

from rl_core.learner import Learner
from rl_core.policy import Experience, Prompt

MODES = ("serial", "overlap-2+2", "overlap-split")
SLUGS = ("diabetes-progression", "breast-cancer-diagnosis")


def run_once(mode: str, policy: Any, learner: Learner, prompts: list[Prompt], batch: list[Experience],
             seed: int) -> dict[str, Any]:  # fmt: skip
    """One decode and one update in `mode`; their seconds, the wall seconds and the decode's new tokens."""
    split = policy.threads
    if mode == "overlap-2+2":
        policy.threads = None  # nothing shares the cores: each stream keeps the process's 2 threads
    torch.set_num_threads(2)
    lock, row = threading.Lock(), {"mode": mode}

    def decode() -> None:
        started = time.perf_counter()
        generator = torch.Generator().manual_seed(seed)
        samples = policy.sample(prompts, generator=generator, weights_lock=lock)
        row["decode_s"] = time.perf_counter() - started
        row["new_tokens"] = sum(int(s.info["new_tokens"]) for s in samples)

    def update() -> None:
        started = time.perf_counter()
        with lock:
            learner.update(batch, current_version=policy.version)
        row["update_s"] = time.perf_counter() - started

    started = time.perf_counter()
    try:
        if mode == "serial":
            decode()
            update()
        else:
            decoding = threading.Thread(target=decode)
            decoding.start()
            while policy._engine.synced_version != policy.version and decoding.is_alive():
                time.sleep(0.01)  # the update starts once the decoder holds this version's weights
            updating = threading.Thread(target=update)
            updating.start()
            decoding.join()
            updating.join()
    finally:
        policy.threads = split
    row["wall_s"] = time.perf_counter() - started
    return row


def mode_means(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per mode run so far: the mean wall seconds, its ratio to serial's, the number of runs."""
    walls = {mode: [r["wall_s"] for r in rows if r["mode"] == mode] for mode in MODES}
    serial = statistics.mean(walls["serial"])
    means = {mode: statistics.mean(w) for mode, w in walls.items() if w}
    return {
        mode: {"wall_s_mean": mean, "versus_serial": mean / serial, "runs": len(walls[mode])}
        for mode, mean in means.items()
    }


def main() -> None:
    args = bench_arguments(
        __doc__.splitlines()[0], repeats="runs per mode (4; quick 2)", new_tokens="token cap (256; quick 128)"
    )
    repeats = args.repeats or (2 if args.quick else 4)
    new_tokens = args.new_tokens or (128 if args.quick else 256)
    settings = LMSettings()
    policy = lm_policy(settings, temperature=0.7, max_new_tokens=new_tokens)
    learner = Learner(policy, learner_config(settings, PATHS["new"], settings.seed))
    tasks = tasks_for(SLUGS)
    prompts = [Prompt(task=tasks[i % len(tasks)].info, kind="solve") for i in range(8)]
    warm = policy.sample(prompts, generator=torch.Generator().manual_seed(0))
    batch = [Experience(sample, float(i % 2), 1.0, True) for i, sample in enumerate(warm[:4])]
    rows: list[dict[str, Any]] = []
    config = {"repeats": repeats, "new_tokens": new_tokens, "prompts": len(prompts), "update_samples": 4,
              "update_tokens": sum(len(e.sample.logprobs) for e in batch), "threads": 2}  # fmt: skip
    results: dict[str, Any] = {"runs": rows}
    for repeat in range(repeats):
        for mode in MODES:
            rows.append(run_once(mode, policy, learner, prompts, batch, seed=repeat + 1) | {"repeat": repeat})
            print(rows[-1], flush=True)
            results["modes"] = mode_means(rows)
            write_json(args.json, benchmark="lm_overlap", machine=machine_info(), config=config, targets={},
                       results=results)  # fmt: skip
    print_table(rows, ["mode", "repeat", "decode_s", "update_s", "wall_s", "new_tokens"], title="runs")
    summary = [{"mode": mode, **figures} for mode, figures in results["modes"].items()]
    print_table(summary, ["mode", "wall_s_mean", "versus_serial", "runs"], title="mean wall per mode")


if __name__ == "__main__":
    main()
