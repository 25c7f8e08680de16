"""The learner: duration weights, the REINFORCE and PPO losses, the baselines, and its metrics."""

from __future__ import annotations

import pytest
import torch

from rl_core.advantages import RunningBaseline, group_mean_advantages, normalized_advantages
from rl_core.learner import Learner, LearnerConfig, kl_to_reference, padded_old_logprobs, policy_loss
from rl_core.policies.table import TablePolicy, render_program
from rl_core.policy import Experience, PreviousSolution, Prompt, Sample, Scored, TaskInfo

FAMILIES = ("a", "b", "c")


def make_task(slug: str = "comp") -> TaskInfo:
    return TaskInfo(slug, "a task", "accuracy", True, "id", ("y",), 60.0)


def make_sample(family: str, *, logprob: float = -1.0, version: int = 0, task: TaskInfo | None = None,
                kind: str = "solve") -> Sample:  # fmt: skip
    previous = PreviousSolution("print(0)", "", 0.5) if kind == "improve" else None
    prompt = Prompt(task=task or make_task(), kind=kind, previous=previous)  # type: ignore[arg-type]
    return Sample(prompt, render_program(family), (logprob,), version, {"family": family})


def make_experience(family: str, reward: float, duration_s: float, **kwargs) -> Experience:
    valid = kwargs.pop("valid", True)
    return Experience(make_sample(family, **kwargs), reward, duration_s, valid)


def hand_gradient(probs: torch.Tensor, chosen: list[int], coeffs: list[float]) -> torch.Tensor:
    """d/dz of -mean_k c_k log softmax(z)[a_k] = -mean_k c_k (onehot(a_k) - p)."""
    grad = torch.zeros_like(probs)
    for index, coeff in zip(chosen, coeffs, strict=True):
        grad -= coeff * (torch.nn.functional.one_hot(torch.tensor(index), len(probs)).float() - probs)
    return grad / len(chosen)


def test_reinforce_gradient_with_duration_weights_equals_the_hand_computed_one():
    policy = TablePolicy(FAMILIES, init_logits=[0.3, -0.2, 0.5])
    samples = [make_sample("a"), make_sample("c"), make_sample("a")]
    advantages, weights = torch.tensor([1.0, -2.0, 0.5]), torch.tensor([0.2, 1.3, 1.5])
    scored = policy.score(samples)
    loss, _ = policy_loss(scored, torch.zeros(3, 1), advantages, weights, objective="reinforce")
    loss.backward()
    probs = torch.softmax(policy.logits.detach(), dim=0)
    expected = hand_gradient(probs, [0, 2, 0], (weights * advantages).tolist())
    torch.testing.assert_close(policy.logits.grad, expected)


def test_ppo_gradient_at_ratio_one_equals_the_weighted_reinforce_gradient():
    policy = TablePolicy(FAMILIES, init_logits=[0.3, -0.2, 0.5])
    samples = [make_sample("b"), make_sample("c")]
    advantages, weights = torch.tensor([2.0, -1.0]), torch.tensor([0.5, 1.5])
    scored = policy.score(samples)
    old = scored.logprobs.detach().clone()
    loss, clip_fraction = policy_loss(scored, old, advantages, weights, objective="ppo", clip_eps=0.2)
    loss.backward()
    probs = torch.softmax(policy.logits.detach(), dim=0)
    torch.testing.assert_close(policy.logits.grad, hand_gradient(probs, [1, 2], [1.0, -1.5]))
    assert clip_fraction == 0.0


def ppo_gradient(old_logprob_offset: float, advantage: float) -> torch.Tensor:
    policy = TablePolicy(FAMILIES)
    scored = policy.score([make_sample("a")])
    old = scored.logprobs.detach() + old_logprob_offset
    loss, _ = policy_loss(
        scored, old, torch.tensor([advantage]), torch.ones(1), objective="ppo", clip_eps=0.2
    )
    loss.backward()
    return policy.logits.grad


def test_ppo_gives_no_gradient_to_a_ratio_above_the_clip_with_a_positive_advantage():
    assert torch.count_nonzero(ppo_gradient(old_logprob_offset=-1.0, advantage=1.0)) == 0


def test_ppo_gives_no_gradient_to_a_ratio_below_the_clip_with_a_negative_advantage():
    assert torch.count_nonzero(ppo_gradient(old_logprob_offset=+1.0, advantage=-1.0)) == 0


def test_ppo_still_pushes_a_clipped_ratio_back_toward_one():
    grad = ppo_gradient(
        old_logprob_offset=-1.0, advantage=-1.0
    )  # ratio e > 1.2 with A < 0: keep the gradient
    assert grad[0] > 0  # descent lowers the logit of the over-sampled family


def test_ppo_reports_the_fraction_of_clipped_tokens():
    policy = TablePolicy(FAMILIES)
    scored = policy.score([make_sample("a"), make_sample("b")])
    old = scored.logprobs.detach() + torch.tensor([[-1.0], [0.0]])
    _, clip_fraction = policy_loss(scored, old, torch.ones(2), torch.ones(2), objective="ppo")
    assert clip_fraction == 0.5


