"""The LM's forward pass over prompts and their responses: what `LMPolicy.score` and its old log-probs run.

Layout: (B, T) tensors with T the longest response in the batch, each response right-aligned (its tokens in
order in the last positions of its row, `mask` True there). Only those T positions get logits
(``logits_to_keep``), so memory is O(B · T · vocabulary) per call; keep minibatches small on a CPU. The
distribution is the policy's: π = softmax(logits / τ), log-softmax in float32 whatever the model's dtype.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from rl_core.policies.lm.precision import autocast


def left_pad(rows: list[list[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, W) ids and attention mask on `device`, each row right-aligned after `pad_id` padding.

    >>> ids, attention = left_pad([[5, 6], [7]], pad_id=0, device=torch.device("cpu"))
    >>> ids.tolist(), attention.tolist()
    ([[5, 6], [0, 7]], [[1, 1], [0, 1]])
    """
    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for index, row in enumerate(rows):
        if row:
            ids[index, width - len(row) :] = torch.tensor(row)
            attention[index, width - len(row) :] = 1
    return ids.to(device), attention.to(device)


@dataclass(frozen=True)
class Forward:
    """The forward pass of `model` (a peft model: adapters on, or off inside ``disable_adapter()``)."""

    model: Any
    pad_id: int
    temperature: float
    device: torch.device
    autocast_dtype: torch.dtype | None
    """bf16 autocast around the model's forward (rl_core.policies.lm.precision), or None."""

    def __call__(
        self, prompt_ids: list[list[int]], response_ids: list[list[int]], *, with_entropy: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, T) log-probs of the right-aligned response tokens, (B, T) mask, (B,) mean entropy (zeros
        unless `with_entropy`), under softmax(logits / τ) of the model as it is (adapters on or off)."""
        lengths = torch.tensor([len(r) for r in response_ids], device=self.device)
        width = max(int(lengths.max()), 0) if len(response_ids) else 0
        rows = [p + r for p, r in zip(prompt_ids, response_ids, strict=True)]
        ids, attention = left_pad(rows, self.pad_id, self.device)
        positions = (attention.cumsum(dim=1) - 1).clamp(min=0)
        with autocast(self.autocast_dtype, self.device):
            out = self.model(
                input_ids=ids,
                attention_mask=attention,
                position_ids=positions,
                logits_to_keep=width + 1,
                use_cache=False,
            )
        logits = out.logits[:, :-1].float()  # (B, T, V): position t predicts the token at t + 1
        logp_all = torch.log_softmax(logits / self.temperature, dim=-1)
        targets = ids[:, ids.shape[1] - width :]
        mask = torch.arange(width, device=self.device)[None, :] >= (width - lengths)[:, None]
        logprobs = logp_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1).masked_fill(~mask, 0.0)
        entropy = torch.zeros(len(response_ids), device=self.device)
        if with_entropy:
            per_token = -(logp_all.exp() * logp_all).sum(dim=-1).masked_fill(~mask, 0.0)
            entropy = per_token.sum(dim=1) / lengths.clamp(min=1)
        return logprobs, mask, entropy


@contextlib.contextmanager
def activation_checkpointing(model: Any, *, enabled: bool = True) -> Iterator[None]:
    """Gradient (activation) checkpointing of the peft `model`'s base, and the training mode it needs, while
    the block runs; eval mode after (the policy never runs in training mode otherwise)."""
    base = model.get_base_model()
    if enabled:
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        base.enable_input_require_grads()  # frozen embeddings: give the checkpointed blocks a grad input
        model.train()
    try:
        yield
    finally:
        if enabled:
            base.gradient_checkpointing_disable()
            base.disable_input_require_grads()
        model.eval()
