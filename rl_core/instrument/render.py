"""Writing the markers into a program, and checking the result: spliced into the program's own text (line
numbers kept) or, failing that, re-rendered from the AST; either is kept only if, with the markers removed,
its AST equals the original's (`checked`)."""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterable, Mapping

from rl_core.instrument.markers import CHANNEL_ENV, MARK_FUNCTION, MARKER_PREFIX, STAGES
from rl_core.instrument.rules import BLOCK_FIELDS, Anchor

_MARK_SOURCE = """def __practicum_mark__(*stages, _seen=set(), _link=[]):
    import os
    if not _link:
        try:
            fd = int(os.environ.pop(CHANNEL_ENV))
            os.set_inheritable(fd, False)
            _link[:] = [fd, os.read(fd, 64).strip()]
        except Exception:
            _link[:] = [-1, b""]
        return
    new = [s for s in stages if s not in _seen]
    _seen.update(new)
    try:
        os.write(_link[0], b"".join(PREFIX + _link[1] + b":" + s.encode() + b"\\n" for s in new))
    except Exception:
        pass
__practicum_mark__()
""".replace("CHANNEL_ENV", repr(CHANNEL_ENV)).replace("PREFIX", repr(MARKER_PREFIX.encode()))
"""The marker function. Its first call, from the prelude itself before any of the program's code runs,
takes the channel's descriptor from the environment (removing it there, and from child processes) and
reads the attempt's nonce from the channel: the nonce is never in the program's text, its environment or
its arguments. Each later call writes the lines of the stages not yet marked to the channel, never to
stdout. Without a channel (the program run by hand) markers write nothing."""


def prelude_statement() -> str:
    """One simple statement defining the marker function (so it can share a line with the program's)."""
    return f"exec({_MARK_SOURCE!r})"


def _mark_call(stages: Iterable[str]) -> str:
    return f"{MARK_FUNCTION}({', '.join(repr(s) for s in STAGES if s in set(stages))})"


class CannotRender(Exception):
    pass


def _prelude_index(tree: ast.Module) -> int:
    """How many leading statements (the docstring, `from __future__` imports) must precede the prelude."""
    body, head = tree.body, 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        head = 1
    while head < len(body) and isinstance(body[head], ast.ImportFrom) and body[head].module == "__future__":  # type: ignore[attr-defined]
        head += 1
    return head


def prelude_edit(tree: ast.Module, lines: list[str], prelude: str) -> tuple[int, int, str] | tuple[int, str]:
    """Where the prelude goes: (line index, byte column, text) joined to a line, or (line index, text) as a
    new line before it when the first statement is compound (every later line number then shifts by one)."""
    head = _prelude_index(tree)
    if head > 0:
        last = tree.body[head - 1]
        return last.end_lineno - 1, last.end_col_offset, "; " + prelude  # type: ignore[operator,return-value]
    first = tree.body[0]
    start = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))]) - 1
    if _is_compound(first) or lines[start].encode()[: first.col_offset].strip():
        return start, prelude
    return start, first.col_offset, prelude + "; "


def _is_compound(stmt: ast.stmt) -> bool:
    return any(isinstance(getattr(stmt, f, None), list) for f in ("body", "handlers", "cases"))


def _line_start(anchor: Anchor, parents: Mapping[int, ast.stmt], lines: list[str]) -> ast.stmt:
    """The statement after which a new line can go: an `elif` hands over to its `if`."""
    stmt = anchor.stmt
    while lines[stmt.lineno - 1].lstrip().startswith("elif") and id(stmt) in parents:
        stmt = parents[id(stmt)]
    if lines[stmt.lineno - 1].encode()[: stmt.col_offset].strip():
        raise CannotRender(f"line {stmt.lineno}")
    return stmt


def render_text(program: str, tree: ast.Module, anchors: list[Anchor]) -> str:
    """The program with markers spliced into its own text (simple statements: `; mark(...)` on the line)."""
    lines = program.split("\n")
    parents = {id(c): p for p in ast.walk(tree) if isinstance(p, ast.If) for c in p.orelse}
    inline: list[tuple[int, int, str]] = []
    new_lines: list[tuple[int, str]] = []
    for anchor in anchors:
        call = _mark_call(anchor.stages)
        if _is_compound(anchor.stmt):
            stmt = _line_start(anchor, parents, lines)
            indent = lines[stmt.lineno - 1].encode()[: stmt.col_offset].decode()
            new_lines.append((stmt.end_lineno, indent + call))  # type: ignore[arg-type]
        else:
            inline.append((anchor.stmt.end_lineno - 1, anchor.stmt.end_col_offset, "; " + call))  # type: ignore[operator,arg-type]
    edit = prelude_edit(tree, lines, prelude_statement())
    (inline if len(edit) == 3 else new_lines).append(edit)  # type: ignore[arg-type]
    return splice(lines, inline, new_lines)


