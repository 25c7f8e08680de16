"""Duration weights on a two-action problem whose exact policy gradient is known (rl_core.learner, item 2).

Two families, "fast" (Δt = 1 s) and "slow" (Δt = 2 s), π = (0.8, 0.2), fixed advantages A = (-1, 2). The
exact gradient of J = E_π[A] with respect to the logits is Σ_a π(a) A(a) ∇log π(a). A batch whose
completions arrive ∝ π/Δt (slots whose lineages keep their family from a cold start) holds 8 fast and 1
slow; one whose completions arrive ∝ π (the shared pool) holds 4 fast and 1 slow. The loop-level tests run
the real loop: slots that keep their family (keep probability 0.9997, so a continuation's score function is
about 3e-4, not e^-50) arrive ∝ 1/Δt per slot and slot-rate weights restore each slot's share of the
gradient; slots whose lineages mix arrive in per-step proportions and the weights stay near 1.
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
    period_s = DURATION_S[family] if continues_slot else None  # a persistent lineage: its slot's period
    return Experience(sample, 0.0, DURATION_S[family], True, slot_period_s=period_s)


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


def test_slot_rate_weights_give_the_exact_gradient_where_completions_arrive_in_proportion_to_pi_over_dt():
    policy = two_action_policy()
    batch = [experience(f, continues_slot=True) for f in SLOTS_BATCH]
    grad = learner_gradient(policy, batch, LearnerConfig(duration_weighting="slot_rate"))
    torch.testing.assert_close(grad, exact_gradient(policy))


def test_slot_rate_weights_give_the_exact_gradient_where_completions_arrive_in_proportion_to_pi():
    policy = two_action_policy()
    batch = [experience(f, continues_slot=False) for f in POOL_BATCH]
    grad = learner_gradient(policy, batch, LearnerConfig(duration_weighting="slot_rate"))
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
    *, attempts: int, keep_bonus: float, p_fast: float = 0.5, improve_prob: float = 1.0, sync: bool = False
) -> RecordingLearner:
    """The real loop in slot mode on the two actions (π fixed), 8 slots, a batch of 16."""
    table = {f: FamilySpec(median_s=DURATION_S[f], sigma=0.0, score_mean=0.5) for f in FAMILIES}
    policy = TablePolicy(FAMILIES, init_logits=[math.log(p_fast / (1 - p_fast)), 0.0], keep_bonus=keep_bonus)
    learner = RecordingLearner(policy, LearnerConfig(objective="reinforce", lr=0.0))
    config = LoopConfig(attempts=attempts, actors=8, batch=8 if sync else 16, sync=sync,
                        improve_prob=improve_prob, improve_from="slots")  # fmt: skip
    run_loop(policy=policy, learner=learner, executor=SimulatedExecutor(table, 8, seed=3), tasks=[TASK],
             config=config)  # fmt: skip
    return learner


def experiences(learner: RecordingLearner, *, weighted: bool) -> list[tuple[Experience, float]]:
    """Every sample the learner saw, with its slot-rate weight (or 1)."""
    pairs = []
    for batch in learner.batches:
        weights = learner.weights(batch) if weighted else torch.ones(len(batch))
        pairs += list(zip(batch, weights.tolist(), strict=True))
    return pairs


def slow_share(learner: RecordingLearner, *, weighted: bool) -> float:
    """The slow family's share of the learner's samples, each counted with its weight or with 1."""
    pairs = experiences(learner, weighted=weighted)
    return sum(w for e, w in pairs if e.sample.info["family"] == "slow") / sum(w for _, w in pairs)


def expected_score_term(policy: TablePolicy, prompt: Prompt) -> torch.Tensor:
    """E_{a~π(·|prompt)}[A(a) ∇_z log π(a|prompt)] = π⊙A - π (π·A): the update a prompt asks for on average
    over its actions, so the comparison below sees where prompts arrive, not which actions were drawn."""
    probs = torch.softmax(policy._logits_for([prompt])[0].detach(), dim=0)
    advantages = torch.tensor([ADVANTAGE[f] for f in FAMILIES])
    return probs * advantages - probs * (probs @ advantages)


def continuing_update(learner: RecordingLearner, *, weighted: bool) -> torch.Tensor:
    """The weighted mean expected score term over the samples that continued their slot."""
    pairs = [(e, w) for e, w in experiences(learner, weighted=weighted) if e.sample.prompt.kind == "improve"]
    policy = learner.policy
    assert isinstance(policy, TablePolicy)
    total = sum((w * expected_score_term(policy, e.sample.prompt) for e, w in pairs), torch.zeros(2))
    return total / sum(w for _, w in pairs)


def test_persistent_slots_over_sample_fast_slots_and_slot_rate_weights_restore_each_slots_update():
    # π = (0.7, 0.3) and a keep bonus of 10: an improve keeps its family with probability 1 - 2e-5 (from
    # fast) or 1 - 1e-4 (from slow), so lineages keep their family over the run (none switches with this
    # seed), yet continuations carry gradient: a continuation's expected update is ~1e-4, and the ~4,000 of
    # them add up to more than a twentieth of the 8 solves' (at keep bonus 50 it was e^-40 of it). The two
    # families' continuations ask for different updates, so their mix matters.
    learner = run_two_actions(attempts=4000, keep_bonus=10.0, p_fast=0.7)
    firsts = [e for e, _ in experiences(learner, weighted=False) if e.sample.prompt.kind == "solve"]
    assert len(firsts) == 8  # each slot's first attempt (nothing to continue yet), drawn from π
    slow_slots = sum(e.sample.info["family"] == "slow" for e in firsts) / 8
    assert 0 < slow_slots < 1, "the seed must put both families in some slot"
    per_time = (slow_slots / 2.0) / (slow_slots / 2.0 + (1 - slow_slots) / 1.0)  # each slot ∝ 1/Δt
    assert slow_share(learner, weighted=False) == pytest.approx(per_time, abs=0.02)
    assert slow_share(learner, weighted=True) == pytest.approx(slow_slots, abs=0.02)
    # the synchronous slots' update: every slot's continuations in equal measure
    policy = learner.policy
    assert isinstance(policy, TablePolicy)
    terms = {f: expected_score_term(policy, firsts_prompt(f)) for f in FAMILIES}
    target = slow_slots * terms["slow"] + (1 - slow_slots) * terms["fast"]
    solves = sum(expected_score_term(policy, e.sample.prompt) for e in firsts)
    continuations = len(experiences(learner, weighted=False)) - len(firsts)
    assert continuations * target.abs().max() > 0.05 * solves.abs().max()  # continuations carry gradient
    weighted, naive = continuing_update(learner, weighted=True), continuing_update(learner, weighted=False)
    torch.testing.assert_close(weighted, target, rtol=0.05, atol=0.0)
    assert (naive - target).abs().max() > 0.2 * target.abs().max()  # unweighted, fast slots outvote slow


def firsts_prompt(family: str) -> Prompt:
    """An improve prompt continuing a program of `family`."""
    return Prompt(TASK, "improve", PreviousSolution(render_program(family), "", 0.5))


def test_where_lineages_mix_slots_complete_in_per_step_proportions_and_slot_rate_weights_stay_near_one():
    # half the prompts are solves and an improve keeps its family with probability e/(1+e) = 0.73: a
    # lineage changes family within a few attempts, so by the renewal theorem nothing is over-sampled
    mixing = run_two_actions(attempts=4000, keep_bonus=1.0, improve_prob=0.5)
    synchronous = run_two_actions(attempts=4000, keep_bonus=1.0, improve_prob=0.5, sync=True)
    per_step = slow_share(synchronous, weighted=False)
    assert slow_share(mixing, weighted=False) == pytest.approx(per_step, abs=0.02)
    assert slow_share(mixing, weighted=True) == pytest.approx(per_step, abs=0.02)
    weights = [w for e, w in experiences(mixing, weighted=True) if e.sample.prompt.kind == "improve"]
    assert max(abs(w - 1.0) for w in weights[len(weights) // 2 :]) < 0.1  # periods converge across slots


def test_the_shared_pool_delivers_completions_in_proportion_to_pi_and_leaves_them_unweighted():
    table = {f: FamilySpec(median_s=DURATION_S[f], sigma=0.0, score_mean=0.5) for f in FAMILIES}
    policy = TablePolicy(FAMILIES, init_logits=[math.log(4.0), 0.0])  # π = (0.8, 0.2)
    learner = RecordingLearner(policy, LearnerConfig(objective="reinforce", lr=0.0))
    config = LoopConfig(attempts=4000, actors=8, batch=16, improve_prob=1.0, improve_from="pool")
    run_loop(policy=policy, learner=learner, executor=SimulatedExecutor(table, 8, seed=3), tasks=[TASK],
             config=config)  # fmt: skip
    assert all(e.slot_period_s is None for batch in learner.batches for e in batch)
    assert slow_share(learner, weighted=False) == pytest.approx(0.2, abs=0.03)
