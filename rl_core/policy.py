"""The policy interface shared by every policy (LMPolicy, GrammarPolicy, TablePolicy) and the learner.

A policy turns prompts into responses (a plan in prose, then one fenced Python block) and can re-score
stored responses under its current parameters, which is all the learner needs for REINFORCE or PPO.
"Tokens" are whatever the policy's actions factor into: LM tokens for an LM, grammar choices for the
GrammarPolicy, a single choice for a TablePolicy. Shapes use B (batch) and T (tokens), padded with a mask.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:  # values here are plain; only annotations mention torch, so importing this stays light
    import torch

PromptKind = Literal["solve", "improve"]


@dataclass(frozen=True)
class TaskInfo:
    """What a policy is told about a competition (built from its public files, never the answers)."""

    slug: str
    description: str
    metric: str
    higher_is_better: bool
    id_column: str
    target_columns: tuple[str, ...]
    time_limit_s: float
    files: tuple[str, ...] = ()  # public file names, e.g. ("train.csv", "test.csv", "sample_submission.csv")
    data_preview: str = ""  # the head of train.csv and test.csv, as text
    features: dict[str, Any] = field(default_factory=dict)  # rl_core.features.task_features(...) output


@dataclass(frozen=True)
class PreviousSolution:
    """An earlier valid attempt shown in an improve prompt."""

    code: str
    output: str  # its stdout tail
    score: float
    attempt_id: str = ""  # the loop's id of the attempt it came from (f"{seed}-baseline-{n}" for a baseline)


@dataclass(frozen=True)
class Prompt:
    task: TaskInfo
    kind: PromptKind
    previous: PreviousSolution | None = None  # set exactly when kind == "improve"


@dataclass(frozen=True)
class TokenAction:
    """An LM's action: the token ids it sampled after the prompt (the response is their decoding, cut at
    the end of the first closed Python block)."""

    token_ids: tuple[int, ...]


@dataclass(frozen=True)
class ChoiceAction:
    """A choice per named head: the grammar policy's heads (rl_core.policies.grammar), or the table
    policy's one head, ``family``.

    Attributes:
        choices: head name -> option, for every active head (kept ones included).
        drawn: the heads drawn from the policy, in order (the "tokens" of `Sample.logprobs`).
        excluded: head -> the earlier option ruled out when an improve prompt re-drew it.
    """

    choices: Mapping[str, Any]
    drawn: tuple[str, ...]
    excluded: Mapping[str, Any] = field(default_factory=dict)


Action = TokenAction | ChoiceAction
"""What `Policy.score` re-scores, beyond the response text."""


@dataclass(frozen=True)
class Sample:
    """One sampled action.

    Attributes:
        response: the full text: plan, then one ```python block.
        logprobs: (T,) old log-probs of each token/choice under the sampling policy (for PPO ratios).
        policy_version: the learner version whose parameters produced it.
        info: facts for dashboards and benchmarks, e.g. {"family": "lightgbm"}; `score` never reads them.
        action: what `score` needs to re-score the sample (`TokenAction`, `ChoiceAction`); None when the
            response alone determines it (a demonstration, which an LM tokenizes; a TablePolicy response,
            whose family tag it reads).
    """

    prompt: Prompt
    response: str
    logprobs: tuple[float, ...]
    policy_version: int
    info: dict[str, Any] = field(default_factory=dict)
    action: Action | None = None


@dataclass(frozen=True)
class Experience:
    """A finished attempt as the learner sees it."""

    sample: Sample
    reward: float
    duration_s: float  # wall-clock execution seconds (the time limit for a timeout); 0 when nothing ran
    valid: bool = False  # it wrote a submission that graded (for the learner's valid-rate metric)
    ran: bool = True  # False when nothing ran (a response without a program): Δt carries no information
    slot_period_s: float | None = None
    """The mean Δt of the attempts its slot had run when this one launched (the inverse of the slot's
    completion rate), when this one's prompt continues its slot (an improve prompt of the loop's
    `improve_from="slots"` mode, asynchronous); None when the prompt did not depend on which slot launched it
    (rl_core.advantages' slot-rate weights explain why)."""


@dataclass(frozen=True)
class Scored:
    """Log-probs of stored samples under the current parameters (with gradients).

    Attributes:
        logprobs: (B, T) per-token log-probs, zero where mask is False.
        mask: (B, T) True for real tokens.
        entropy: (B,) mean per-token entropy of the policy's distribution along each sample.
        ref_logprobs: (B, T) log-probs under the frozen reference, or None if the policy has none.
    """

    logprobs: torch.Tensor
    mask: torch.Tensor
    entropy: torch.Tensor
    ref_logprobs: torch.Tensor | None = None


class Policy(Protocol):
    """What the loop and the learner need from a policy."""

    version: int  # bumped by the learner after every update

    @property
    def weights_lock(self) -> AbstractContextManager[Any]:
        """The policy's own lock (reentrant): `sample` holds it while it reads the parameters, and whoever
        changes them (the learner's update, a restore) or reads them whole (a checkpoint) takes it first."""
        ...

    def sample(self, prompts: Sequence[Prompt], *, generator: torch.Generator) -> list[Sample]:
        """One sample per prompt, tagged with the version that drew it, read under `weights_lock`."""
        ...

    def score(self, samples: Sequence[Sample]) -> Scored:
        """Log-probs of `samples` under the current parameters; differentiable."""
        ...

    def parameters(self) -> Any:
        """The trainable parameters (an iterable of tensors) for the optimizer."""
        ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...
