"""Which CPU sampler draws SmolLM2-135M programs fastest: transformers in float32 and bfloat16, the
continuous decoder and CTranslate2 with int8 weights, on the same prompts, at several batch sizes (issue 13,
item 2).

What runs: the embedded SmolLM2-135M-Instruct (no adapters: every engine samples the same base weights), the
compact solve prompt of a bundled-shaped competition, temperature 0.7, at most `--new-tokens` new tokens,
each engine through rl_core's LMPolicy.sample (the loop's sampler; LMPolicyConfig.sampler and dtype), with
`generation_batch` = the batch size:
- `transformers-fp32` and `transformers-bf16`: transformers ``generate`` on the model in that dtype;
- `continuous-fp32`: rl_core.policies.lm_decoder on the float32 weights (merged at each policy update: its
  `sync_s`), rows leaving and entering the batch as they end;
- `ctranslate2-int8` and `ctranslate2-fp32`: CTranslate2 on an int8 or float32 copy of the model
  (rl_core.policies.lm_ct2; LMPolicyConfig.ct2_compute_type). Its `sync_s` is what each policy update
  costs it: merging the LoRA adapters into a copy, saving and converting it (the warm-up call does it
  once; transformers samples the trained model itself: nothing to sync). Its
  `logprob_gap_mean` / `logprob_gap_abs`: log μ - log π per sampled token at temperature 1, μ the copy (the
  mean, and the mean of its absolute value): how far what it samples is from the policy PPO assumes.
Generation seconds and tokens/s come from the samples' info (the generation call alone); `sample_s` is the
whole call, with the old-log-prob forward of the engines whose samples the policy re-scores (all but the
continuous decoder, which gives π's log-probs as it samples). Responses end at an end token, a closed code
block or the cap, so each engine's tokens/s is its own tokens over its own seconds. Not measured: quality,
and the loop's overlap of sampling with execution (bench/lm_throughput.py --paths new,ct2 measures the loop).

Run: python bench/lm_engines.py [--quick] [--json PATH] [--batches 1,8,32] [--new-tokens N] [--engines A,B]
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from dataclasses import replace
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


ENGINES = {
    "transformers-fp32": {"sampler": "transformers", "dtype": "float32"},
    "continuous-fp32": {"sampler": "continuous", "dtype": "float32", "cpu_threads": 2},
    "vllm-bf16": {"sampler": "vllm", "dtype": "float32", "vllm_dtype": "bfloat16", "cpu_threads": 1},
    "vllm-fp32": {"sampler": "vllm", "dtype": "float32", "vllm_dtype": "float32", "cpu_threads": 1},
    "transformers-bf16": {"sampler": "transformers", "dtype": "bfloat16"},
    "ctranslate2-int8": {"sampler": "ctranslate2", "dtype": "float32", "ct2_compute_type": "int8"},
    "ctranslate2-fp32": {"sampler": "ctranslate2", "dtype": "float32", "ct2_compute_type": "float32"},
}
"""Each engine as LMPolicyConfig settings: the sampler, and the dtype of the model transformers runs."""


def engine_policy(engine: str, batch: int, new_tokens: int) -> Any:
    from rl_core.policies.lm.policy import LMPolicy
    from rl_core.policies.lm.config import LMPolicyConfig

    config = LMPolicyConfig(
        cache_dir=str(CACHE_DIR / "models"), device="cpu", temperature=TEMPERATURE, max_new_tokens=new_tokens,
        generation_batch=batch, reference=False, autocast="off", seed=0, **ENGINES[engine],  # type: ignore[arg-type]
    )  # fmt: skip
    return LMPolicy(config)


def measure(engine: str, batch: int, new_tokens: int) -> dict[str, Any]:
    """One timed `sample` call of `batch` prompts after a warm-up call (which, for CTranslate2, converts the
    model: its sync_s)."""
    policy = engine_policy(engine, batch, new_tokens)
    prompts = [Prompt(TASK, "solve")] * batch
    [warm_up] = policy.sample(prompts[:1], generator=torch.Generator().manual_seed(1))
    started = time.perf_counter()
    samples = policy.sample(prompts, generator=torch.Generator().manual_seed(0))
    sample_s = time.perf_counter() - started
    tokens = sum(int(s.info["new_tokens"]) for s in samples)
    generation_s = float(samples[0].info["generation_s"])
    row = {"tokens": tokens, "generation_s": generation_s, "tokens_per_s": tokens / generation_s,
           "sample_s": sample_s, "sync_s": float(warm_up.info["sync_s"])}  # fmt: skip
    if policy.engine == "ctranslate2":
        row |= logprob_gap(policy, samples)
    return row


def logprob_gap(policy: Any, samples: list[Any]) -> dict[str, float]:
    """How far the CTranslate2 copy μ is from the policy π on the tokens it sampled, at temperature 1: the
    mean of log μ - log π per token and the mean of its absolute value."""
    prompt_ids = [policy.prompt_ids(s.prompt) for s in samples]
    response_ids = [list(s.action.token_ids) for s in samples]
    copied = policy._engine.sampler.logprobs(prompt_ids, response_ids, policy.tokenizer)
    at_one = replace(policy.config, temperature=1.0)
    original, policy.config = policy.config, at_one
    with torch.no_grad():
        scored = policy.score(samples)
    policy.config = original
    gaps = [
        c - float(p)
        for row, c_row in enumerate(copied)
        for c, p in zip(c_row, scored.logprobs[row, scored.mask[row]].tolist(), strict=True)
    ]
    count = max(len(gaps), 1)
    return {"logprob_gap_mean": sum(gaps) / count, "logprob_gap_abs": sum(abs(g) for g in gaps) / count}


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
    has_ct2 = importlib.util.find_spec("ctranslate2") is not None
    chosen = args.engines.split(",") if args.engines else list(ENGINES)
    if unknown := [engine for engine in chosen if engine not in ENGINES]:
        raise SystemExit(f"--engines takes some of {', '.join(ENGINES)} (got {', '.join(unknown)})")
    engines = [engine for engine in chosen if has_ct2 or not engine.startswith("ctranslate2")]
    if len(engines) < len(chosen):
        print("ctranslate2 is not installed (pip install -e '.[cpu-engines]'): measuring transformers only.")
    rows: list[dict[str, Any]] = []
    for batch in batches:
        for engine in engines:
            rows.append({"engine": engine, "batch": batch, **measure(engine, batch, new_tokens)})
    best = max(rows, key=lambda r: r["tokens_per_s"])
    title = (
        f"SmolLM2-135M sampling on this CPU ({torch.get_num_threads()} threads), {new_tokens} new tokens at "
        f"most, τ = {TEMPERATURE}: tokens/s of the generation call; sample_s with the old-log-prob forward "
        "where the policy re-scores; sync_s per policy update (CTranslate2 reconverts); log-prob gap of the "
        "int8 copy at τ = 1"
    )
    columns = ["engine", "batch", "tokens", "generation_s", "tokens_per_s", "sample_s", "sync_s"]
    print_table(rows, [*columns, "logprob_gap_mean", "logprob_gap_abs"], title=title)
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
