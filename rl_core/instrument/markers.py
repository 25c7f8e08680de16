"""The stage markers' protocol: the stages, and the line each marker prints, read back from a program's output
by the attempt's nonce (see the package docstring)."""

from __future__ import annotations

import re

STAGES = (
    "imports_done",
    "data_loaded",
    "model_defined",
    "model_trained",
    "predictions_made",
    "submission_written",
)
"""The partial-credit stages, in the order a program reaches them."""
MARKER_PREFIX = "@@practicum:"
MARK_FUNCTION = "__practicum_mark__"


def marker_line(nonce: str, stage: str) -> str:
    """The line a marker prints.

    >>> marker_line("ab12", "data_loaded")
    '@@practicum:ab12:data_loaded'
    """
    return f"{MARKER_PREFIX}{nonce}:{stage}"


def parse_stages(stdout: str, nonce: str) -> tuple[str, ...]:
    """The stages whose marker with `nonce` appears in `stdout`, in canonical order (each once).

    >>> parse_stages("@@practicum:ab12:model_trained\\nhello\\n@@practicum:ab12:imports_done\\n"
    ...              "@@practicum:0000:data_loaded\\n", "ab12")
    ('imports_done', 'model_trained')
    """
    found = set(re.findall(re.escape(f"{MARKER_PREFIX}{nonce}:") + r"(\w+)", stdout)) if nonce else set()
    return tuple(stage for stage in STAGES if stage in found)


def strip_markers(stdout: str, nonce: str) -> str:
    """`stdout` without the genuine marker lines (forged ones, lacking the nonce, stay).

    >>> strip_markers("a\\n@@practicum:ab12:data_loaded\\nb\\n@@practicum:zz:data_loaded\\n", "ab12")
    'a\\nb\\n@@practicum:zz:data_loaded\\n'
    """
    if not nonce:
        return stdout
    return re.sub(re.escape(f"{MARKER_PREFIX}{nonce}:") + r"\w+\n?", "", stdout)
