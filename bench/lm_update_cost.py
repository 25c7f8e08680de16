"""What one LM update costs: seconds per sample of a PPO update under each scoring setting, quiet machine.

What runs: the embedded SmolLM2-135M-Instruct in an LMPolicy (LoRA, bf16 autocast where the CPU has it), and
one `Learner.update` (1 PPO epoch, minibatches of 4, the LM path's settings otherwise) on a batch of 8
samples built like an LM run's: solve and improve prompts of the two bundled tasks of bench/lm_throughput.py
(262-1,416 prompt tokens, compact style) with GrammarPolicy programs as responses (704-1,014 tokens). Each
setting runs in its own process (so its peak memory is its own), settings interleaved, `runs` times each:

  checkpoint  activation checkpointing on or off (LMPolicyConfig.checkpoint_activations)
  threads     torch threads of the learner (an LM run on a CPU gives it half the cores: cores.cpu_threads)
  micro       samples per forward/backward pass (rl_core.learner.LM_MICRO_BATCH is 1)

Reported per setting: median update seconds per sample, and peak resident memory. Nothing else runs beside
it: in a run the sampler and the sandboxes share the cores (bench/lm_throughput.py measures that).

Run: python bench/lm_update_cost.py [--quick] [--runs N] [--json PATH]   (quick: 1 run, full: 3)
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import replace

from _common import ROOT, bench_arguments, machine_info, print_table, write_json
from _lm import PATHS, LMSettings, learner_config, lm_policy, tasks_for
from lm_throughput import SLUGS

SETTINGS = (
    {"checkpoint": True, "threads": 1, "micro": 1},
    {"checkpoint": False, "threads": 1, "micro": 1},
    {"checkpoint": True, "threads": 2, "micro": 1},
    {"checkpoint": False, "threads": 2, "micro": 1},
)
"""The LM path's own setting first (checkpointing on, 1 thread of 2 cores, micro-batch 1)."""


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0], runs="runs per setting (quick 1, full 3)")
    runs = args.runs or (1 if args.quick else 3)
    measured: list[dict] = [dict(setting, seconds=[], peak_rss_mib=[]) for setting in SETTINGS]
    for _ in range(runs):
        for row in measured:
            one = measure_in_a_process(row)
            row["seconds"].append(one["s_per_sample"])
            row["peak_rss_mib"].append(one["peak_rss_mib"])
            row["lengths"] = one["lengths"]
    table = [
        {**{k: row[k] for k in ("checkpoint", "threads", "micro")},
         "s_per_sample": statistics.median(row["seconds"]), "peak_rss_mib": max(row["peak_rss_mib"]),
         "runs": len(row["seconds"])}
        for row in measured
    ]  # fmt: skip
    print_table(table, list(table[0]), title="one PPO update of 8 samples, seconds per sample (median)")
    write_json(args.json, benchmark="lm_update_cost", machine=machine_info(),
               config={"runs": runs, "settings": SETTINGS, "lengths": measured[0]["lengths"]}, targets={},
               results={"rows": table, "measured": measured})  # fmt: skip


def measure_in_a_process(setting: dict) -> dict:
    """`measure(setting)` in a fresh Python process: its last stdout line, as JSON."""
    argument = json.dumps({k: setting[k] for k in ("checkpoint", "threads", "micro")})
    out = subprocess.run(
        [sys.executable, __file__, "--one", argument], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(setting: dict) -> dict:
    """One update under `setting`, here: seconds per sample, peak RSS, (prompt, response) lengths."""
    from rl_core.learner import Learner

    settings = LMSettings()
    policy = lm_policy(
        settings, checkpoint_activations=setting["checkpoint"], cpu_threads=setting["threads"],
        sampler="transformers",  # nothing is sampled: no vLLM engine to start
    )  # fmt: skip
    batch = run_like_batch(policy)
    path = replace(PATHS["new"], micro_batch=setting["micro"], ppo_epochs=1)
    learner = Learner(policy, learner_config(settings, path, settings.seed))
    started = time.perf_counter()
    learner.update(batch, current_version=0)
    seconds = (time.perf_counter() - started) / len(batch)
    lengths = [(len(policy.prompt_ids(e.sample.prompt)), len(e.sample.action.token_ids)) for e in batch]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return {"s_per_sample": seconds, "peak_rss_mib": peak, "lengths": lengths}


def run_like_batch(policy) -> list:  # type: ignore[no-untyped-def]
    """8 experiences: per task two solve prompts and two improve prompts (a previous GrammarPolicy program),
    each answered by another GrammarPolicy program, with standard-normal rewards."""
    import torch

    from rl_core.policy import Experience, PreviousSolution, Prompt, Sample, TokenAction
    from rl_core.warmstart.demonstrations import grammar_pool_responses

    tasks = [t.info for t in tasks_for(SLUGS)]
    pools = grammar_pool_responses(tasks, 5)
    generator = torch.Generator().manual_seed(0)
    batch = []
    for index in range(8):
        task, pool = tasks[index % 2], pools[tasks[index % 2].slug]
        previous = PreviousSolution(pool[index % len(pool)], "ok", 0.5)
        prompt = Prompt(task, "solve") if index % 4 < 2 else Prompt(task, "improve", previous=previous)
        response = pool[(index + 1) % len(pool)]
        ids = tuple(policy.response_ids(Sample(prompt, response, (), 0)))
        sample = Sample(prompt, response, tuple([-1.0] * len(ids)), 0, action=TokenAction(ids))
        reward = float(torch.randn((), generator=generator))
        batch.append(Experience(sample, reward=reward, duration_s=5.0, valid=True))
    return batch


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(measure(json.loads(sys.argv[2]))))
    else:
        main()
