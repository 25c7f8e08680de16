"""The stage markers' protocol: the stages, the line each marker writes to the attempt's private marker
channel, and how the stages an attempt is credited with are read back (see the package docstring)."""

from __future__ import annotations

import re
from collections.abc import Iterable

STAGES = (
    "imports_done",
    "data_loaded",
    "model_defined",
    "model_trained",
    "predictions_made",
    "submission_written",
)
"""The partial-credit stages, in the order a program reaches them."""
STAGE_LABELS = {
    "imports_done": "imports done",
    "data_loaded": "data loaded",
    "model_defined": "model defined",
    "model_trained": "model trained",
    "predictions_made": "predictions made",
    "submission_written": "submission written",
}
"""Each stage in words, for pages and charts."""
MARKER_PREFIX = "@@practicum:"
MARK_FUNCTION = "__practicum_mark__"
CHANNEL_ENV = "PRACTICUM_MARKER_FD"
"""The environment variable that tells the marker function which descriptor is its channel (not a secret:
the nonce is, and it is read from the channel itself before any of the program's code runs)."""


def marker_line(nonce: str, stage: str) -> str:
    """The line a marker prints.

    >>> marker_line("ab12", "data_loaded")
    '@@practicum:ab12:data_loaded'
    """
    return f"{MARKER_PREFIX}{nonce}:{stage}"


def parse_stages(text: str, nonce: str) -> tuple[str, ...]:
    """The stages whose marker with `nonce` appears in `text` (the marker channel's lines), in canonical
    order (each once).

    >>> parse_stages("@@practicum:ab12:model_trained\\nhello\\n@@practicum:ab12:imports_done\\n"
    ...              "@@practicum:0000:data_loaded\\n", "ab12")
    ('imports_done', 'model_trained')
    """
    found = set(re.findall(re.escape(f"{MARKER_PREFIX}{nonce}:") + r"(\w+)", text)) if nonce else set()
    return tuple(stage for stage in STAGES if stage in found)


def credited_stages(marker_lines: Iterable[str], nonce: str, inserted: Iterable[str]) -> tuple[str, ...]:
    """The stages an attempt is credited with: those whose marker with `nonce` arrived on its channel AND
    for which the instrumenter inserted a marker into this program. The second condition bounds credit
    structurally: a program that reaches the marker function (or its nonce) by some route no check
    foresaw still earns nothing for a stage it has no code for.

    >>> credited_stages(["@@practicum:ab12:imports_done", "@@practicum:ab12:model_trained"], "ab12",
    ...                 ["imports_done", "data_loaded"])
    ('imports_done',)
    """
    allowed = set(inserted)
    return tuple(s for s in parse_stages("\n".join(marker_lines), nonce) if s in allowed)
