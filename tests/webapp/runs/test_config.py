"""RunConfig: every setting a run has, checked without a database; each refusal names its field."""

from __future__ import annotations

import pytest

from rl_core.run_spec import RunConfig


def test_a_stored_config_round_trips_through_json_shapes():
    config = RunConfig(policy="lm", imitate_runs=(3, 5), failure_reward=-2.0, kl_coef=0.05)
    data = config.to_dict()
    assert data["imitate_runs"] == [3, 5]  # a list, as JSON stores it
    assert RunConfig.from_dict(data) == config


def test_the_reward_settings_become_rl_cores_reward_config():
    reward = RunConfig(reward_preset="paper", credit_per_stage=0.2, reward_mode="percentile").reward_config()
    assert (reward.preset, reward.failure, reward.credit_per_stage) == ("paper", -10.0, 0.2)
    assert reward.mode == "percentile"
    assert RunConfig(failure_reward=-3.0).reward_config().failure == -3.0
    assert RunConfig().reward_config().credit_valid
    assert not RunConfig(credit_valid=False).reward_config().credit_valid


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"batch": 0}, "config: batch must be positive, not 0."),
        ({"credit_valid": "no"}, "config: credit_valid must be true or false, not 'no'."),
        ({"sync": 1}, "config: sync must be true or false, not 1."),
        ({"temperature": 0.0}, "config: temperature must be positive"),
        ({"kl_coef": -0.1}, "config: kl_coef must be 0 or more"),
        ({"reward_mode": "vibes"}, "config: reward_mode must be 'score' or 'percentile', not 'vibes'."),
        (
            {"lm_engine": "llama.cpp"},
            "config: lm_engine must be 'auto' or 'transformers' or 'vllm', not 'llama.cpp'.",
        ),
        ({"advantage": "none"}, "config: advantage must be"),
        ({"failure_reward": float("nan")}, "config: failure_reward must be a finite number"),
        ({"warm_start_demos": 8}, "config: warm_start_demos needs policy 'lm'"),
        ({"imitate_runs": [1]}, "config: imitate_runs needs policy 'lm'"),
        ({"imitate_runs": "1, x", "policy": "lm"}, "config: imitate_runs must be run ids"),
        ({"warm_start": "some-adapter"}, "a grammar run can only start from an earlier run ('run:ID')"),
        ({"warm_start": "run:abc"}, "config: warm_start must be 'run:' and a run id"),
        ({"policy": "lm", "warm_start": "w", "warm_start_demos": 4}, "leave warm_start empty"),
        ({"colour": "blue"}, "config: unknown field 'colour'."),
        ({"instrumenter": "regex"}, "config: instrumenter must be 'ast' or 'lm', not 'regex'."),
        ({"sample_ahead": 0}, "config: sample_ahead must be positive"),
        ({"max_staleness": -1}, "config: max_staleness must be 0 or more"),
        ({"improve_from": "stack"}, "config: improve_from must be 'pool' or 'slots', not 'stack'."),
        ({"duration_weighting": "x"}, "config: duration_weighting must be 'slot_rate' or 'paper', not 'x'."),
        ({"instrumenter": "lm"}, "config: instrumenter 'lm' needs policy 'lm'"),
        ({"policy": "lm", "instrumenter": "lm", "instrument": False}, "instrumenter 'lm' inserts markers"),
    ],
)
def test_a_bad_setting_is_refused_naming_its_field(fields, message):
    with pytest.raises(ValueError) as refused:
        RunConfig.from_dict(fields)
    assert str(refused.value).startswith("config: ") and message in str(refused.value)


def test_a_run_may_start_from_an_earlier_runs_final_policy_whatever_its_policy():
    assert RunConfig.from_dict({"warm_start": "run:12"}).warm_start_run_id == 12
    assert RunConfig.from_dict({"policy": "lm", "warm_start": "run:7"}).warm_start_run_id == 7
    assert RunConfig.from_dict({"policy": "lm", "warm_start": "stored-adapter"}).warm_start_run_id is None


