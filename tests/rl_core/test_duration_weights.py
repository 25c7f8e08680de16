"""Duration weights on a two-action problem whose exact policy gradient is known (rl_core.learner, item 2).

Two families, "fast" (Δt = 1 s) and "slow" (Δt = 2 s), π = (0.8, 0.2), fixed advantages A = (-1, 2). The
exact gradient of J = E_π[A] with respect to the logits is Σ_a π(a) A(a) ∇log π(a). A batch whose
completions arrive ∝ π/Δt (the paper's slots) holds 8 fast and 1 slow; one whose completions arrive ∝ π
(the shared pool) holds 4 fast and 1 slow. The loop-level tests check that the real loop produces these
two arrival regimes and the parent durations the lineage weights need.
"""

from __future__ import annotations

import math

import pytest
import torch

from rl_core.executors import FamilySpec, SimulatedExecutor
from rl_core.learner import Learner, LearnerConfig, policy_loss
from rl_core.loop import LoopConfig, run_loop
from rl_core.policies.table import TablePolicy, render_program
from rl_core.policy import Experience, PreviousSolution, Prompt, Sample, TaskInfo

FAMILIES = ("fast", "slow")
DURATION_S = {"fast": 1.0, "slow": 2.0}
ADVANTAGE = {"fast": -1.0, "slow": 2.0}
TASK = TaskInfo("two-actions", "a two-action problem", "accuracy", True, "id", ("y",), 60.0)


def two_action_policy() -> TablePolicy:
    return TablePolicy(FAMILIES, init_logits=[math.log(4.0), 0.0])  # π = (0.8, 0.2)


def exact_gradient(policy: TablePolicy) -> torch.Tensor:
    """d/dz of -Σ_a π(a) A(a) log π(a) with π held fixed in the coefficients: -Σ_a π(a) A(a) (e_a - π)."""
    probs = torch.softmax(policy.logits.detach(), dim=0)
    grad = torch.zeros(2)
    for index, family in enumerate(FAMILIES):
        grad -= probs[index] * ADVANTAGE[family] * (torch.eye(2)[index] - probs)
    return grad


def experience(family: str, *, continues_slot: bool) -> Experience:
    previous = PreviousSolution(render_program(family), "", 0.5) if continues_slot else None
    prompt = Prompt(TASK, "improve" if continues_slot else "solve", previous)
    sample = Sample(prompt, render_program(family), (0.0,), 0, {"family": family})
    parent_s = DURATION_S[family] if continues_slot else None  # a persistent lineage: the parent's family
    return Experience(sample, 0.0, DURATION_S[family], True, parent_duration_s=parent_s)


def learner_gradient(policy: TablePolicy, batch: list[Experience], config: LearnerConfig) -> torch.Tensor:
    """The gradient of the learner's REINFORCE loss on `batch` with the fixed advantages."""
    learner = Learner(policy, config)
    scored = policy.score([e.sample for e in batch])
    advantages = torch.tensor([ADVANTAGE[e.sample.info["family"]] for e in batch])
    loss, _ = policy_loss(scored, torch.zeros(len(batch), 1), advantages, learner.weights(batch),
                          objective="reinforce")  # fmt: skip
    policy.zero_grad()
    loss.backward()
    assert policy.logits.grad is not None
    return policy.logits.grad.clone()


SLOTS_BATCH = ["fast"] * 8 + ["slow"]  # ∝ π/Δt: 0.8/1 against 0.2/2
POOL_BATCH = ["fast"] * 4 + ["slow"]  # ∝ π


def test_lineage_weights_give_the_exact_gradient_where_completions_arrive_in_proportion_to_pi_over_dt():
    policy = two_action_policy()
    batch = [experience(f, continues_slot=True) for f in SLOTS_BATCH]
    grad = learner_gradient(policy, batch, LearnerConfig(duration_weighting="lineage"))
    torch.testing.assert_close(grad, exact_gradient(policy))


def test_lineage_weights_give_the_exact_gradient_where_completions_arrive_in_proportion_to_pi():
    policy = two_action_policy()
    batch = [experience(f, continues_slot=False) for f in POOL_BATCH]
    grad = learner_gradient(policy, batch, LearnerConfig(duration_weighting="lineage"))
    torch.testing.assert_close(grad, exact_gradient(policy))


