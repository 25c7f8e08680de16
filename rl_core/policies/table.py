"""TablePolicy: a categorical over named action families, for simulations and tests.

It has one learnable logit per family. Its "program" is a tiny Python snippet tagged with the family
(`# family: NAME`), so a simulated executor can read the family from `sample.info["family"]` and an improve
prompt can read it back from the earlier solution's code. Each sample is one choice, so T = 1: its action
is a `ChoiceAction` of the one head ``family``; `score` reads the response's tag for a sample without one.

On an improve prompt the logit of the earlier solution's family gets a fixed, non-learned `keep_bonus`: the
simplest model of "improving a LightGBM program yields a LightGBM program" (improve-chains stay in a family).
With `keep_bonus=0` (the default) prompts are ignored entirely.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

import torch

from rl_core.policy import ChoiceAction, Prompt, Sample, Scored

_FAMILY_TAG = re.compile(r"^# family: (\S+)$", re.MULTILINE)
FAMILY = "family"
"""The one head of a TablePolicy's `ChoiceAction`."""


def render_program(family: str) -> str:
    """The response text for one family: a one-line plan, then one fenced Python block.

    >>> family_of(render_program("lightgbm"))
    'lightgbm'
    """
    return (
        f"Plan: run the {family} family (a simulated action).\n\n"
        f"```python\n# family: {family}\nprint('running the {family} family')\n```\n"
    )


def family_of(text: str) -> str | None:
    """The family tag in a response or its code, or None when there is none.

    >>> family_of("print(1)") is None
    True
    """
    match = _FAMILY_TAG.search(text)
    return match.group(1) if match else None


class TablePolicy(torch.nn.Module):
    """One logit per family; samples are independent of the prompt except for `keep_bonus`.

    Args:
        families: the family names, in logit order.
        init_logits: (F,) starting logits; zeros (uniform) when None.
        keep_bonus: added to the earlier solution's family logit on improve prompts; not learned.
    """

    def __init__(
        self, families: Sequence[str], *, init_logits: Sequence[float] | None = None, keep_bonus: float = 0.0
    ) -> None:
        super().__init__()
        if len(set(families)) != len(families) or not families:
            raise ValueError("families must be a non-empty list of distinct names.")
        start = torch.zeros(len(families)) if init_logits is None else torch.tensor(init_logits).float()
        if start.shape != (len(families),):
            raise ValueError(f"init_logits must have one value per family ({len(families)}).")
        self.families = tuple(families)
        self.logits = torch.nn.Parameter(start.clone())
        self.keep_bonus = float(keep_bonus)
        self.version = 0
        self.weights_lock = threading.RLock()  # rl_core.policy.Policy.weights_lock

    def prompt_logits(self, prompt: Prompt) -> torch.Tensor:
        """(F,) the logits used for `prompt`: the table plus the keep bonus on improve prompts."""
        return self._logits_for([prompt])[0]

    def _logits_for(self, prompts: Sequence[Prompt]) -> torch.Tensor:
        """(B, F) the logits for each prompt."""
        bonus = torch.zeros(len(prompts), len(self.families))
        if self.keep_bonus != 0.0:
            for row, prompt in enumerate(prompts):
                previous = family_of(prompt.previous.code) if prompt.previous is not None else None
                if previous in self.families:
                    bonus[row, self.families.index(previous)] = self.keep_bonus
        return self.logits.unsqueeze(0) + bonus

    def probabilities(self, prompt: Prompt | None = None) -> dict[str, float]:
        """Family -> probability for `prompt` (a solve prompt, i.e. the bare table, when None)."""
        with torch.no_grad():
            logits = self.logits if prompt is None else self.prompt_logits(prompt)
            probs = torch.softmax(logits, dim=0).tolist()
        return dict(zip(self.families, probs, strict=True))

    def sample(
        self,
        prompts: Sequence[Prompt],
        *,
        generator: torch.Generator,
    ) -> list[Sample]:
        """One family per prompt, drawn with `generator`, tagged with `self.version`; `weights_lock` is held
        throughout."""
        samples = []
        with self.weights_lock, torch.no_grad():
            for prompt in prompts:
                log_probs = torch.log_softmax(self.prompt_logits(prompt), dim=0)
                index = int(torch.multinomial(log_probs.exp(), 1, generator=generator))
                family = self.families[index]
                samples.append(
                    Sample(
                        prompt=prompt,
                        response=render_program(family),
                        logprobs=(float(log_probs[index]),),
                        policy_version=self.version,
                        info={"family": family},
                        action=ChoiceAction(choices={FAMILY: family}, drawn=(FAMILY,)),
                    )
                )
        return samples

    def score(self, samples: Sequence[Sample]) -> Scored:
        """(B, 1) log-probs of each sample's family under the current logits, with gradients."""
        log_probs = torch.log_softmax(self._logits_for([sample.prompt for sample in samples]), dim=1)
        chosen = torch.tensor([self.families.index(self._family(sample)) for sample in samples])
        logprobs = log_probs.gather(1, chosen.unsqueeze(1))
        entropy = -(log_probs.exp() * log_probs).sum(dim=1)
        return Scored(logprobs=logprobs, mask=torch.ones_like(logprobs, dtype=torch.bool), entropy=entropy)

    def _family(self, sample: Sample) -> str:
        """The family `sample` chose: its action's, or else its response's tag (ValueError when it names
        none of this table's)."""
        action = sample.action
        family = (
            action.choices.get(FAMILY) if isinstance(action, ChoiceAction) else family_of(sample.response)
        )
        if not isinstance(family, str) or family not in self.families:
            raise ValueError(
                f"TablePolicy cannot score a sample of family {family!r}: its families are {self.families}."
            )
        return family
