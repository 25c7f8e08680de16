"""How much each finished attempt's term counts in an update: its advantage A_k against a baseline, and its
duration weight w_k (rl_core.learner applies both).

1. Sequence-level advantages A_k (one reward per program, no value network), against a baseline chosen by
   `LearnerConfig.advantage`: a running mean per (competition, prompt kind), the mean of the batch's samples
   of the same prompt, or the batch's own mean and standard deviation (the ablation arm).
2. Duration weights w_k (`duration_aware`, `duration_weighting`; time never enters the reward, it only
   reweights each sample's term; DESIGN.md §2). The policy gradient wants, per prompt the learner is meant to
   train on, E_{a~π}[A(a) ∇log π(a)]; the learner sees completions. A weight is exact only where it undoes
   how completions were actually selected, so the question is where selection depends on Δt:
   - Where an actor's next prompt does not depend on which attempt freed it (the shared improve pool,
     every solve prompt, the synchronous mode), each launch is a fresh draw from π, and every launch is
     learned from once: the loop never cancels or drops an attempt it launched (a wall budget stops new
     launches and awaits those in flight). Completions then follow launches, which follow π; a slow result
     only arrives later, in a later batch, a lag no weight undoes (the PPO ratio handles its staleness). The
     exact weight is 1. (A loop that cut a batch from the first completions and cancelled the rest, or killed
     what was in flight at a deadline, would lose slow attempts; its exact weight would be launched /
     completed per action and policy version. This loop has no such cut, so it has no such weight.)
   - Where a slot's next prompt continues its own latest program (`improve_from="slots"`, asynchronous;
     the paper's batch slots), the prompt a continuation answers depends on the slot, and a slot is clocked
     by its own attempts: slot i completes attempts at the rate 1 / T_i, T_i being the mean time from one of
     its launches to the next (its period: its attempts' Δt plus the sampling between them, which takes
     about as long in every slot, so T_i is taken as the mean Δt of its attempts), where the synchronous
     slots give every slot one attempt per round. The learner should see each slot's
     continuations in equal measure, so the exact weight of a continuing sample is T_i / mean(T) over the
     batch's continuing samples. "slot_rate" weights (the default) are that, with T_i estimated over the
     whole run up to the sample's launch (`slot_period_s`, rl_core.improve_prompts), and 1 for every
     sample whose prompt did not continue its slot. Two limits check it. A lineage that keeps its
     family from a cold start has T_i = Δt of that family, so the weight is the paper's Δt / mean(Δt),
     exactly where the paper's derivation holds (q(a) ∝ π(a)/Δt(a)). A lineage that changes family within a
     few attempts has, by the renewal theorem, completions in per-step proportions and a period that
     converges to the same mean as every other slot's, so the weight tends to 1. The earlier "lineage"
     weights used the Δt of the single attempt that freed the slot: where lineages mix, that Δt correlates
     with the family the continuation picks, which biased the expected gradient (an independent review
     measured it; with them bench/duration_bias.py ended lower than with no weights, 0.490 against 0.572,
     p = 0.031). A slot's whole-run period carries less of that correlation the more attempts the slot has
     run: with mixing lineages the two-action test finds the weights within 0.1 of 1 after the first half of
     the run, and bench/duration_bias.py measures no harm where lineages mix and a gain where they persist.
   "paper" weights every sample by its own Δt / mean(Δt) whatever the arrival process (the paper's formula,
   kept for ablations): it is exact only for lineages that never switch family, from a cold start; where
   completions follow π it is not a correction but a pull toward slow programs (bench/duration_bias.py
   measures it). An attempt that ran nothing (a response without a program) is given the mean Δt of the
   batch's attempts that ran, so its paper weight is 1 (its Δt of 0 would silence it); in its slot's
   period it counts as the instant attempt it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from rl_core.policy import Sample


def duration_weights(durations_s: torch.Tensor) -> torch.Tensor:
    """Per-sample weights Δt_k / mean(Δt): the paper's correction (arXiv 2509.01684), right where attempts
    return at a rate ∝ π(a)/Δt(a) (see the module docstring for where that holds).

    Args:
        durations_s: (B,) wall-clock execution seconds of each attempt, > 0.
    Returns:
        (B,) weights with mean 1.

    >>> duration_weights(torch.tensor([1.0, 3.0])).tolist()
    [0.5, 1.5]
    """
    return durations_s / durations_s.mean()


def paper_weights(durations_s: Sequence[float], ran: Sequence[bool], *, floor_s: float) -> torch.Tensor:
    """(B,) Δt_k / mean(Δt), an attempt that ran nothing given the mean Δt of those that ran (weight 1).

    >>> paper_weights([1.0, 0.0, 3.0], [True, False, True], floor_s=1e-3).tolist()
    [0.5, 1.0, 1.5]
    """
    measured = [d for d, r in zip(durations_s, ran, strict=True) if r]
    stand_in = sum(measured) / len(measured) if measured else 1.0
    durations = [d if r else stand_in for d, r in zip(durations_s, ran, strict=True)]
    return duration_weights(torch.tensor(durations, dtype=torch.float).clamp(min=floor_s))


def slot_rate_weights(slot_periods_s: Sequence[float | None], *, floor_s: float) -> torch.Tensor:
    """(B,) 1 for a sample whose prompt did not continue its slot (None), and T_i / mean(T) over the
    continuing samples otherwise, T_i being the period of the sample's slot (module docstring, item 2).

    >>> slot_rate_weights([None, 1.0, 3.0, None], floor_s=1e-3).tolist()
    [1.0, 0.5, 1.5, 1.0]
    """
    weights = torch.ones(len(slot_periods_s))
    rows = [k for k, d in enumerate(slot_periods_s) if d is not None]
    if rows:
        clocks = torch.tensor([slot_periods_s[k] for k in rows], dtype=torch.float).clamp(min=floor_s)
        weights[rows] = duration_weights(clocks)
    return weights


class RunningBaseline:
    """An exponential moving average of reward per key (competition slug, prompt kind).

    Call `advantages` before `observe` for each batch, so that a sample is never its own baseline
    (except for a key seen for the first time, which starts at its batch mean).
    """

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.values: dict[tuple[str, str], float] = {}

    def advantages(self, rewards: torch.Tensor, keys: Sequence[tuple[str, str]]) -> torch.Tensor:
        """(B,) r_k - b(key_k), with b from earlier batches."""
        means = _group_means(rewards, keys)
        return torch.stack(
            [r - self.values.get(key, means[key]) for r, key in zip(rewards, keys, strict=True)]
        )

    def observe(self, rewards: torch.Tensor, keys: Sequence[tuple[str, str]]) -> None:
        """Move each key's baseline toward its mean reward in this batch."""
        for key, mean in _group_means(rewards, keys).items():
            old = self.values.get(key, mean)
            self.values[key] = old + self.rate * (mean - old)


