"""The reward of one attempt: a pure function of how it ended (DESIGN.md §1).

Presets (``RewardConfig.preset``):

- ``"normalized"`` (default). A valid submission earns ``score_norm + credit_per_stage * stages`` (the credit
  only with ``credit_valid``, the default), where
  ``score_norm`` is the improvement over the trivial baseline, ``d * (s - s_base) / |s_best - s_base|``
  clipped to [-1, 1] (``d`` = +1 for higher-is-better metrics, -1 for lower-is-better; ``s_best`` the
  metric's perfect value), so 0 is the baseline, 1 perfect, and lower-is-better metrics work the same way.
  Without a baseline the raw signed score ``d * s``, clipped to [-1, 1], stands in for it. No valid
  submission: ``failure_reward + credit_per_stage * stages`` (failure_reward default -1.0).
- ``"paper"``: the paper's reward. Valid: the raw signed score ``d * s`` (unclipped) plus the stage credit;
  no valid submission: -10.0 plus the stage credit.

``mode="percentile"``, where the competition has a leaderboard, replaces ``score_norm`` (or the raw score)
by ``2 * p - 1`` with ``p`` the leaderboard percentile (`rl_core.leaderboard.percentile`: the fraction of
entries beaten, ties half). The map onto [-1, 1] keeps percentile rewards on the normalized scale: beating
nobody is as bad as the worst clipped score, beating everyone as good as a perfect one, the median 0.
Without a leaderboard, percentile mode falls back to the score.

A "valid" attempt whose score is missing or not finite is treated as a failure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rl_core.leaderboard import percentile

STAGE_COUNT = 6
"""Stages an attempt can reach (rl_core.instrument.STAGES)."""
DEFAULT_FAILURE = {"normalized": -1.0, "paper": -10.0}


@dataclass(frozen=True)
class RewardConfig:
    """How attempts are rewarded.

    Attributes:
        preset: ``"normalized"`` (improvement over the baseline, in [-1, 1]) or ``"paper"`` (raw signed
            score, -10 for a failure).
        failure_reward: the reward of an attempt without a valid submission, before stage credit;
            None for the preset's (-1.0 normalized, -10.0 paper).
        credit_per_stage: added for each instrumentation stage reached (by an invalid attempt always; by a
            valid one only with `credit_valid`).
        credit_valid: whether a valid submission also earns the stage credit (the paper's reward, kept as
            the default); False rewards a valid submission by its score alone, so stages can add nothing on
            top of solving. Measured (GrammarPolicy, 2 bundled competitions, 1 seed x 48 attempts per arm,
            so underpowered): every attempt was valid with all six stages in both arms, making the credit a
            constant +0.6; late mean normalised score 0.74 (on) vs 0.65 (off), best scores equal. No
            evidence to change the default.
        mode: ``"score"``, or ``"percentile"`` to use the leaderboard percentile when one exists.
    """

    preset: Literal["normalized", "paper"] = "normalized"
    failure_reward: float | None = None
    credit_per_stage: float = 0.1
    credit_valid: bool = True
    mode: Literal["score", "percentile"] = "score"

    def __post_init__(self) -> None:
        if self.preset not in DEFAULT_FAILURE:
            raise ValueError(f"RewardConfig.preset must be 'normalized' or 'paper', got {self.preset!r}.")
        if self.mode not in ("score", "percentile"):
            raise ValueError(f"RewardConfig.mode must be 'score' or 'percentile', got {self.mode!r}.")

    @property
    def failure(self) -> float:
        """The failure reward in effect."""
        return DEFAULT_FAILURE[self.preset] if self.failure_reward is None else self.failure_reward


def failure_reward(config: RewardConfig, stages_reached: int = 0) -> float:
    """The reward of an attempt without a valid submission (or that ran nothing): the preset's failure
    reward plus the credit for the stages it reached. The one definition: `compute_reward` uses it, and so
    do the workers for attempts they could not run or had to stop.

    >>> failure_reward(RewardConfig()), failure_reward(RewardConfig(preset="paper"), 2)
    (-1.0, -9.8)
    """
    return round(config.failure + config.credit_per_stage * stages_reached, 12)


def _clip(value: float) -> float:
    return max(-1.0, min(1.0, value))


def normalized_score(score: float, *, baseline: float, perfect: float, higher_is_better: bool) -> float:
    """Improvement over the baseline as a fraction of the possible improvement, clipped to [-1, 1].

    A baseline that is already perfect leaves nothing to improve: matching it scores 1, anything else -1.

    >>> normalized_score(0.8, baseline=0.6, perfect=1.0, higher_is_better=True)
    0.5000000000000001
    >>> normalized_score(2.0, baseline=4.0, perfect=0.0, higher_is_better=False)
    0.5
    >>> normalized_score(9.0, baseline=4.0, perfect=0.0, higher_is_better=False)
    -1.0
    """
    direction = 1.0 if higher_is_better else -1.0
    span = abs(perfect - baseline)
    if span == 0:
        return 1.0 if score == perfect else -1.0
    return _clip(direction * (score - baseline) / span)


def _score_term(
    score: float,
    *,
    config: RewardConfig,
    higher_is_better: bool,
    baseline_score: float | None,
    perfect_score: float,
    leaderboard: Sequence[float] | None,
) -> float:
    direction = 1.0 if higher_is_better else -1.0
    if config.mode == "percentile" and leaderboard:
        return 2.0 * percentile(score, leaderboard, higher_is_better=higher_is_better) - 1.0
    if config.preset == "paper":
        return direction * score
    if baseline_score is None:
        return _clip(direction * score)
    return normalized_score(
        score, baseline=baseline_score, perfect=perfect_score, higher_is_better=higher_is_better
    )


def compute_reward(
    *,
    valid: bool,
    score: float | None,
    stages_reached: int,
    config: RewardConfig,
    higher_is_better: bool,
    baseline_score: float | None,
    perfect_score: float,
    leaderboard: Sequence[float] | None = None,
) -> float:
    """The reward of one attempt, as the module docstring defines it.

    Args:
        valid: whether the grader accepted the submission.
        score: the metric's value on the hidden answers (None when not valid).
        stages_reached: 0..6 instrumentation stages.
        higher_is_better, perfect_score: the metric's direction and best value.
        baseline_score: the sample submission's (or a constant predictor's) score; None if unknown.
        leaderboard: the competition's leaderboard scores, for percentile mode.

    >>> cfg = RewardConfig()
    >>> compute_reward(valid=True, score=0.8, stages_reached=6, config=cfg, higher_is_better=True,
    ...                baseline_score=0.6, perfect_score=1.0)
    1.1
    >>> compute_reward(valid=False, score=None, stages_reached=2, config=cfg, higher_is_better=True,
    ...                baseline_score=0.6, perfect_score=1.0)
    -0.8
    >>> compute_reward(valid=True, score=0.3, stages_reached=6, config=RewardConfig(preset="paper"),
    ...                higher_is_better=False, baseline_score=None, perfect_score=0.0)
    0.3
    >>> compute_reward(valid=False, score=None, stages_reached=1, config=RewardConfig(preset="paper"),
    ...                higher_is_better=True, baseline_score=None, perfect_score=1.0)
    -9.9
    """
    if not 0 <= stages_reached <= STAGE_COUNT:
        raise ValueError(f"stages_reached must be between 0 and {STAGE_COUNT}, got {stages_reached}.")
    if not valid or score is None or not math.isfinite(score):
        return failure_reward(config, stages_reached)
    credit = config.credit_per_stage * stages_reached if config.credit_valid else 0.0
    term = _score_term(
        score,
        config=config,
        higher_is_better=higher_is_better,
        baseline_score=baseline_score,
        perfect_score=perfect_score,
        leaderboard=leaderboard,
    )
    return round(term + credit, 12)