def test_learner_update_takes_its_step_along_the_duration_weighted_gradient():
    policy = TablePolicy(FAMILIES, init_logits=[0.1, 0.2, -0.3])
    config = LearnerConfig(objective="reinforce", lr=0.1, max_grad_norm=1e9, duration_weighting="paper")
    batch = [make_experience("a", 1.0, 1.0), make_experience("b", 3.0, 2.0), make_experience("c", 2.0, 6.0)]
    probs = torch.softmax(policy.logits.detach(), dim=0)
    Learner(policy, config).update(batch, current_version=0)
    # First batch: the running baseline starts at the batch mean 2.0, so A = (-1, 1, 0); w = Δt / 3.
    expected = hand_gradient(probs, [0, 1, 2], [-1 / 3, 2 / 3, 0.0])
    torch.testing.assert_close(policy.logits.grad, expected)  # the gradient of the (only) step


def test_duration_aware_off_gives_weights_of_one():
    learner = Learner(TablePolicy(FAMILIES), LearnerConfig(duration_aware=False))
    batch = [make_experience("a", 0.0, 1.0), make_experience("b", 0.0, 100.0)]
    assert learner.weights(batch).tolist() == [1.0, 1.0]


def test_paper_weights_are_each_duration_over_the_batch_mean():
    learner = Learner(TablePolicy(FAMILIES), LearnerConfig(duration_weighting="paper"))
    batch = [make_experience("a", 0.0, 1.0), make_experience("b", 0.0, 3.0)]
    assert learner.weights(batch).tolist() == [0.5, 1.5]


def test_paper_weights_give_an_attempt_that_ran_nothing_the_weight_of_an_average_attempt():
    learner = Learner(TablePolicy(FAMILIES), LearnerConfig(duration_weighting="paper"))
    unrun = Experience(make_sample("a"), -1.0, 0.0, False, ran=False)
    batch = [make_experience("a", 0.0, 2.0), unrun, make_experience("b", 0.0, 4.0)]
    assert learner.weights(batch).tolist() == pytest.approx([2 / 3, 1.0, 4 / 3])


def test_slot_rate_weights_are_one_for_samples_whose_prompt_did_not_continue_their_slot():
    learner = Learner(TablePolicy(FAMILIES), LearnerConfig())
    batch = [make_experience("a", 0.0, 1.0), make_experience("b", 0.0, 300.0)]
    assert learner.weights(batch).tolist() == [1.0, 1.0]


def test_slot_rate_weights_are_each_slots_period_over_the_continuing_samples_mean():
    learner = Learner(TablePolicy(FAMILIES), LearnerConfig())
    continuing = [
        Experience(make_sample("a", kind="improve"), 0.0, 5.0, True, slot_period_s=period_s)
        for period_s in (1.0, 3.0)
    ]
    batch = [make_experience("c", 0.0, 7.0), *continuing]
    assert learner.weights(batch).tolist() == [1.0, 0.5, 1.5]


def test_running_baseline_starts_at_the_batch_mean_of_a_new_key():
    baseline = RunningBaseline(rate=0.1)
    advantages = baseline.advantages(torch.tensor([1.0, 3.0]), [("c", "solve"), ("c", "solve")])
    assert advantages.tolist() == [-1.0, 1.0]


def test_running_baseline_moves_toward_each_batch_mean_at_its_rate():
    baseline = RunningBaseline(rate=0.25)
    key = ("c", "solve")
    baseline.observe(torch.tensor([2.0]), [key])
    baseline.observe(torch.tensor([6.0, 6.0]), [key, key])
    assert baseline.values[key] == 3.0


def test_running_baseline_is_kept_per_competition_and_prompt_kind():
    learner = Learner(TablePolicy(FAMILIES), LearnerConfig(baseline_rate=1.0))
    other = make_task("other")
    learner.advantages([make_experience("a", 1.0, 1.0), make_experience("a", 5.0, 1.0, kind="improve")])
    advantages = learner.advantages(
        [
            make_experience("a", 2.0, 1.0),
            make_experience("a", 2.0, 1.0, kind="improve"),
            make_experience("a", 2.0, 1.0, task=other),
        ]
    )
    assert advantages.tolist() == [1.0, -3.0, 0.0]


def test_group_mean_advantages_centre_the_samples_of_each_prompt():
    rewards = torch.tensor([1.0, 3.0, 10.0, 4.0])
    advantages = group_mean_advantages(rewards, ["p", "p", "q", "q"])
    assert advantages.tolist() == [-1.0, 1.0, 3.0, -3.0]


def test_group_mean_treats_improve_prompts_of_different_solutions_as_different_prompts():
    learner = Learner(TablePolicy(FAMILIES), LearnerConfig(advantage="group_mean"))
    batch = [make_experience("a", 1.0, 1.0), make_experience("a", 3.0, 1.0, kind="improve")]
    assert learner.advantages(batch).tolist() == [0.0, 0.0]


