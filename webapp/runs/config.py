"""A run's settings as one flat, typed record: what the UI form, `manage.py train` and the API all set,
stored as `Run.config`, and turned into rl_core's LoopConfig, LearnerConfig and RewardConfig."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal


@dataclass(frozen=True)
class RunConfig:
    policy: Literal["grammar", "lm"] = "grammar"
    """Which policy writes the programs."""
    model: str = "smollm2-135m"
    """LM policy only: the embedded model's name, a local path, or a cached Hugging Face name."""
    warm_start: str = ""
    """LM policy only: a warm start to begin from (`manage.py warmstart`): its name under
    PRACTICUM_DATA_DIR/adapters, or a folder path; "" for none."""
    seed_baseline: bool = False
    """Before the first attempt, run the simplest grammar program once per competition and put it, when
    valid, into the improve pool, so improve prompts exist from the first attempt."""
    attempts: int = 64
    """Attempt budget."""
    actors: int = 2
    """K: attempts in flight at once."""
    batch: int = 8
    """B: finished attempts per learner update."""
    sync: bool = False
    """Synchronous baseline (sample B, wait for all B, update) instead of asynchronous."""
    duration_aware: bool = True
    """Weight each sample's policy-gradient term by Δt / mean(Δt) (the paper's correction)."""
    instrument: bool = True
    """Insert progress markers for partial credit."""
    reward_preset: Literal["normalized", "paper"] = "normalized"
    """Reward preset of DESIGN.md §1."""
    improve_prob: float = 0.5
    """Probability of an improve prompt when an earlier valid solution exists."""
    objective: Literal["ppo", "reinforce"] = "ppo"
    """Learner objective."""
    lr: float = 0.05
    """Learning rate (the grammar policy's logits learn fast; use ~1e-5 for an LM's adapters)."""
    entropy_coef: float = 0.01
    """Entropy bonus."""
    advantage: Literal["running_mean", "group_mean", "batch_normalized"] = "running_mean"
    """Baseline for advantages."""
    checkpoint_every: int = 1
    """Learner updates between checkpoints."""
    seed: int = 0
    """Seeds sampling and prompt choices."""

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> RunConfig:
        """Parse and check a stored or submitted config; ValueError names the field that is wrong."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ValueError(f"config: unknown field {unknown[0]!r}.")
        config = cls(**raw)
        config.check()
        return config

    def check(self) -> None:
        positive = {"attempts": self.attempts, "actors": self.actors, "batch": self.batch, "lr": self.lr}
        for name, value in positive.items():
            if not value > 0:
                raise ValueError(f"config: {name} must be positive, not {value!r}.")
        if not 0 <= self.improve_prob <= 1:
            raise ValueError(f"config: improve_prob must be between 0 and 1, not {self.improve_prob!r}.")
        if self.policy not in ("grammar", "lm"):
            raise ValueError(f"config: policy must be 'grammar' or 'lm', not {self.policy!r}.")
        if self.warm_start and self.policy != "lm":
            raise ValueError("config: warm_start needs policy 'lm' (a warm start adapts a language model).")
        if self.reward_preset not in ("normalized", "paper"):
            raise ValueError(
                f"config: reward_preset must be 'normalized' or 'paper', not {self.reward_preset!r}."
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
