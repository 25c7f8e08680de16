"""GrammarPolicy: a factorised categorical policy over real pipeline programs, conditioned on the task.

Not a language model: an action is one set of grammar choices (`grammar_space.HEADS`: model family,
its hyper-parameters, imputation, scaling, categorical encoding, text features), rendered as a complete
program with a plan (`grammar_render.render`). Each head has its own logits, a linear function of the
competition's `feature_vector` (F -> options, initialised to zero: the first policy is uniform), so one
policy can train across competitions. Heads are drawn in `HEADS` order; a head that is inactive for the
task or the family chosen (`grammar_space.is_active`) is neither drawn nor scored.

"Tokens" (policy.py) are the *drawn* heads, in `HEADS` order: `Sample.logprobs` has one entry per drawn
head, and `score` returns them packed to the left of a (B, T) tensor with a mask, T = the most drawn
heads in the batch.

Improve prompts. The earlier program's choices are read back from its ``# practicum-grammar:`` comment.
The policy then re-draws a small subset of them: it picks k heads uniformly among the earlier program's
active heads that have at least two options (k uniform in 1..`mutate_max_heads`), and re-draws each
from its logits with the earlier value excluded (so the program always changes); all other choices are
kept. Heads that become active because the family changed are drawn too, as in a solve. Which heads are
re-drawn does not depend on the parameters, so log π of an improve sample sums only over the re-drawn
heads, each under its distribution renormalised without the excluded value. An improve prompt whose
code carries no grammar comment (an LM's program, say) is answered like a solve prompt.
`Sample.action` (a `rl_core.policy.ChoiceAction`) holds what `score` re-scores: the ``choices``, the
``drawn`` heads in order, and ``excluded`` (head -> earlier value). `Sample.info` holds facts for
dashboards: ``family``, ``choices`` and ``mutated`` (the re-drawn heads, empty for a solve).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from rl_core.features import FEATURE_NAMES, feature_values
from rl_core.policies.grammar_render import render
from rl_core.policies.grammar_space import (
    HEAD_BY_NAME,
    HEADS,
    Choices,
    Head,
    active_heads,
    default_choices,
    is_active,
    parse_choices,
)
from rl_core.policy import ChoiceAction, Prompt, Sample, Scored, TaskInfo


def simplest_program(task: TaskInfo) -> str:
    """The simplest valid response for `task`: median imputation, one-hot encoding, a linear model."""
    return render(default_choices(task.features), task)


def feature_vector(features: Mapping[str, Any]) -> torch.Tensor:
    """(F,) float32: the competition's `feature_values` as the heads' input."""
    return torch.tensor(feature_values(features), dtype=torch.float32)


def _key(head: Head) -> str:
    return head.name.replace(".", "__")  # ModuleDict keys cannot contain dots


def _previous_choices(prompt: Prompt) -> Choices | None:
    """The earlier program's choices, restricted to known heads and valid options; None if there are none."""
    if prompt.kind != "improve" or prompt.previous is None:
        return None
    parsed = parse_choices(prompt.previous.code) or {}
    valid = {}
    for name, value in parsed.items():
        head = HEAD_BY_NAME.get(name)
        if head is not None and any(value == o and type(value) is type(o) for o in head.options):
            valid[name] = value
    return valid if "family" in valid else None


