"""Which CPU sampler draws SmolLM2-135M programs fastest: transformers in float32 and bfloat16 against
CTranslate2 with int8 weights, on the same prompts, at several batch sizes (issue 13, item 2).

What runs: the embedded SmolLM2-135M-Instruct (no adapters: every engine samples the same base weights), the
compact solve prompt of a bundled-shaped competition, temperature 0.7, at most `--new-tokens` new tokens.
- `transformers-fp32` and `transformers-bf16`: rl_core's LMPolicy.sample (the loop's sampler) with the model
  in that dtype, `generation_batch` = the batch size; generation seconds and tokens/s come from the samples'
  info (the `generate` call alone), `sample_s` is the whole call with its old-log-prob forward.
- `ctranslate2-int8`: the same prompt tokens through `ctranslate2.Generator.generate_batch` (random sampling
  over the whole vocabulary at the same temperature) on a CTranslate2 copy of the model with int8 weights.
  Its `sync_s` is what each policy update would cost it: merging the LoRA adapters into a copy of the model,
  saving it and converting it again (transformers samples the trained model itself: nothing to sync).
  It returns no per-token log-probs here, so the loop would still need transformers' old-log-prob forward.
Responses end at the end-of-sequence token or the cap (transformers also at a closed code block), so each
engine's tokens/s is its own tokens over its own seconds. Not measured: quality (the engines sample the same
distribution up to int8 rounding), and the loop's overlap of sampling with execution.

Run: python bench/lm_engines.py [--quick] [--json PATH] [--batches 1,8,32] [--new-tokens N]
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
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


def transformers_policy(dtype: str, batch: int, new_tokens: int) -> Any:
    from rl_core.policies.lm import LMPolicy
    from rl_core.policies.lm_config import LMPolicyConfig

    config = LMPolicyConfig(
        cache_dir=str(CACHE_DIR / "models"), dtype=dtype, device="cpu", temperature=TEMPERATURE,  # type: ignore[arg-type]
        max_new_tokens=new_tokens, generation_batch=batch, reference=False, autocast="off", seed=0,
    )  # fmt: skip
    return LMPolicy(config)


def measure_transformers(dtype: str, batch: int, new_tokens: int) -> dict[str, Any]:
    policy = transformers_policy(dtype, batch, new_tokens)
    prompts = [Prompt(TASK, "solve")] * batch
    policy.sample(prompts[:1], generator=torch.Generator().manual_seed(1))  # warm-up
    started = time.perf_counter()
    samples = policy.sample(prompts, generator=torch.Generator().manual_seed(0))
    sample_s = time.perf_counter() - started
    tokens = sum(int(s.info["new_tokens"]) for s in samples)
    generation_s = float(samples[0].info["generation_s"])
    return {"tokens": tokens, "generation_s": generation_s, "tokens_per_s": tokens / generation_s,
            "sample_s": sample_s, "sync_s": 0.0}  # fmt: skip


def ctranslate2_model(folder: Path) -> Path:
    """The embedded model converted to CTranslate2 with int8 weights (once, cached)."""
    import ctranslate2

    target = CACHE_DIR / "ct2-int8" / folder.name
    if not (target / "model.bin").exists():
        ctranslate2.converters.TransformersConverter(str(folder)).convert(
            str(target), quantization="int8", force=True
        )
    return target


def sync_seconds(folder: Path) -> float:
    """Seconds for what a policy update costs CTranslate2: merge LoRA adapters, save, convert to int8."""
    import ctranslate2

    from rl_core.policies.lm_weights import save_merged_model

    policy = transformers_policy("float32", 1, 8)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        save_merged_model(policy.model, policy.tokenizer, Path(tmp) / "hf")
        converter = ctranslate2.converters.TransformersConverter(str(Path(tmp) / "hf"))
        converter.convert(str(Path(tmp) / "ct2"), quantization="int8", force=True)
    return time.perf_counter() - started


def measure_ctranslate2(batch: int, new_tokens: int, folder: Path, sync_s: float) -> dict[str, Any]:
    import ctranslate2

    policy = transformers_policy("float32", 1, new_tokens)  # for its tokenizer and prompt layout only
    tokens_in = [policy.tokenizer.convert_ids_to_tokens(policy.prompt_ids(Prompt(TASK, "solve")))] * batch
    generator = ctranslate2.Generator(str(ctranslate2_model(folder)), device="cpu", compute_type="int8",
                                      intra_threads=torch.get_num_threads())  # fmt: skip
    options = {"max_length": new_tokens, "sampling_topk": 0, "sampling_temperature": TEMPERATURE,
               "include_prompt_in_result": False}  # fmt: skip
    generator.generate_batch(tokens_in[:1], **options)  # warm-up
    started = time.perf_counter()
    results = generator.generate_batch(tokens_in, **options)
    elapsed = time.perf_counter() - started
    tokens = sum(len(r.sequences_ids[0]) for r in results)
    return {"tokens": tokens, "generation_s": elapsed, "tokens_per_s": tokens / elapsed, "sample_s": elapsed,
            "sync_s": sync_s}  # fmt: skip


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batches 1 and 8, 96 new tokens")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--batches", default=None, help="comma-separated batch sizes (default 1,8,32)")
    parser.add_argument("--new-tokens", type=int, default=None, help="new tokens per response (default 192)")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    batches = [int(b) for b in (args.batches or ("1,8" if args.quick else "1,8,32")).split(",")]
    new_tokens = args.new_tokens or (96 if args.quick else 192)
    from rl_core.policies.lm_weights import embedded_model_path

    folder = embedded_model_path(CACHE_DIR / "models")
    has_ct2 = importlib.util.find_spec("ctranslate2") is not None
    if not has_ct2:
        print("ctranslate2 is not installed (pip install -e '.[cpu-engines]'): measuring transformers only.")
    sync_s = sync_seconds(folder) if has_ct2 else 0.0
    rows: list[dict[str, Any]] = []
    for batch in batches:
        for dtype in ("float32", "bfloat16"):
            engine = f"transformers-{'fp32' if dtype == 'float32' else 'bf16'}"
            rows.append({"engine": engine, "batch": batch, **measure_transformers(dtype, batch, new_tokens)})
        if has_ct2:
            measured = measure_ctranslate2(batch, new_tokens, folder, sync_s)
            rows.append({"engine": "ctranslate2-int8", "batch": batch, **measured})
    best = max(rows, key=lambda r: r["tokens_per_s"])
    title = (
        f"SmolLM2-135M sampling on this CPU ({torch.get_num_threads()} threads), {new_tokens} new tokens at "
        f"most, τ = {TEMPERATURE}: tokens/s of the generation call; sample_s with transformers' old-log-prob "
        "forward; sync_s per policy update (CTranslate2 reconverts)"
    )
    print_table(
        rows, ["engine", "batch", "tokens", "generation_s", "tokens_per_s", "sample_s", "sync_s"], title=title
    )
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
