"""Tiny language models built in code, for tests and quick checks: nothing is downloaded.

`tiny_tokenizer` is byte-level (every text encodes, 256 byte tokens plus ChatML-like specials and a chat
template) or, given a corpus, a small BPE trained on it (shorter sequences: faster tests). `tiny_llama`
is a 2-layer Llama of width `hidden`; `save_tiny_llama` writes both as a Hugging Face model folder, which
LMPolicyConfig.model, `manage.py train --model` and `manage.py warmstart --model` accept as a path.
`TINY_TASK` is a regression task's description for prompts (no files behind it). `opened_files()` records
every file this process opens within a block (an audit hook), for tests that prove which files a step reads.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rl_core.policy import TaskInfo

TINY_TASK = TaskInfo(
    slug="tiny", description="Predict y.", metric="rmse", higher_is_better=False, id_column="id",
    target_columns=("y",), time_limit_s=60.0, files=("train.csv", "test.csv"), data_preview="id,x,y\n1,2,3",
)  # fmt: skip

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ("<|im_start|>", "<|im_end|>", "<pad>")


def tiny_tokenizer(corpus: Sequence[str] | None = None, *, vocab_size: int = 1200) -> Any:
    """A fast tokenizer with a chat template: byte-level without `corpus`, else a BPE trained on it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    if corpus is None:
        backend = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(sorted(alphabet))}, merges=[]))
    else:
        backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    if corpus is None:
        backend.add_special_tokens(list(SPECIAL_TOKENS))
    else:
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), initial_alphabet=alphabet
        )
        backend.train_from_iterator(list(corpus), trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<|im_start|>", eos_token="<|im_end|>", pad_token="<pad>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def tiny_llama(tokenizer: Any, *, seed: int = 0, hidden: int = 32, max_positions: int = 8192) -> Any:
    """A 2-layer Llama for `tokenizer`, initialised from `seed`, in eval mode."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return LlamaForCausalLM(config).eval()


def save_tiny_llama(
    folder: Path, corpus: Sequence[str] | None = None, *, seed: int = 0, hidden: int = 32
) -> str:
    """Write a tiny Llama and its tokenizer to `folder` (a Hugging Face model folder); returns its path.
    vLLM can sample it from `hidden` = 128 up (heads of 32 dimensions: rl_core.policies.lm.engines)."""
    tokenizer = tiny_tokenizer(corpus)
    tiny_llama(tokenizer, seed=seed, hidden=hidden, max_positions=4096).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


_recording: list[list[Path]] = []
_recording_lock = threading.Lock()
_hooked = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _recording and isinstance(args[0], str | bytes | os.PathLike):
        with _recording_lock:
            _recording[-1].append(Path(os.fsdecode(args[0])).resolve())


class opened_files:
    """Within the block, the list it yields collects the resolved path of every file this process opens
    (any thread). Subprocesses are not seen: what they may open is the sandbox's business."""

    def __enter__(self) -> list[Path]:
        global _hooked
        if not _hooked:  # an audit hook cannot be removed: one, recording only inside these blocks
            sys.addaudithook(_audit)
            _hooked = True
        self.paths: list[Path] = []
        _recording.append(self.paths)
        return self.paths

    def __exit__(self, *exc: object) -> None:
        _recording.remove(self.paths)
