"""A side-by-side diff of two programs as an HTML table, built from difflib.SequenceMatcher's opcodes.

Each row pairs a line of the old program with one of the new, both numbered: unchanged lines (only
`context` of them around each change), removed lines (old side only, row class `diff_sub`, red), added
lines (new side only, `diff_add`, green) and changed lines (both sides, `diff_chg`, yellow, with the
characters that differ wrapped in `<span class="diff_em">`). Unchanged lines beyond the context fold into
one row that says how many. All program text is escaped. Not done: tab expansion and wrapping (CSS's
`white-space: pre-wrap` does both), moved-block detection.
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass
from itertools import zip_longest
from typing import Literal

RowKind = Literal["equal", "delete", "insert", "replace", "fold"]
TOKENS = re.compile(r"\w+|\s+|[^\w\s]")
ROW_CLASSES = {"equal": "diff_same", "delete": "diff_sub", "insert": "diff_add", "replace": "diff_chg"}


@dataclass(frozen=True)
class DiffRow:
    """One row of the table. Line numbers count from 1; a side without a line has None and "".
    A "fold" row stands for `folded` unchanged lines and has no text."""

    kind: RowKind
    old_number: int | None = None
    old_text: str = ""
    new_number: int | None = None
    new_text: str = ""
    folded: int = 0


def diff_rows(old: list[str], new: list[str], *, context: int = 3) -> list[DiffRow]:
    """The rows of a side-by-side diff of two programs' lines; [] when they are the same.

    >>> [(r.kind, r.old_text, r.new_text) for r in diff_rows(["a", "b"], ["a", "c", "d"], context=0)]
    [('fold', '', ''), ('replace', 'b', 'c'), ('insert', '', 'd')]
    """
    rows: list[DiffRow] = []
    shown_until = 0  # old lines before this index are shown or folded already
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        rows.extend(fold(group[0][1] - shown_until))
        for tag, i1, i2, j1, j2 in group:
            rows.extend(opcode_rows(tag, old, new, i1, i2, j1, j2))
        shown_until = group[-1][2]
    return rows + fold(len(old) - shown_until) if rows else []


def fold(count: int) -> list[DiffRow]:
    return [DiffRow(kind="fold", folded=count)] if count > 0 else []


def opcode_rows(
    tag: str, old: list[str], new: list[str], i1: int, i2: int, j1: int, j2: int
) -> list[DiffRow]:
    """The rows of one SequenceMatcher opcode: a replace pairs lines in order, and lines left unpaired
    (one side changed more lines than the other) show as removed or added."""
    rows = []
    pairs = zip_longest(range(i1, i2), range(j1, j2))
    for i, j in pairs:
        kind: RowKind = (
            "equal" if tag == "equal" else "delete" if j is None else "insert" if i is None else "replace"
        )
        rows.append(
            DiffRow(
                kind=kind,
                old_number=None if i is None else i + 1,
                old_text="" if i is None else old[i],
                new_number=None if j is None else j + 1,
                new_text="" if j is None else new[j],
            )
        )
    return rows


def diff_table_html(old: str, new: str, *, old_title: str, new_title: str, context: int = 3) -> str:
    """Two programs' side-by-side diff as a `<table class="diff">`: line number and code for each side,
    with the two titles above them. Says so in one row when the programs are the same."""
    rows = diff_rows(old.splitlines(), new.splitlines(), context=context)
    head = (
        '<colgroup><col class="num"><col class="code"><col class="num"><col class="code"></colgroup>'
        f'<thead><tr><th colspan="2">{html.escape(old_title)}</th>'
        f'<th colspan="2">{html.escape(new_title)}</th></tr></thead>'
    )
    body = "".join(row_html(row) for row in rows) or (
        '<tr class="diff_fold"><td colspan="4">The two programs are the same.</td></tr>'
    )
    return f'<table class="diff">{head}<tbody>{body}</tbody></table>'


def row_html(row: DiffRow) -> str:
    if row.kind == "fold":
        lines = "line" if row.folded == 1 else "lines"
        return f'<tr class="diff_fold"><td colspan="4">⋯ {row.folded} unchanged {lines}</td></tr>'
    old_html, new_html = html.escape(row.old_text), html.escape(row.new_text)
    if row.kind == "replace":
        old_html, new_html = emphasised(row.old_text, row.new_text)
    return (
        f'<tr class="{ROW_CLASSES[row.kind]}">{cells(row.old_number, old_html, "old")}'
        f"{cells(row.new_number, new_html, 'new')}</tr>"
    )


def cells(number: int | None, code_html: str, side: str) -> str:
    empty = " empty" if number is None else ""
    return f'<td class="num {side}{empty}">{number or ""}</td><td class="code {side}{empty}">{code_html}</td>'


def emphasised(old: str, new: str) -> tuple[str, str]:
    """Both lines escaped, with the words and symbols that differ between them wrapped in
    `<span class="diff_em">` (compared token by token, so a changed name is marked whole).

    >>> emphasised("k = 5", "k = 50")
    ('k = <span class="diff_em">5</span>', 'k = <span class="diff_em">50</span>')
    """
    old_tokens, new_tokens = TOKENS.findall(old), TOKENS.findall(new)
    old_parts, new_parts = [], []
    matcher = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        old_parts.append(marked(old_tokens[i1:i2], emphasise=tag != "equal"))
        new_parts.append(marked(new_tokens[j1:j2], emphasise=tag != "equal"))
    return "".join(old_parts), "".join(new_parts)


def marked(tokens: list[str], *, emphasise: bool) -> str:
    text = "".join(tokens)
    escaped = html.escape(text)
    return f'<span class="diff_em">{escaped}</span>' if emphasise and text else escaped
