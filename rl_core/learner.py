"""The learner: REINFORCE-with-baseline or PPO on whole programs, with the paper's duration weights.

One `Learner.update` per batch of B finished attempts: each sample's advantage A_k and duration weight w_k
(rl_core.advantages: their baselines, and where the paper's duration weights are exact), then:

1. PPO: `ppo_epochs` passes over shuffled minibatches; per token the ratio ρ = exp(logp_new - logp_old) and
   the clipped surrogate min(ρ A_k, clip(ρ, 1 - ε, 1 + ε) A_k); a sample's surrogate is the sum over its
   tokens, multiplied by w_k; the loss is minus the minibatch mean. REINFORCE: one step on
   -mean_k(w_k A_k Σ_t logp_t). Tokens are summed in both, so at ρ = 1 PPO's gradient equals REINFORCE's.
2. Minus `entropy_coef` times the mean per-token entropy; plus `kl_coef` times the per-token KL to the
   frozen reference (the k3 estimator exp(d) - d - 1 with d = logp_ref - logp) when the policy gives
   reference log-probs; gradient-norm clipping; one Adam step per minibatch; `policy.version += 1`.

Not done: value functions, GAE or per-token rewards (a program gets one reward); learning-rate schedules.
Stale samples are never dropped; the PPO ratio against their own old log-probs handles them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch

from rl_core.advantages import (
    RunningBaseline,
    group_mean_advantages,
    normalized_advantages,
    paper_weights,
    prompt_key,
    slot_rate_weights,
)
from rl_core.policy import Experience, Policy, Sample, Scored

AdvantageMode = Literal["running_mean", "group_mean", "batch_normalized"]


@dataclass(frozen=True)
class LearnerConfig:
    objective: Literal["ppo", "reinforce"] = "ppo"
    """PPO (the paper's choice) or REINFORCE with a baseline."""
    lr: float = 1e-5
    """Adam learning rate. 1e-5 is the paper's value for a 3B LM; categorical policies want about 1e-2."""
    clip_eps: float = 0.2
    """PPO clip range ε: ratios outside [1 - ε, 1 + ε] give no gradient in the direction that leaves it."""
    ppo_epochs: int = 2
    """Passes over each batch (PPO only; REINFORCE takes one step)."""
    minibatch: int | None = None
    """Samples per PPO minibatch (one optimizer step each); None for the whole batch."""
    micro_batch: int | None = None
    """Samples per forward/backward pass. A minibatch's gradients are accumulated over its micro-batches,
    so the step is the one a single pass would take (up to float rounding) in a fraction of the memory: an
    LM's backward holds every token's activations (about 3-6 GB per 1,000-1,600-token sample for
    SmolLM2-135M in float32). None: the whole minibatch in one pass."""
    entropy_coef: float = 0.0
    """Weight of the entropy bonus (mean per-token entropy)."""
    kl_coef: float = 0.0
    """Weight of the KL penalty to the frozen reference; used only when the policy gives ref_logprobs."""
    max_grad_norm: float = 1.0
    """Gradient-norm clipping threshold."""
    duration_aware: bool = True
    """Weight each sample's term by `duration_weighting`; False gives weights of 1 (the naive ablation)."""
    duration_weighting: Literal["slot_rate", "paper"] = "slot_rate"
    """"slot_rate": a sample that continued its slot asynchronously weighs its slot's period over the batch's
    mean, every other sample 1 (see the module docstring); "paper": every sample's own Δt / mean(Δt), the
    paper's formula."""
    advantage: AdvantageMode = "running_mean"
    """Baseline: "running_mean" (EMA per (competition slug, prompt kind)), "group_mean" (mean reward of the
    batch's samples of the same prompt), or "batch_normalized" ((r - mean) / std over the batch)."""
    baseline_rate: float = 0.1
    """EMA rate α of the running mean: after each batch b ← b + α (mean reward of that key in the batch - b).
    A key seen for the first time starts at its batch mean."""
    min_duration_s: float = 1e-3
    """Floor on every Δt in the weights, so a batch of near-instant attempts never divides by zero."""
    seed: int = 0
    """Seeds the minibatch shuffling."""


LM_PPO_EPOCHS = 1
"""PPO passes per batch when a language model learns. bench/lm_throughput.py's sweep (one update of 8 samples
per setting, one run each): 2 epochs took twice the time for about twice the objective's progress, so no more
progress per second; in the asynchronous loop an update holds the policy and the sampler waits, so the shorter
update keeps samples fresher."""
LM_MICRO_BATCH = 1
"""Samples per forward/backward pass when a language model learns. Micro-batches split one minibatch's
gradient, so this is speed and memory only: at 1 nothing is padded (7.5 s per sample against 12.0 at 4 in the
same sweep) and one long sample's backward already takes gigabytes."""


def weighted_sum(*terms: tuple[float, torch.Tensor]) -> torch.Tensor:
    """Σ weight · term over the terms whose weight is not 0, so that backward never runs through a term that
    cannot change the gradient. The entropy over the LM's (T, vocabulary) probabilities is one when
    `entropy_coef` is 0, the default: its backward alone took 0.31 s of 0.56 for a 900-token response at 2
    threads (medians of 12; 2 cores of an AMD EPYC without AVX-512), about 2 % of that machine's 17 s update
    per sample. In 8 alternated pairs of whole updates (4 samples of bench/lm_update_cost.py's batch) the
    saving measured 0.47 s per sample, within the noise (paired t = 1.20, df = 7, one-sided p = 0.14)."""
    return torch.stack([weight * term for weight, term in terms if weight != 0]).sum()


def padded_old_logprobs(samples: Sequence[Sample], mask: torch.Tensor) -> torch.Tensor:
    """(B, T) each sample's stored log-probs, laid out like `mask` (zeros where it is False)."""
    old = torch.zeros(mask.shape, dtype=torch.float)
    for row, sample in enumerate(samples):
        if len(sample.logprobs) != int(mask[row].sum()):
            raise ValueError(
                f"Sample {row} has {len(sample.logprobs)} log-probs but its mask has a different length."
            )
        old[row, mask[row]] = torch.tensor(sample.logprobs, dtype=torch.float)
    return old


def policy_loss(
    scored: Scored,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    *,
    objective: Literal["ppo", "reinforce"],
    clip_eps: float = 0.2,
) -> tuple[torch.Tensor, float]:
    """The duration-weighted policy-gradient loss of one minibatch, and its clip fraction.

    Args:
        scored: the policy's (B, T) log-probs and mask for the minibatch.
        old_logprobs: (B, T) log-probs under the sampling policy (zeros where masked).
        advantages: (B,) sequence-level advantages A_k.
        weights: (B,) duration weights w_k.
        objective: "ppo": -mean_k w_k Σ_t min(ρ A_k, clip(ρ) A_k); "reinforce": -mean_k w_k A_k Σ_t logp.
    Returns:
        (scalar loss tensor, fraction of real tokens whose ratio lies outside [1 - ε, 1 + ε]).
    """
    mask = scored.mask.float()
    if objective == "reinforce":
        per_sample = (scored.logprobs * mask).sum(dim=1) * advantages
        return -(weights * per_sample).mean(), 0.0
    ratio = torch.exp((scored.logprobs - old_logprobs) * mask)
    unclipped = ratio * advantages[:, None]
    clipped = ratio.clamp(1 - clip_eps, 1 + clip_eps) * advantages[:, None]
    per_sample = (torch.minimum(unclipped, clipped) * mask).sum(dim=1)
    outside = ((ratio - 1).abs() > clip_eps).float() * mask
    return -(weights * per_sample).mean(), float(outside.sum() / mask.sum().clamp(min=1))


def kl_to_reference(scored: Scored) -> torch.Tensor:
    """Mean per-token KL(π || π_ref) by the k3 estimator; zero when the policy has no reference."""
    if scored.ref_logprobs is None:
        return torch.zeros(())
    mask = scored.mask.float()
    delta = (scored.ref_logprobs - scored.logprobs) * mask
    per_token = (torch.exp(delta) - delta - 1) * mask
    return per_token.sum() / mask.sum().clamp(min=1)


class Learner:
    """Updates a policy from batches of finished attempts (see the module docstring for the algorithm).

    Call `update` once per batch of B experiences; it takes the optimizer steps and bumps `policy.version`.
    """

    def __init__(self, policy: Policy, config: LearnerConfig) -> None:
        self.policy = policy
        self.config = config
        self.params = [p for p in policy.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(self.params, lr=config.lr)
        self.baseline = RunningBaseline(config.baseline_rate)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.updates = 0

    def advantages(self, batch: Sequence[Experience]) -> torch.Tensor:
        """(B,) sequence-level advantages under `config.advantage`; call once per batch (it moves the
        running baseline)."""
        rewards = torch.tensor([e.reward for e in batch], dtype=torch.float)
        if self.config.advantage == "group_mean":
            return group_mean_advantages(rewards, [prompt_key(e.sample) for e in batch])
        if self.config.advantage == "batch_normalized":
            return normalized_advantages(rewards)
        keys = [(e.sample.prompt.task.slug, e.sample.prompt.kind) for e in batch]
        advantages = self.baseline.advantages(rewards, keys)
        self.baseline.observe(rewards, keys)
        return advantages

    def weights(self, batch: Sequence[Experience]) -> torch.Tensor:
        """(B,) duration weights under `config.duration_weighting`, or ones when `duration_aware` is off."""
        floor_s = self.config.min_duration_s
        if not self.config.duration_aware:
            return torch.ones(len(batch))
        if self.config.duration_weighting == "paper":
            return paper_weights([e.duration_s for e in batch], [e.ran for e in batch], floor_s=floor_s)
        return slot_rate_weights([e.slot_period_s for e in batch], floor_s=floor_s)

    def update(self, batch: Sequence[Experience], *, current_version: int) -> dict[str, float]:
        """Take this batch's optimizer steps and return namespaced metrics (losses/*, charts/*; with an LM
        policy also charts/tokens_per_s, the batch's mean generation speed).

        Args:
            batch: B finished attempts, in any order; may mix policy versions.
            current_version: the policy version now (staleness = current_version - sample.policy_version).
        """
        if not batch:
            raise ValueError("update needs at least one experience.")
        advantages, weights = self.advantages(batch), self.weights(batch)
        steps = [self._step(batch, index, advantages, weights) for index in self._minibatches(len(batch))]
        self.updates += 1
        self.policy.version += 1
        return {**_mean_dicts(steps), **self._batch_charts(batch, weights, current_version)}

    def _minibatches(self, size: int) -> list[torch.Tensor]:
        if self.config.objective == "reinforce":
            return [torch.arange(size)]
        step = self.config.minibatch or size
        passes = [torch.randperm(size, generator=self.generator) for _ in range(self.config.ppo_epochs)]
        return [order[start : start + step] for order in passes for start in range(0, size, step)]

    def _step(
        self,
        batch: Sequence[Experience],
        index: torch.Tensor,
        advantages: torch.Tensor,
        weights: torch.Tensor,
    ) -> dict[str, float]:
        """One optimizer step on the minibatch `index`, its gradient accumulated over micro-batches."""
        self.optimizer.zero_grad(set_to_none=True)
        tokens = sum(len(batch[i].sample.logprobs) for i in index.tolist())
        parts = [
            self._accumulate(batch, part, advantages, weights, len(index), tokens)
            for part in index.split(self.config.micro_batch or len(index))
        ]
        grad_norm = torch.nn.utils.clip_grad_norm_(self.params, self.config.max_grad_norm)
        self.optimizer.step()
        return {key: math.fsum(part[key] for part in parts) for key in parts[0]} | {
            "charts/grad_norm": float(grad_norm)
        }

    def _accumulate(
        self,
        batch: Sequence[Experience],
        part: torch.Tensor,
        advantages: torch.Tensor,
        weights: torch.Tensor,
        size: int,
        tokens: int,
    ) -> dict[str, float]:
        """Backward of one micro-batch's share of the minibatch loss: its per-sample means count with
        len(part) / size of the minibatch, its per-token means with its tokens / the minibatch's `tokens`.
        Returns the same shares of the minibatch's metrics."""
        samples = [batch[i].sample for i in part.tolist()]
        scored = self.policy.score(samples)
        old = padded_old_logprobs(samples, scored.mask)
        loss_pg, clip_fraction = policy_loss(
            scored, old, advantages[part], weights[part],
            objective=self.config.objective, clip_eps=self.config.clip_eps,
        )  # fmt: skip
        entropy = scored.entropy.mean()
        kl = kl_to_reference(scored) if self.config.kl_coef > 0 else torch.zeros(())
        by_sample, by_token = len(part) / size, int(scored.mask.sum()) / max(tokens, 1)
        total = weighted_sum(
            (by_sample, loss_pg), (-by_sample * self.config.entropy_coef, entropy),
            (by_token * self.config.kl_coef, kl),
        )  # fmt: skip
        total.backward()
        return {
            "losses/policy": by_sample * loss_pg.item(),
            "losses/entropy": by_sample * entropy.item(),
            "losses/kl": by_token * kl.item(),
            "losses/total": total.item(),
            "charts/entropy": by_sample * entropy.item(),
            "charts/clip_fraction": by_token * clip_fraction,
        }

    def _batch_charts(
        self, batch: Sequence[Experience], weights: torch.Tensor, version: int
    ) -> dict[str, float]:
        rewards = [e.reward for e in batch]
        staleness = [version - e.sample.policy_version for e in batch]
        speeds = [float(e.sample.info["tokens_per_s"]) for e in batch if "tokens_per_s" in e.sample.info]
        generation = {"charts/tokens_per_s": sum(speeds) / len(speeds)} if speeds else {}
        return generation | {
            "charts/reward_mean": sum(rewards) / len(rewards),
            "charts/reward_max": max(rewards),
            "charts/valid_rate": sum(e.valid for e in batch) / len(batch),
            "charts/duration_mean_s": sum(e.duration_s for e in batch) / len(batch),
            "charts/staleness_mean": sum(staleness) / len(staleness),
            "charts/staleness_max": float(max(staleness)),
            "charts/duration_weight_max": float(weights.max()),
            "charts/lr": float(self.optimizer.param_groups[0]["lr"]),
        }

    def state_dict(self) -> dict[str, Any]:
        """Optimizer state, baselines, shuffling RNG and update count (plain data and tensors)."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "baselines": [[slug, kind, value] for (slug, kind), value in self.baseline.values.items()],
            "generator": self.generator.get_state(),
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what `state_dict` returned; the policy's own state is restored separately."""
        self.optimizer.load_state_dict(state["optimizer"])
        self.baseline.values = {(slug, kind): float(value) for slug, kind, value in state["baselines"]}
        self.generator.set_state(state["generator"])
        self.updates = int(state["updates"])


class FrozenLearner:
    """A learner that never changes the policy (the run setting `updates` off): the same loop, prompts and
    budget, no optimizer steps and no new policy versions. The static arm of a study of RL against no RL."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def update(self, batch: Sequence[Experience], *, current_version: int) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


def _mean_dicts(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    return {key: math.fsum(row[key] for row in rows) / len(rows) for key in rows[0]}
