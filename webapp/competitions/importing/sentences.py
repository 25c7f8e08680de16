"""The small pieces of the one-sentence rejections of bundles: a sample of values, an error on one line,
a sentence made to follow "file: ", a size in words."""

from __future__ import annotations

from typing import Any


def sample_of(values: Any, n: int = 3) -> str:
    items = [str(v) for v in list(values)[:n]]
    return ", ".join(items) + (", ..." if len(values) > n else "")


def one_line(error: Exception) -> str:
    return " ".join(str(error).split())[:200]


def lowercase_first(sentence: str) -> str:
    """A sentence made to follow "file: ", as every BundleError reads (an acronym keeps its capitals).

    >>> lowercase_first("The metric 'f1' needs 0 and 1."), lowercase_first("ROC AUC needs 0 and 1.")
    ("the metric 'f1' needs 0 and 1.", 'ROC AUC needs 0 and 1.')
    """
    return sentence[:1].lower() + sentence[1:] if sentence[1:2].islower() else sentence


def human_bytes(n: float) -> str:
    """
    >>> human_bytes(100), human_bytes(1536), human_bytes(5 * 1024**3)
    ('100 B', '1.5 kB', '5.0 GB')
    """
    if n < 1024:
        return f"{int(n)} B"
    for unit in ("kB", "MB", "GB"):
        n /= 1024
        if n < 1024 or unit == "GB":
            break
    return f"{n:.1f} {unit}"
