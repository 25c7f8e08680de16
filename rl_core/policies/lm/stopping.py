"""Where a sampled response ends: at an end-of-sequence token, or once it holds a closed Python block (for
transformers a ``generate`` stopping criterion, for vLLM the sampler's per-step `done` check; both by
`response_closed`, and `trim_response` cuts by the same rule afterwards); and how an over-long prompt is
cut."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers import StoppingCriteria

from rl_core.responses import parse_response


class CodeBlockStop(StoppingCriteria):
    """Stops each row of a ``generate`` batch once its generated text holds a closed Python block.

    Args:
        tokenizer: decodes the generated ids.
        prompt_width: the (left-padded) prompt width; generated ids start there.
    """

    def __init__(self, tokenizer: Any, prompt_width: int) -> None:
        self.tokenizer, self.prompt_width = tokenizer, prompt_width
        self.done: torch.Tensor | None = None

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        """(B,) True for the rows that are done."""
        if self.done is None:
            self.done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        for row in (~self.done).nonzero().flatten().tolist():
            self.done[row] = response_closed(self.tokenizer, input_ids[row, self.prompt_width :].tolist())
        return self.done.clone()


def response_closed(tokenizer: Any, ids: Sequence[int]) -> bool:
    """Whether the response `ids` (so far) holds a closed Python block, checked only when its last token may
    close a fence (the stopping rule of every sampler: `CodeBlockStop`, vLLM's `VLLMSampler.done`)."""
    if not ids or not may_close_fence(tokenizer, int(ids[-1])):
        return False
    return closes_code_block(tokenizer.decode(list(ids), skip_special_tokens=True))


def closes_code_block(text: str) -> bool:
    """Whether `text` holds a closed, non-empty Python block (the response is then complete).

    >>> closes_code_block("Plan.\\n```python\\nprint(1)\\n```"), closes_code_block("```python\\nprint(1)\\n")
    (True, False)
    """
    return parse_response(text).code is not None


def trim_response(ids: Sequence[int], tokenizer: Any, eos_ids: set[int]) -> tuple[list[int], str]:
    """The response's tokens up to the first end token or closed Python block, and why it ended.

    Args:
        ids: the sampled token ids after the prompt (padding may follow the end).
        eos_ids: the end-of-sequence ids; the end token itself is kept (sampling it was an action).
    Returns:
        (ids, reason) with reason "eos", "code_block" or "length".
    """
    ids = list(ids)
    end = next((i + 1 for i, token in enumerate(ids) if token in eos_ids), None)
    for length in range(1, (end or len(ids)) + 1):
        if may_close_fence(tokenizer, ids[length - 1]) and closes_code_block(
            tokenizer.decode(ids[:length], skip_special_tokens=True)
        ):
            return ids[:length], "code_block"
    return (ids[:end], "eos") if end is not None else (ids, "length")


def may_close_fence(tokenizer: Any, token: int) -> bool:
    """Whether `token` holds a fence character: only such a token can complete a closing fence, so the
    costlier full decode and parse are skipped for the others."""
    text = tokenizer.decode([token])
    return "`" in text or "~" in text


def fit_tokens(ids: list[int], limit: int) -> list[int]:
    """`ids` cut to `limit` tokens by dropping the middle: the first quarter and the last three quarters stay,
    so the system turn and the closing request survive.

    >>> fit_tokens(list(range(10)), 4)
    [0, 7, 8, 9]
    """
    if len(ids) <= limit:
        return ids
    head = limit // 4
    return ids[:head] + ids[len(ids) - (limit - head) :]


def eos_ids(model: Any, tokenizer: Any) -> set[int]:
    """Every id that ends a response: the tokenizer's end token and the model's generation-config ones."""
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = set(configured if isinstance(configured, list) else [configured] if configured is not None else [])
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    return ids
