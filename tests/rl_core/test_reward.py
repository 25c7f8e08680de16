"""rl_core.reward: the normalized and paper presets, percentile mode and stage credit (DESIGN.md §1)."""

from __future__ import annotations

import pytest

from rl_core.reward import RewardConfig, compute_reward, normalized_score

ACCURACY = {"higher_is_better": True, "perfect_score": 1.0}
RMSE = {"higher_is_better": False, "perfect_score": 0.0}


NORMALIZED = RewardConfig()


def reward(
    config=NORMALIZED, *, valid=True, score=None, stages=0, baseline=None, metric=ACCURACY, board=None
):
    return compute_reward(
        valid=valid,
        score=score,
        stages_reached=stages,
        config=config,
        baseline_score=baseline,
        leaderboard=board,
        **metric,
    )


def test_normalized_score_is_zero_at_the_baseline_and_one_at_perfect():
    assert normalized_score(0.6, baseline=0.6, perfect=1.0, higher_is_better=True) == 0.0
    assert normalized_score(1.0, baseline=0.6, perfect=1.0, higher_is_better=True) == 1.0


def test_normalized_score_treats_lower_is_better_metrics_the_same_way():
    assert normalized_score(1.0, baseline=4.0, perfect=0.0, higher_is_better=False) == 0.75


def test_normalized_score_is_negative_below_the_baseline_and_clipped_at_minus_one():
    assert normalized_score(0.5, baseline=0.6, perfect=1.0, higher_is_better=True) == pytest.approx(-0.25)
    assert normalized_score(0.0, baseline=0.9, perfect=1.0, higher_is_better=True) == -1.0


def test_normalized_score_of_an_already_perfect_baseline_rewards_only_a_perfect_score():
    assert normalized_score(1.0, baseline=1.0, perfect=1.0, higher_is_better=True) == 1.0
    assert normalized_score(0.9, baseline=1.0, perfect=1.0, higher_is_better=True) == -1.0


def test_a_valid_attempt_earns_its_normalized_score_plus_stage_credit():
    assert reward(score=0.8, baseline=0.6, stages=6) == pytest.approx(0.5 + 0.6)


def test_a_failed_attempt_earns_the_failure_reward_plus_stage_credit():
    assert reward(valid=False, stages=3) == pytest.approx(-1.0 + 0.3)


def test_the_failure_reward_and_stage_credit_are_configurable():
    config = RewardConfig(failure_reward=-2.0, credit_per_stage=0.25)
    assert reward(config, valid=False, stages=2) == pytest.approx(-1.5)


def test_without_a_baseline_the_normalized_preset_uses_the_clipped_signed_score():
    assert reward(score=3.0, metric=RMSE, stages=0) == -1.0
    assert reward(score=0.4, stages=0) == pytest.approx(0.4)


def test_the_paper_preset_uses_the_raw_signed_score():
    config = RewardConfig(preset="paper")
    assert reward(config, score=0.9, baseline=0.6, stages=6) == pytest.approx(1.5)
    assert reward(config, score=2.5, metric=RMSE, stages=6) == pytest.approx(-2.5 + 0.6)


def test_the_paper_preset_fails_at_minus_ten_plus_stage_credit():
    assert reward(RewardConfig(preset="paper"), valid=False, stages=5) == pytest.approx(-9.5)


def test_a_valid_attempt_without_a_finite_score_counts_as_a_failure():
    assert reward(score=float("nan"), stages=1) == pytest.approx(-0.9)
    assert reward(score=None, stages=1) == pytest.approx(-0.9)


def test_percentile_mode_maps_the_leaderboard_percentile_onto_minus_one_to_one():
    config, board = RewardConfig(mode="percentile"), [0.9, 0.8, 0.7, 0.6]
    assert reward(config, score=0.95, board=board, baseline=0.5) == 1.0
    assert reward(config, score=0.5, board=board, baseline=0.5) == -1.0
    assert reward(config, score=0.75, board=board, baseline=0.5, stages=6) == pytest.approx(0.0 + 0.6)


def test_percentile_mode_respects_lower_is_better_metrics():
    assert reward(RewardConfig(mode="percentile"), score=0.1, board=[0.3, 0.2], metric=RMSE) == 1.0


def test_percentile_mode_without_a_leaderboard_falls_back_to_the_score():
    assert reward(RewardConfig(mode="percentile"), score=0.8, baseline=0.6) == pytest.approx(0.5)


def test_percentile_mode_still_gives_failures_the_failure_reward():
    assert reward(RewardConfig(mode="percentile"), valid=False, board=[0.5], stages=2) == pytest.approx(-0.8)


def test_it_rejects_an_impossible_number_of_stages():
    with pytest.raises(ValueError, match="stages_reached"):
        reward(valid=False, stages=7)


def test_it_rejects_an_unknown_preset():
    with pytest.raises(ValueError, match="preset"):
        RewardConfig(preset="sparse")  # type: ignore[arg-type]


def test_without_credit_valid_a_valid_submission_earns_its_score_alone():
    config = RewardConfig(credit_valid=False)
    reward = compute_reward(
        valid=True, score=0.8, stages_reached=6, config=config, higher_is_better=True,
        baseline_score=0.6, perfect_score=1.0,
    )  # fmt: skip
    assert reward == pytest.approx(0.5)


def test_without_credit_valid_an_invalid_attempt_still_earns_stage_credit():
    config = RewardConfig(credit_valid=False)
    reward = compute_reward(
        valid=False, score=None, stages_reached=2, config=config, higher_is_better=True,
        baseline_score=0.6, perfect_score=1.0,
    )  # fmt: skip
    assert reward == pytest.approx(-0.8)
