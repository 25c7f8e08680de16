"""Prompt formats for a small LM on a CPU: the measurement behind RunConfig.prompt_style's default.

What runs: for each prompt style of rl_core.prompts ("full": the description and data preview, the paper's
kind; "compact": the task as facts, improve prompts showing the earlier program first and asking for the
whole program back with one change), SmolLM2-135M-Instruct is warm-started on the same GrammarPolicy
demonstrations written in that style (bench/_lm.py), then samples a fixed number of attempts through the
real loop without updates (a static arm: sandboxed, graded). Two bundled competitions, the same seed.

Reported per style: the prompt and response lengths in tokens, the warm start's wall time and final loss,
valid-submission rate, best score per competition, generation speed and seconds per attempt. The style
with the higher valid rate wins; on a tie the cheaper one. What it finds is printed, not assumed.

Run: python bench/prompt_formats.py [--quick] [--json PATH]   (measured quick: 60 minutes, 51 of them the full
style's warm start; the compact one, shared with the other LM benchmarks, takes 24 more when not cached)
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace

from _common import bench_arguments, machine_info, print_table, target, write_json
from _lm import LMSettings, lm_policy, run_arm, tasks_for, warm_start

SLUGS = ("diabetes-progression", "breast-cancer-diagnosis")
STYLES = ("compact", "full")


def measure_style(style: str, tasks, settings: LMSettings, attempts: int) -> dict:
    # both styles get the same response cap (LMSettings.max_new_tokens, room for a full-style response of
    # about 800 tokens); the compact arm's warm start is the one the other LM benchmarks share
    settings = replace(settings, prompt_style=style)
    started = time.monotonic()
    adapter, manifest = warm_start(tasks, settings)
    policy = lm_policy(settings, adapter=adapter)
    lengths = prompt_lengths(policy, tasks)
    arm = run_arm(f"static-{style}", policy, tasks, settings, attempts=attempts, learn=False)
    summary = arm.summary(tasks)
    return {
        "style": style,
        "prompt_tokens_solve": lengths,
        "response_tokens": statistics.fmean(r.new_tokens for r in arm.records),
        "warm_start_wall_s": manifest.get("wall_s"),
        "warm_start_loss_last": manifest.get("loss_last"),
        "measured_wall_s": time.monotonic() - started,
        **summary,
    }


def prompt_lengths(policy, tasks) -> float:
    from rl_core.policy import Prompt

    return statistics.fmean(len(policy.prompt_ids(Prompt(task=t.info, kind="solve"))) for t in tasks)


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0])
    attempts = 8 if args.quick else 16
    settings = LMSettings()
    tasks = tasks_for(SLUGS)
    rows = [measure_style(style, tasks, settings, attempts) for style in STYLES]
    columns = ["style", "prompt_tokens_solve", "response_tokens", "warm_start_wall_s", "warm_start_loss_last",
               "valid_rate", "tokens_per_s", "seconds_per_attempt"]  # fmt: skip
    print_table(
        rows, columns, title=f"Prompt styles, SmolLM2-135M warm-started, {attempts} attempts each, on {SLUGS}"
    )
    by_style = {row["style"]: row for row in rows}
    gap = by_style["compact"]["valid_rate"] - by_style["full"]["valid_rate"]
    best = max(rows, key=lambda r: (r["valid_rate"], -r["seconds_per_attempt"]))["style"]
    print(f"\nchosen: {best} (higher valid rate; cheaper on a tie)")
    write_json(
        args.json, benchmark="prompt_formats", machine=machine_info(),
        config={"slugs": SLUGS, "attempts": attempts, **vars(settings)},
        targets={"compact_valid_rate_minus_full": target(gap, ">=", 0.0)},
        results={"by_style": by_style, "chosen": best},
    )  # fmt: skip


if __name__ == "__main__":
    main()