def test_paper_weights_are_exact_only_where_completions_arrive_in_proportion_to_pi_over_dt():
    policy = two_action_policy()
    slots = [experience(f, continues_slot=True) for f in SLOTS_BATCH]
    torch.testing.assert_close(
        learner_gradient(policy, slots, LearnerConfig(duration_weighting="paper")), exact_gradient(policy)
    )
    pool = [experience(f, continues_slot=False) for f in POOL_BATCH]
    biased = learner_gradient(policy, pool, LearnerConfig(duration_weighting="paper"))
    assert biased[1] < exact_gradient(policy)[1] - 0.05  # descent raises the slow logit more than it should


def test_unweighted_gradient_is_biased_toward_the_fast_action_where_completions_arrive_pi_over_dt():
    policy = two_action_policy()
    batch = [experience(f, continues_slot=True) for f in SLOTS_BATCH]
    naive = learner_gradient(policy, batch, LearnerConfig(duration_aware=False))
    assert naive[1] > exact_gradient(policy)[1] + 0.05  # the slow action gets too little of its push


class RecordingLearner(Learner):
    """A learner that keeps every batch it was given (lr 0: the policy, and so π, stays fixed)."""

    def __init__(self, policy: TablePolicy, config: LearnerConfig) -> None:
        super().__init__(policy, config)
        self.batches: list[list[Experience]] = []

    def update(self, batch, *, current_version):  # type: ignore[no-untyped-def]
        self.batches.append(list(batch))
        return super().update(batch, current_version=current_version)


def run_two_actions(
    improve_from: str, *, attempts: int, keep_bonus: float, p_fast: float
) -> RecordingLearner:
    table = {f: FamilySpec(median_s=DURATION_S[f], sigma=0.0, score_mean=0.5) for f in FAMILIES}
    logits = [math.log(p_fast / (1 - p_fast)), 0.0]
    policy = TablePolicy(FAMILIES, init_logits=logits, keep_bonus=keep_bonus)
    learner = RecordingLearner(policy, LearnerConfig(objective="reinforce", lr=0.0))
    config = LoopConfig(attempts=attempts, actors=8, batch=16, improve_prob=1.0, improve_from=improve_from)  # type: ignore[arg-type]
    run_loop(policy=policy, learner=learner, executor=SimulatedExecutor(table, 8, seed=3), tasks=[TASK],
             config=config)  # fmt: skip
    return learner


def slow_share(learner: RecordingLearner, *, weighted: bool) -> float:
    """The slow family's share of the learner's samples, each counted with its lineage weight or with 1."""
    total = slow = 0.0
    for batch in learner.batches:
        weights = learner.weights(batch) if weighted else torch.ones(len(batch))
        for e, w in zip(batch, weights.tolist(), strict=True):
            total += w
            slow += w * (e.sample.info["family"] == "slow")
    return slow / total


def test_the_shared_pool_delivers_completions_in_proportion_to_pi_and_leaves_them_unweighted():
    learner = run_two_actions("pool", attempts=4000, keep_bonus=0.0, p_fast=0.8)
    assert all(e.parent_duration_s is None for batch in learner.batches for e in batch)
    assert slow_share(learner, weighted=False) == pytest.approx(0.2, abs=0.03)


def test_persistent_slots_deliver_pi_over_dt_and_lineage_weights_restore_each_slots_share():
    # a slot never leaves its first family; π uniform, so both families hold some of the 8 slots
    learner = run_two_actions("slots", attempts=4000, keep_bonus=50.0, p_fast=0.5)
    firsts = [e for batch in learner.batches for e in batch if e.sample.prompt.kind == "solve"]
    assert len(firsts) == 8  # each slot's first attempt (nothing to continue yet), drawn from π
    slow_slots = sum(e.sample.info["family"] == "slow" for e in firsts) / 8
    assert 0 < slow_slots < 1, "the seed must put both families in some slot"
    per_time = (slow_slots / 2.0) / (slow_slots / 2.0 + (1 - slow_slots) / 1.0)  # ∝ π/Δt
    assert slow_share(learner, weighted=False) == pytest.approx(per_time, abs=0.02)
    assert slow_share(learner, weighted=True) == pytest.approx(slow_slots, abs=0.02)