def test_batch_normalized_advantages_have_zero_mean_and_unit_std():
    advantages = normalized_advantages(torch.tensor([-10.0, 0.5, 0.7, 0.9]))
    assert abs(float(advantages.mean())) < 1e-6
    assert abs(float(advantages.std()) - 1.0) < 1e-6


def test_kl_to_the_reference_is_zero_when_the_policies_agree_and_positive_otherwise():
    logprobs = torch.log(torch.tensor([[0.5, 0.25]]))
    mask = torch.ones_like(logprobs, dtype=torch.bool)
    same = Scored(logprobs, mask, torch.zeros(1), ref_logprobs=logprobs.clone())
    other = Scored(logprobs, mask, torch.zeros(1), ref_logprobs=logprobs - 0.5)
    assert float(kl_to_reference(same)) == 0.0
    assert float(kl_to_reference(other)) > 0.0


def test_old_logprobs_of_a_different_length_than_the_mask_are_refused():
    with pytest.raises(ValueError, match="log-probs"):
        padded_old_logprobs([make_sample("a")], torch.ones(1, 2, dtype=torch.bool))


def test_update_bumps_the_policy_version():
    policy = TablePolicy(FAMILIES)
    Learner(policy, LearnerConfig()).update([make_experience("a", 1.0, 1.0)], current_version=0)
    assert policy.version == 1


def test_update_reports_staleness_validity_and_duration_metrics():
    learner = Learner(TablePolicy(FAMILIES), LearnerConfig(duration_weighting="paper"))
    batch = [
        make_experience("a", 1.0, 2.0, version=3),
        make_experience("b", -10.0, 6.0, version=1, valid=False),
    ]
    metrics = learner.update(batch, current_version=4)
    assert metrics["charts/staleness_mean"] == 2.0
    assert metrics["charts/staleness_max"] == 3.0
    assert metrics["charts/valid_rate"] == 0.5
    assert metrics["charts/duration_mean_s"] == 4.0
    assert metrics["charts/duration_weight_max"] == 1.5
    assert metrics["charts/reward_max"] == 1.0


def test_update_reports_the_mean_generation_speed_of_samples_that_carry_one():
    learner = Learner(TablePolicy(FAMILIES), LearnerConfig())
    batch = [make_experience("a", 1.0, 2.0), make_experience("b", 0.0, 1.0)]
    assert "charts/tokens_per_s" not in learner.update(batch, current_version=0)
    for experience, speed in zip(batch, (30.0, 50.0), strict=True):
        experience.sample.info["tokens_per_s"] = speed
    assert learner.update(batch, current_version=1)["charts/tokens_per_s"] == 40.0


def test_update_refuses_an_empty_batch():
    with pytest.raises(ValueError, match="at least one"):
        Learner(TablePolicy(FAMILIES), LearnerConfig()).update([], current_version=0)


def test_repeated_updates_move_probability_to_the_rewarded_family():
    policy = TablePolicy(FAMILIES)
    learner = Learner(policy, LearnerConfig(lr=0.05))
    generator = torch.Generator().manual_seed(0)
    for _ in range(40):
        samples = policy.sample([Prompt(task=make_task(), kind="solve")] * 16, generator=generator)
        batch = [Experience(s, 1.0 if s.info["family"] == "c" else 0.0, 1.0, True) for s in samples]
        learner.update(batch, current_version=policy.version)
    assert policy.probabilities()["c"] > 0.9


def test_learner_state_round_trips_into_a_new_learner():
    policy = TablePolicy(FAMILIES)
    learner = Learner(policy, LearnerConfig(lr=0.05))
    learner.update([make_experience("a", 1.0, 1.0), make_experience("b", 0.0, 2.0)], current_version=0)
    fresh = Learner(TablePolicy(FAMILIES), LearnerConfig(lr=0.05))
    fresh.load_state_dict(learner.state_dict())
    assert fresh.baseline.values == learner.baseline.values
    assert fresh.updates == 1
    assert torch.equal(fresh.generator.get_state(), learner.generator.get_state())


class EntropyOnTrial(TablePolicy):
    """A TablePolicy whose entropy fails the test if the backward pass ever runs through it."""

    def score(self, samples):
        scored = super().score(samples)
        entropy = scored.entropy.clone()
        entropy.register_hook(lambda grad: pytest.fail("the backward pass ran through the entropy"))
        return Scored(scored.logprobs, scored.mask, entropy, scored.ref_logprobs)


def test_an_entropy_weighted_zero_stays_out_of_the_backward_pass():
    batch = [make_experience("a", 1.0, 1.0), make_experience("b", 0.0, 1.0)]
    learner = Learner(EntropyOnTrial(FAMILIES), LearnerConfig(entropy_coef=0.0))
    metrics = learner.update(batch, current_version=0)
    assert metrics["charts/entropy"] > 0  # still measured and reported


def test_an_entropy_with_a_weight_takes_part_in_the_backward_pass():
    batch = [make_experience("a", 1.0, 1.0), make_experience("b", 0.0, 1.0)]
    with pytest.raises(pytest.fail.Exception, match="through the entropy"):
        Learner(EntropyOnTrial(FAMILIES), LearnerConfig(entropy_coef=0.01)).update(batch, current_version=0)