def test_only_demonstrations_or_runs_to_imitate_make_a_run_fine_tune_first():
    assert RunConfig(policy="lm", warm_start_demos=4).fine_tunes
    assert RunConfig(policy="lm", imitate_runs=(2,)).fine_tunes
    assert not RunConfig(policy="lm", warm_start="stored").fine_tunes


def test_without_a_learning_rate_each_policy_gets_its_own():
    assert RunConfig(policy="grammar").learning_rate == 0.05
    assert RunConfig(policy="lm").learning_rate == 1e-4  # LoRA adapters: 0.05 would wreck the model
    assert RunConfig(policy="lm", lr=3e-5).learning_rate == 3e-5


def test_the_ast_rules_instrument_by_default_and_an_lm_run_may_choose_its_frozen_base():
    assert RunConfig().instrumenter == "ast"
    assert RunConfig.from_dict({"policy": "lm", "instrumenter": "lm"}).instrumenter == "lm"


def test_the_slot_and_weighting_settings_reach_the_loop_and_the_learner():
    from rl_core.run_configs import learner_config, loop_config

    config = RunConfig.from_dict({"improve_from": "slots", "duration_weighting": "paper"})
    assert loop_config(config).improve_from == "slots"
    assert learner_config(config).duration_weighting == "paper"
    assert (loop_config(RunConfig()).improve_from, learner_config(RunConfig()).duration_weighting) == (
        "pool",
        "slot_rate",
    )


def test_an_lm_draws_programs_in_batches_by_default_and_the_grammar_policy_one_at_a_time():
    from rl_core.policies.lm.config import LMPolicyConfig
    from rl_core.run_configs import loop_config
    from rl_core.run_spec import LM_GENERATION_BATCH

    assert LMPolicyConfig.generation_batch == LM_GENERATION_BATCH
    assert loop_config(RunConfig(policy="lm")).sample_ahead == LM_GENERATION_BATCH
    assert loop_config(RunConfig()).sample_ahead == 1
    assert loop_config(RunConfig(sample_ahead=3, max_staleness=0)).max_staleness == 0


def test_an_lm_is_drawn_by_the_background_sampler_and_the_grammar_policy_in_the_loops_thread():
    from rl_core.run_configs import loop_config

    assert loop_config(RunConfig(policy="lm")).sampler == "background"
    assert loop_config(RunConfig()).sampler == "inline"


def test_an_lm_learns_one_ppo_epoch_at_micro_batch_one_and_the_grammar_policy_at_the_learner_defaults():
    from rl_core.learner import LM_MICRO_BATCH, LM_PPO_EPOCHS, LearnerConfig
    from rl_core.run_configs import learner_config

    lm, grammar = learner_config(RunConfig(policy="lm")), learner_config(RunConfig())
    assert (lm.ppo_epochs, lm.micro_batch) == (LM_PPO_EPOCHS, LM_MICRO_BATCH) == (1, 1)
    assert (grammar.ppo_epochs, grammar.micro_batch) == (LearnerConfig().ppo_epochs, None)


@pytest.mark.django_db
def test_the_migration_renames_stored_lineage_weights_to_slot_rate_and_leaves_the_rest():
    import importlib

    from django.apps import apps

    from webapp.runs.models import Run

    migration = importlib.import_module("webapp.runs.migrations.0005_duration_weighting_slot_rate")
    old = Run.objects.create(config={"duration_weighting": "lineage", "attempts": 7})
    paper = Run.objects.create(config={"duration_weighting": "paper"})
    migration.forwards(apps, None)
    old.refresh_from_db()
    paper.refresh_from_db()
    assert old.config == {"duration_weighting": "slot_rate", "attempts": 7}
    assert RunConfig.from_dict(old.config).duration_weighting == "slot_rate"
    assert paper.config == {"duration_weighting": "paper"}
