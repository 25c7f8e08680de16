"""GPU check of the LM path: sampling tokens/s at several batch sizes and one PPO update's time and memory.

Run: python bench/gpu_lm.py [--json PATH] [--params 0.5e9] [--batches 1,8,32] [--new-tokens 512]

It needs torch, transformers and peft, and samples through vLLM when vLLM is installed (the engine an LM run
gets: LMPolicyConfig.sampler "auto"), through transformers otherwise; no download, no network. The model is a
randomly
initialised Qwen2 causal LM built in code, in bfloat16, with Qwen2.5-0.5B's width, heads and vocabulary
(151,936 tokens, tied embeddings) and as many layers as bring it nearest `--params` (24 layers, 494M
parameters, for the default 0.5e9). The tokenizer is rl_core.testing's byte-level tiny tokenizer (259
tokens, with a chat template); the model samples from its whole vocabulary, so responses decode to little
text, never close a code block and run to `--new-tokens` (an end token has a chance of about 1 in 150,000
per step): every row of every batch decodes exactly `--new-tokens` tokens.

The model is saved to a temporary folder (vLLM loads from one) and wrapped in rl_core's LMPolicy (LoRA r = 16
on all linear layers, the "auto" sampler, the policy's defaults on cuda: bfloat16 weights, float32 adapters,
bf16 autocast, activation checkpointing).
1. Sampling: `LMPolicy.sample` on B copies of one compact solve prompt, for each B in `--batches`, after
   one short warm-up call. Reported per B: generation tokens/s (``Sample.info["tokens_per_s"]``: generated
   tokens over the ``generate`` call's seconds) and the whole call's seconds, which add the no-gradient
   forward that records the old log-probs (transformers; vLLM returns its own).
   Then the push: the adapters changed and the version moved, the seconds one draw spends handing vLLM the
   merged weights (``Sample.info["sync_s"]``; 0 for transformers, which samples the policy's own model).
2. Update: one `rl_core.learner.Learner` PPO update (1 epoch, one minibatch, `--micro-batch` samples per
   forward/backward) on the first `--update-samples` samples of the largest batch, each its prompt plus
   `--new-tokens` response tokens. Reported: seconds and `torch.cuda.max_memory_allocated` during it.
On a machine without CUDA it prints one line saying so and exits 0, measuring nothing.

Not yet run on a GPU: no GPU has been lent to this project so far. The default settings were sized by
estimate (a few minutes on one H200 at most), not by measurement.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import machine_info, print_table, write_json

NO_CUDA = "gpu_lm: no CUDA device on this machine; nothing measured (this benchmark needs one GPU)."

WIDTH: dict[str, Any] = {  # Qwen2.5-0.5B's shape but for its 24 layers
    "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14, "num_key_value_heads": 2,
    "vocab_size": 151936, "tie_word_embeddings": True, "max_position_embeddings": 4096,
}  # fmt: skip


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None, help="write the results here as JSON")
    parser.add_argument("--params", type=float, default=0.5e9, help="model size in parameters (about)")
    parser.add_argument("--batches", default="1,8,32", help="sampling batch sizes, comma-separated")
    parser.add_argument("--new-tokens", type=int, default=512, help="tokens decoded per response")
    parser.add_argument("--update-samples", type=int, default=8, help="samples in the PPO update")
    parser.add_argument("--micro-batch", type=int, default=4, help="samples per forward/backward pass")
    return parser.parse_args()


def model_config(params: float, tokenizer: Any) -> Any:
    """A Qwen2Config of `WIDTH` with the number of layers (at least 1) that brings it nearest `params`."""
    from transformers import Qwen2Config

    def config(layers: int) -> Any:
        return Qwen2Config(
            **WIDTH, num_hidden_layers=layers, bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        )  # fmt: skip

    embedding, one_layer = count_parameters(config(0)), count_parameters(config(1))
    layers = max(1, round((params - embedding) / (one_layer - embedding)))
    return config(layers)


def count_parameters(config: Any) -> int:
    """The parameter count of a model of `config`, built on the meta device (no memory, no time)."""
    import torch
    from transformers import Qwen2ForCausalLM

    with torch.device("meta"):
        return sum(p.numel() for p in Qwen2ForCausalLM(config).parameters())


def build_policy(args: argparse.Namespace, tokenizer: Any, folder: Path) -> Any:
    """A random bfloat16 model on cuda, saved to `folder`, wrapped in an LMPolicy with fresh LoRA adapters."""
    import torch
    from transformers import Qwen2ForCausalLM

    from rl_core.policies.lm.config import LMPolicyConfig
    from rl_core.policies.lm.policy import LMPolicy

    torch.manual_seed(0)
    with torch.device("cuda"):
        model: Any = Qwen2ForCausalLM(model_config(args.params, tokenizer))
    model = model.to(torch.bfloat16).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    config = LMPolicyConfig(
        device="cuda", sampler="auto", prompt_style="compact", max_new_tokens=args.new_tokens,
        generation_batch=max(batch_sizes(args)), score_batch=8, reference=False,
    )  # fmt: skip
    return LMPolicy(config, model=model, tokenizer=tokenizer, model_path=folder)


def batch_sizes(args: argparse.Namespace) -> list[int]:
    return [int(size) for size in args.batches.split(",")]


def solve_prompt() -> Any:
    from rl_core.policy import Prompt, TaskInfo

    task = TaskInfo(
        slug="demo", description="Predict the price of a house from its features.", metric="rmse",
        higher_is_better=False, id_column="id", target_columns=("price",), time_limit_s=60.0,
        files=("train.csv", "test.csv"), data_preview="id,area,rooms,price\n1,120,3,250000",
    )  # fmt: skip
    return Prompt(task=task, kind="solve")


def measure_sampling(policy: Any, size: int) -> tuple[dict[str, Any], list[Any]]:
    """One `sample` call on `size` copies of the prompt: its row of the table, and the samples."""
    import torch

    torch.cuda.synchronize()
    started = time.perf_counter()
    samples = policy.sample([solve_prompt()] * size, generator=torch.Generator().manual_seed(size))
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    row = {
        "batch": size,
        "new_tokens": sum(s.info["new_tokens"] for s in samples),
        "generation_tokens_per_s": samples[0].info["tokens_per_s"],
        "call_s": seconds,
    }
    return row, samples


def measure_update(policy: Any, samples: list[Any], micro_batch: int) -> dict[str, Any]:
    """One PPO update on `samples`: seconds and peak GPU memory (GiB) during it."""
    import torch

    from rl_core.learner import Learner, LearnerConfig
    from rl_core.policy import Experience

    batch = [Experience(s, reward=float(k % 2), duration_s=1.0) for k, s in enumerate(samples)]
    learner = Learner(policy, LearnerConfig(lr=1e-4, ppo_epochs=1, micro_batch=micro_batch))
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    learner.update(batch, current_version=policy.version)
    torch.cuda.synchronize()
    return {
        "samples": len(samples),
        "micro_batch": micro_batch,
        "tokens": sum(len(s.logprobs) for s in samples),
        "seconds": time.perf_counter() - started,
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
    }


def measure_push(policy: Any) -> dict[str, Any]:
    """Change the adapters, move the version, draw once: the seconds handing the engine the new weights."""
    import torch

    with policy.weights_lock, torch.no_grad():
        for parameter in policy.parameters():
            parameter.add_(0.01)
        policy.version += 1
    [sample] = policy.sample([solve_prompt()], generator=torch.Generator().manual_seed(1))
    return {"engine": policy.engine, "push_s": sample.info["sync_s"]}


def warm_up(policy: Any) -> None:
    """One 8-token sample: CUDA context, kernels and allocator are set up before anything is timed."""
    import dataclasses

    import torch

    config = policy.config
    policy.config = dataclasses.replace(config, max_new_tokens=8)
    policy.sample([solve_prompt()], generator=torch.Generator().manual_seed(0))
    policy.config = config


def main() -> int:
    args = arguments()
    import torch

    if not torch.cuda.is_available():
        print(NO_CUDA)
        return 0
    from rl_core.testing import tiny_tokenizer

    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # a killed run keeps its lines
    folder = Path(tempfile.mkdtemp(prefix="gpu_lm-"))
    policy = build_policy(args, tiny_tokenizer(), folder)
    params = sum(p.numel() for p in policy.model.parameters() if not p.requires_grad)
    print(f"random Qwen2, {params / 1e6:.0f}M parameters, on {torch.cuda.get_device_name()}, {policy.engine}")
    warm_up(policy)
    sampling: list[dict[str, Any]] = []
    samples: list[Any] = []
    for size in batch_sizes(args):
        row, samples = measure_sampling(policy, size)
        sampling.append(row)
        print_table([row], list(row), title=f"sampling at batch {size}")
    push = measure_push(policy)
    print_table([push], list(push), title="one weight push")
    update = measure_update(policy, samples[: args.update_samples], args.micro_batch)
    print_table([update], list(update), title="one PPO update")
    machine = machine_info() | {"gpu": torch.cuda.get_device_name()}
    config = vars(args) | {"json": str(args.json), "base_parameters": params}
    results = {"engine": policy.engine, "sampling": sampling, "push": push, "update": update}
    write_json(args.json, benchmark="gpu_lm", machine=machine, config=config, targets={}, results=results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
