"""Split an LM response into its plan (prose) and its one Python program.

A response is well formed when it holds exactly one fenced Python block: a fence of three or more
backticks or tildes (indented by at most three spaces) whose info string is empty or names Python
(``python``, ``py``, ``python3``), closed by a fence of the same character at least as long. Blocks tagged
with another language (``text``, ``bash``, ...) are not programs: they are left in the plan. Everything
outside the Python block, stripped, is the plan.

Malformed responses (no Python block, several, an unclosed fence, an empty block) are not exceptions: the
result carries ``code=None`` and a one-sentence ``error`` that the attempt records as a parse failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)[^`]*$")
_PYTHON_TAGS = {"", "python", "py", "python3"}


@dataclass(frozen=True)
class ParsedResponse:
    """A response's prose plan, its program (None when malformed) and why it is malformed (None when not)."""

    plan: str
    code: str | None
    error: str | None


@dataclass(frozen=True)
class _Block:
    language: str
    first_line: int  # 0-based index of the opening fence
    last_line: int  # 0-based index of the closing fence
    body: str


def _blocks(lines: list[str]) -> tuple[list[_Block], int | None]:
    """The fenced blocks of `lines`, and the 0-based line of a fence left open (None if all are closed)."""
    blocks: list[_Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence = opening["fence"]
        closing = next(
            (
                j
                for j in range(index + 1, len(lines))
                if lines[j].strip().startswith(fence[0] * len(fence)) and set(lines[j].strip()) == {fence[0]}
            ),
            None,
        )
        if closing is None:
            return blocks, index
        body = "".join(line + "\n" for line in lines[index + 1 : closing])
        blocks.append(_Block(opening["info"].lower(), index, closing, body))
        index = closing + 1
    return blocks, None


def parse_response(text: str) -> ParsedResponse:
    """The plan and the single Python block of `text`. Never raises.

    >>> parse_response("Fit a forest.\\n```python\\nprint(1)\\n```\\nDone.")
    ParsedResponse(plan='Fit a forest.\\n\\nDone.', code='print(1)\\n', error=None)
    >>> parse_response("no code here").error
    'The response has no fenced Python code block.'
    """
    if not isinstance(text, str):
        return ParsedResponse("", None, f"The response is a {type(text).__name__}, not text.")
    lines = text.splitlines()
    blocks, unclosed = _blocks(lines)
    python = [b for b in blocks if b.language in _PYTHON_TAGS]
    if unclosed is not None:
        return ParsedResponse(
            text.strip(), None, f"The code fence opened on line {unclosed + 1} is never closed."
        )
    if not python:
        return ParsedResponse(text.strip(), None, "The response has no fenced Python code block.")
    if len(python) > 1:
        starts = ", ".join(str(b.first_line + 1) for b in python)
        return ParsedResponse(
            text.strip(),
            None,
            f"The response has {len(python)} fenced Python code blocks (opened on lines "
            f"{starts}); exactly one is expected.",
        )
    block = python[0]
    around = ("\n".join(lines[: block.first_line]).strip(), "\n".join(lines[block.last_line + 1 :]).strip())
    plan = "\n\n".join(part for part in around if part)
    if not block.body.strip():
        return ParsedResponse(plan, None, "The response's Python code block is empty.")
    return ParsedResponse(plan, block.body, None)


def program_code(response: str) -> str:
    """The response's Python program, or the whole response when it has none.

    >>> program_code("Plan.\\n```python\\nprint(1)\\n```\\n")
    'print(1)\\n'
    """
    code = parse_response(response).code
    return response if code is None else code
