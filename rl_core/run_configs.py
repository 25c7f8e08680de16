"""rl_core's configs of a run, derived from its settings (rl_core.run_spec): each setting goes to the config
its declaration says it feeds, under that config's name for it. The worker's driver and the benchmarks build
their loops and learners here, so a run started from the web and a benchmark's arm with the same settings
train alike. (Separate from run_spec because these configs import torch; the web process must not.)"""

from __future__ import annotations

from typing import Any

from rl_core.learner import LM_MICRO_BATCH, LM_PPO_EPOCHS, FrozenLearner, Learner, LearnerConfig
from rl_core.loop_config import LoopConfig
from rl_core.run_spec import RunConfig


def loop_config(config: RunConfig, **overrides: Any) -> LoopConfig:
    """The loop's settings: those the run declares for it, with the draws per call and the sampler its
    policy implies (`RunConfig.samples_per_draw`, `RunConfig.sampler`)."""
    fed = config.fed("loop") | {"sample_ahead": config.samples_per_draw, "sampler": config.sampler}
    return LoopConfig(**fed | overrides)


def learner_config(config: RunConfig, **overrides: Any) -> LearnerConfig:
    """The learner's settings: those the run declares for it, the policy's learning rate when none is set,
    and a language model's passes and micro-batches (rl_core.learner's LM_PPO_EPOCHS, LM_MICRO_BATCH)."""
    lm = config.policy == "lm"
    fed = config.fed("learner") | {
        "lr": config.learning_rate,
        "seed": config.seed,
        "micro_batch": LM_MICRO_BATCH if lm else None,
        "ppo_epochs": LM_PPO_EPOCHS if lm else LearnerConfig.ppo_epochs,
    }
    return LearnerConfig(**fed | overrides)


def learner_for(policy: Any, config: RunConfig) -> Learner | FrozenLearner:
    """The run's learner: PPO (or REINFORCE) on `policy` under `learner_config`, or, with `updates` off, one
    that never changes it."""
    return Learner(policy, learner_config(config)) if config.updates else FrozenLearner(policy)


def lm_policy_config_fields(config: RunConfig) -> dict[str, Any]:
    """The LMPolicyConfig fields the run's settings give (model, prompts, sampling, engine), plus its seed
    and whether the frozen base is needed (a KL penalty)."""
    return config.fed("lm") | {"seed": config.seed, "reference": config.kl_coef > 0}