def splice(lines: list[str], inline: list[tuple[int, int, str]], new_lines: list[tuple[int, str]]) -> str:
    """Apply edits to `lines`: texts inserted at (line index, byte column), and new lines before an index."""
    for index, column, text in sorted(inline, reverse=True):
        encoded = lines[index].encode()
        lines[index] = (encoded[:column] + text.encode() + encoded[column:]).decode()
    for index, text in sorted(new_lines, key=lambda item: item[0], reverse=True):
        lines.insert(index, text)
    return "\n".join(lines)


def render_ast(tree: ast.Module, anchors: list[Anchor]) -> str:
    """The program re-rendered from its AST with marker statements inserted (used when splicing fails)."""
    for anchor in anchors:
        index = next(i for i, s in enumerate(anchor.body) if s is anchor.stmt)
        anchor.body.insert(index + 1, ast.parse(_mark_call(anchor.stages)).body[0])
    tree.body.insert(_prelude_index(tree), ast.parse(prelude_statement()).body[0])
    return ast.unparse(ast.fix_missing_locations(tree))


def _call_statement(stmt: ast.stmt, name: str) -> ast.Call | None:
    """The call when `stmt` is a bare call statement of the function `name`, else None."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        if isinstance(call.func, ast.Name) and call.func.id == name:
            return call
    return None


def _is_marker(stmt: ast.stmt) -> bool:
    """`__practicum_mark__("stage", ...)` as a statement, with known stage names only."""
    call = _call_statement(stmt, MARK_FUNCTION)
    return (
        call is not None
        and not call.keywords
        and bool(call.args)
        and all(isinstance(a, ast.Constant) and a.value in STAGES for a in call.args)
    )


def marker_stages(stmt: ast.stmt) -> set[str] | None:
    """The stages a marker statement names; None for any other statement."""
    return {a.value for a in stmt.value.args} if _is_marker(stmt) else None  # type: ignore[attr-defined]


def _is_prelude(stmt: ast.stmt) -> bool:
    call = _call_statement(stmt, "exec")
    return (
        call is not None
        and len(call.args) == 1
        and isinstance(call.args[0], ast.Constant)
        and str(call.args[0].value).startswith(f"def {MARK_FUNCTION}(")
    )


def _strip(tree: ast.Module, *, prelude: bool) -> tuple[ast.Module, set[str]]:
    """The tree without marker statements (and the prelude, when asked), and the stages the markers named."""
    stages: set[str] = set()
    for node in ast.walk(tree):
        for name in BLOCK_FIELDS - {"handlers", "cases"}:
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                for stmt in block:
                    if _is_marker(stmt):
                        stages.update(a.value for a in stmt.value.args)
                block[:] = [s for s in block if not _is_marker(s) and not (prelude and _is_prelude(s))]
    return tree, stages


def checked(candidate: str, original_dump: str, *, prelude: bool) -> tuple[str, ...] | None:
    """The stages `candidate` marks when, without its markers, it is the original program; else None."""
    try:
        tree = ast.parse(candidate)
    except (SyntaxError, ValueError):
        return None
    stripped, stages = _strip(tree, prelude=prelude)
    if ast.dump(stripped) != original_dump:
        return None
    return tuple(s for s in STAGES if s in stages)


def parse_program(program: str) -> ast.Module | None:
    """The program's AST, or None when it does not parse or declares a source encoding other than UTF-8
    (`declares_utf8`): every instrumenter refuses such a program, which then runs with no markers."""
    if not declares_utf8(program):
        return None
    try:
        return ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def declares_utf8(program: str) -> bool:
    """Whether Python reads `program`, written to a file as UTF-8 (as the sandbox writes it), as UTF-8 too.

    A coding cookie (``# coding: utf-7`` in the first two lines) makes the interpreter decode the file
    otherwise, and then the text it runs is not the text that was checked: in UTF-7, ``+AAo-`` is a line
    break, so what reads as a comment here runs as a statement there. Checking the text the interpreter
    would run instead would mean decoding with codecs chosen by the program; refusing is simpler and costs
    an honest program nothing.

    >>> declares_utf8("# -*- coding: utf-8 -*-\\nx = 1\\n"), declares_utf8("# coding: utf-7\\nx = 1\\n")
    (True, False)
    >>> declares_utf8("# coding: no-such-codec\\nx = 1\\n")
    False
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(program.encode("utf-8", "surrogatepass")).readline)
    except SyntaxError:  # an unknown codec, or a BOM with a cookie that contradicts it
        return False
    return encoding in {"utf-8", "utf-8-sig"}