class GrammarPolicy(nn.Module):
    """Linear-in-features logits per grammar head.

    Args:
        mutate_max_heads: the most heads an improve prompt re-draws (at least 1).
    """

    policy_version: torch.Tensor  # a () long buffer, so the version travels in state_dict

    def __init__(self, *, mutate_max_heads: int = 2) -> None:
        super().__init__()
        if mutate_max_heads < 1:
            raise ValueError("mutate_max_heads must be at least 1.")
        self.mutate_max_heads = mutate_max_heads
        layers = {_key(h): nn.Linear(len(FEATURE_NAMES), len(h.options)) for h in HEADS}
        for layer in layers.values():
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)
        self.heads = nn.ModuleDict(layers)
        self.register_buffer("policy_version", torch.zeros((), dtype=torch.long))
        self.weights_lock = threading.RLock()  # rl_core.policy.Policy.weights_lock

    def layer(self, head_name: str) -> nn.Linear:
        """The linear map (F -> options) that gives `head_name`'s logits."""
        layer = self.heads[_key(HEAD_BY_NAME[head_name])]
        assert isinstance(layer, nn.Linear)
        return layer

    @property
    def version(self) -> int:
        """The learner version of the parameters; part of `state_dict`."""
        return int(self.policy_version)

    @version.setter
    def version(self, value: int) -> None:
        self.policy_version.fill_(int(value))

    def head_log_probs(
        self, head: Head, x: torch.Tensor, excluded: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(B, options) log-probabilities of `head` for features `x` (B, F).

        `excluded`: (B,) option index to rule out per row (-1 for none); those get log-prob -inf.
        """
        logits = self.layer(head.name)(x)
        if excluded is not None:
            ruled_out = nn.functional.one_hot(excluded.clamp(min=0), len(head.options)).bool()
            logits = logits.masked_fill(ruled_out & (excluded >= 0).unsqueeze(1), float("-inf"))
        return torch.log_softmax(logits, dim=1)

    # -- sampling ------------------------------------------------------------------------------------------

    def _mutation(
        self, previous: Choices, features: Mapping[str, Any], generator: torch.Generator
    ) -> list[str]:
        """The heads an improve prompt re-draws (see the module docstring)."""
        mutable = [
            h.name for h in active_heads(previous, features) if h.name in previous and len(h.options) > 1
        ]
        if not mutable:
            return []
        k = int(torch.randint(1, self.mutate_max_heads + 1, (1,), generator=generator))
        order = torch.randperm(len(mutable), generator=generator).tolist()
        return [mutable[i] for i in sorted(order[: min(k, len(mutable))])]

    def _draw(
        self, head: Head, x: torch.Tensor, exclude: int, generator: torch.Generator
    ) -> tuple[int, float]:
        log_probs = self.head_log_probs(head, x, torch.tensor([exclude]))[0]
        index = int(torch.multinomial(log_probs.exp(), 1, generator=generator))
        return index, float(log_probs[index])

    def sample_one(self, prompt: Prompt, generator: torch.Generator) -> Sample:
        """One action for `prompt`: a fresh draw of every active head, or a mutation of the earlier one."""
        features = _task_features(prompt.task)
        x = feature_vector(features).unsqueeze(0)
        previous = _previous_choices(prompt)
        mutated = self._mutation(previous, features, generator) if previous is not None else []
        if not mutated:
            previous = None
        choices: Choices = {}
        drawn, logprobs, excluded = [], [], {}
        for head in HEADS:
            if not is_active(head, choices, features):
                continue
            if previous is not None and head.name in previous and head.name not in mutated:
                choices[head.name] = previous[head.name]
                continue
            exclude = head.index(previous[head.name]) if previous is not None and head.name in mutated else -1
            index, logprob = self._draw(head, x, exclude, generator)
            choices[head.name] = head.options[index]
            drawn.append(head.name)
            logprobs.append(logprob)
            if exclude >= 0:
                excluded[head.name] = head.options[exclude]
        info = {"family": choices["family"], "choices": dict(choices), "mutated": mutated}
        return Sample(
            prompt=prompt,
            response=render(choices, prompt.task),
            logprobs=tuple(logprobs),
            policy_version=self.version,
            info=info,
            action=ChoiceAction(choices=choices, drawn=tuple(drawn), excluded=excluded),
        )

    @torch.no_grad()
    def sample(
        self,
        prompts: Sequence[Prompt],
        *,
        generator: torch.Generator,
    ) -> list[Sample]:
        """One sample per prompt, drawn with `generator` (deterministic for a seeded one), tagged with
        `self.version`; `weights_lock` is held throughout."""
        with self.weights_lock:
            return [self.sample_one(prompt, generator) for prompt in prompts]

    # -- scoring -------------------------------------------------------------------------------------------

    def score(self, samples: Sequence[Sample]) -> Scored:
        """Log-probs of each sample's drawn heads under the current parameters, differentiable.

        Returns:
            Scored with logprobs and mask (B, T), T = the most drawn heads of any sample, entries in
            `HEADS` order packed to the left (matching `Sample.logprobs`); entropy (B,) the mean entropy
            of the drawn heads' distributions (with the excluded option ruled out, as when drawn).
        """
        x = torch.stack([feature_vector(_task_features(s.prompt.task)) for s in samples])
        columns, entropies, masks = [], [], []
        for head in HEADS:
            chosen, exclude, drawn = _head_targets(head, samples)
            log_probs = self.head_log_probs(head, x, exclude)
            columns.append(log_probs.gather(1, chosen.unsqueeze(1)).squeeze(1))
            finite = log_probs.isfinite()
            safe = log_probs.masked_fill(~finite, 0.0)  # an excluded option adds 0, and no NaN gradient
            entropies.append(-(safe.exp() * safe * finite).sum(dim=1))
            masks.append(drawn)
        logprobs, entropy, mask = torch.stack(columns, 1), torch.stack(entropies, 1), torch.stack(masks, 1)
        logprobs, entropy = logprobs * mask, entropy * mask
        mean_entropy = entropy.sum(1) / mask.sum(1).clamp(min=1)
        order = torch.argsort((~mask).to(torch.int8), dim=1, stable=True)  # drawn heads first, order kept
        width = int(mask.sum(1).max()) if len(samples) else 0
        packed, packed_mask = logprobs.gather(1, order)[:, :width], mask.gather(1, order)[:, :width]
        return Scored(logprobs=packed, mask=packed_mask, entropy=mean_entropy)

    # -- helpers exposed for the loop, benchmarks and baselines ------------------------------------------

    def probabilities(self, head_name: str, features: Mapping[str, Any]) -> dict[Any, float]:
        """Option -> probability of one head for a task's features, e.g. the family distribution."""
        head = HEAD_BY_NAME[head_name]
        with torch.no_grad():
            probs = self.head_log_probs(head, feature_vector(features).unsqueeze(0))[0].exp().tolist()
        return dict(zip(head.options, probs, strict=True))

    def render(self, choices: Mapping[str, Any], task: TaskInfo) -> str:
        """The response (plan + program) for `choices` on `task`; see `grammar_render.render`."""
        return render(choices, task)

    def simplest_program(self, task: TaskInfo) -> str:
        """See the module-level `simplest_program`."""
        return simplest_program(task)


def _task_features(task: TaskInfo) -> Mapping[str, Any]:
    if not task.features:
        raise ValueError(
            f"GrammarPolicy needs TaskInfo.features for task {task.slug!r} (rl_core.features.task_features)."
        )
    return task.features


def _head_targets(head: Head, samples: Sequence[Sample]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(chosen option, excluded option or -1, drawn?) of `head` for each sample, each (B,)."""
    chosen, exclude, drawn = [], [], []
    for sample in samples:
        action = _grammar_action(sample)
        is_drawn = head.name in action.drawn
        chosen.append(head.index(action.choices[head.name]) if is_drawn else 0)
        excluded = action.excluded
        exclude.append(head.index(excluded[head.name]) if is_drawn and head.name in excluded else -1)
        drawn.append(is_drawn)
    return torch.tensor(chosen), torch.tensor(exclude), torch.tensor(drawn)


def _grammar_action(sample: Sample) -> ChoiceAction:
    if not isinstance(sample.action, ChoiceAction):
        raise ValueError("GrammarPolicy can score only samples it drew: their action is a ChoiceAction.")
    return sample.action
