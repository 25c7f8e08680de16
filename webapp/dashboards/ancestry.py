"""Where an attempt's program came from, for the attempt page: the parent an improve prompt showed the
policy (`Attempt.parent_key`, the loop's id of that attempt) and unified diffs as lines with their kind,
so the page colours additions, removals and hunk headers without trusting any markup from the programs."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from webapp.runs import selectors
from webapp.runs.models import Attempt

BASELINE_KEY = re.compile(r"\d+-baseline-\d+")
"""The key of a seeded baseline (rl_core.loop.seed_pools: f"{seed}-baseline-{n}"), which is no attempt."""


@dataclass(frozen=True)
class Parent:
    """The program an improve attempt started from.

    Attributes:
        key: the loop's id of the parent; "" when it was not recorded (attempts from before it was).
        attempt: the parent, when it is one of the run's stored attempts.
        is_baseline: whether the parent is the competition's seeded baseline (run once, never stored).
    """

    key: str
    attempt: Attempt | None
    is_baseline: bool


@dataclass(frozen=True)
class DiffLine:
    """One line of a unified diff: kind is "file", "hunk", "added", "removed" or "context"."""

    kind: str
    text: str


def attempt_parent(attempt: Attempt) -> Parent | None:
    """The parent of an improve (or eval-improve) attempt; None for a solve attempt, which has none."""
    if not attempt.prompt_kind.endswith("improve"):
        return None
    key = attempt.parent_key
    parent = selectors.attempt_get_by_key(run_id=attempt.run_id, key=key) if key else None
    return Parent(key=key, attempt=parent, is_baseline=parent is None and bool(BASELINE_KEY.fullmatch(key)))


def program_diff_lines(old: Attempt, new: Attempt, *, old_label: str) -> list[DiffLine]:
    """The unified diff from `old`'s program to `new`'s, headed "attempt N (<old_label>)"."""
    old_name, new_name = f"attempt {old.number} ({old_label})", f"attempt {new.number}"
    return diff_lines(old.program, new.program, old_name=old_name, new_name=new_name)


def diff_lines(old: str, new: str, *, old_name: str, new_name: str) -> list[DiffLine]:
    """The unified diff of two texts, each line with its kind; [] when they are the same.

    >>> lines = diff_lines("a\\nb\\n", "a\\nc\\n", old_name="x", new_name="y")
    >>> [line.kind for line in lines], [line.text for line in lines][2:]
    (['file', 'file', 'hunk', 'context', 'removed', 'added'], ['@@ -1,2 +1,2 @@', ' a', '-b', '+c'])
    """
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), fromfile=old_name, tofile=new_name, lineterm=""
    )
    return [DiffLine(line_kind(line, header=index < 2), line) for index, line in enumerate(lines)]


def line_kind(line: str, *, header: bool) -> str:
    """The kind of one diff line; `header` for the two file lines (a removed line "--x" also starts "---")."""
    if header:
        return "file"
    if line.startswith("@@"):
        return "hunk"
    return {"+": "added", "-": "removed"}.get(line[:1], "context")