def _group_means(rewards: torch.Tensor, keys: Sequence[Any]) -> dict[Any, float]:
    groups: dict[Any, list[float]] = {}
    for reward, key in zip(rewards.tolist(), keys, strict=True):
        groups.setdefault(key, []).append(reward)
    return {key: sum(values) / len(values) for key, values in groups.items()}


def group_mean_advantages(rewards: torch.Tensor, keys: Sequence[Any]) -> torch.Tensor:
    """(B,) r_k minus the mean reward of the batch's samples with the same prompt key.

    >>> group_mean_advantages(torch.tensor([1.0, 3.0, 5.0]), ["a", "a", "b"]).tolist()
    [-1.0, 1.0, 0.0]
    """
    means = _group_means(rewards, keys)
    return rewards - torch.tensor([means[key] for key in keys], dtype=rewards.dtype)


def normalized_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """(B,) (r - mean) / std over the batch; zeros when all rewards are equal.

    >>> normalized_advantages(torch.tensor([1.0, 3.0])).tolist()
    [-0.7071067690849304, 0.7071067690849304]
    """
    centred = rewards - rewards.mean()
    std = rewards.std() if len(rewards) > 1 else torch.tensor(0.0)
    return centred / std if std > 0 else torch.zeros_like(rewards)


def prompt_key(sample: Sample) -> tuple[str, str, str]:
    """Identifies "the same prompt": competition, kind, and the earlier solution's code for improve."""
    previous = sample.prompt.previous.code if sample.prompt.previous is not None else ""
    return (sample.prompt.task.slug, sample.prompt.kind, previous)
