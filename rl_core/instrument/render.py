"""Writing the markers into a program, and checking the result: spliced into the program's own text (line
numbers kept) or, failing that, re-rendered from the AST; either is kept only if, with the markers removed,
its AST equals the original's (`checked`)."""

from __future__ import annotations

import ast
import inspect
import io
import tokenize
from collections.abc import Iterable, Mapping

from rl_core.instrument import marker_function
from rl_core.instrument.markers import MARK_FUNCTION, STAGES
from rl_core.instrument.rules import BLOCK_FIELDS, Anchor, CallAnchor, Placement


def _marker_source() -> str:
    """`marker_function.__practicum_mark__` as compact source (no docstrings, annotations or comments),
    then its first call."""
    module = ast.parse(inspect.getsource(marker_function))
    function = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == MARK_FUNCTION)
    for node in ast.walk(function):
        if isinstance(node, ast.FunctionDef):
            node.returns = None
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                node.body = node.body[1:]
        elif isinstance(node, ast.arg):
            node.annotation = None
    return f"{ast.unparse(function)}\n{MARK_FUNCTION}()\n"


_MARK_SOURCE = _marker_source()
"""The marker function (rl_core.instrument.marker_function, which says what evidence each stage needs)."""


def prelude_statement() -> str:
    """One simple statement defining the marker function (so it can share a line with the program's)."""
    return f"exec({_MARK_SOURCE!r})"


def _mark_call(stages: Iterable[str]) -> str:
    return f"{MARK_FUNCTION}({_stage_list(stages)})"


def _stage_list(stages: Iterable[str]) -> str:
    return ", ".join(repr(s) for s in STAGES if s in set(stages))


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


def render_text(program: str, tree: ast.Module, placement: Placement) -> str:
    """The program with markers spliced into its own text, line numbers kept: each event call's callee
    wrapped in place, ``imports_done`` as ``; mark(...)`` on the last import's line (or a new line after a
    compound one), and the prelude joined to the first statement."""
    lines = program.split("\n")
    parents = {id(c): p for p in ast.walk(tree) if isinstance(p, ast.If) for c in p.orelse}
    inline: list[tuple[int, int, str]] = []
    new_lines: list[tuple[int, str]] = []
    for anchor in placement.imports:
        call = _mark_call(anchor.stages)
        if _is_compound(anchor.stmt):
            stmt = _line_start(anchor, parents, lines)
            indent = lines[stmt.lineno - 1].encode()[: stmt.col_offset].decode()
            new_lines.append((stmt.end_lineno, indent + call))  # type: ignore[arg-type]
        else:
            inline.append((anchor.stmt.end_lineno - 1, anchor.stmt.end_col_offset, "; " + call))  # type: ignore[operator,arg-type]
    for wrapped in sorted(placement.calls, key=_span):  # inner first: at one column, the outer ends up left
        func = wrapped.call.func
        inline.append((func.lineno - 1, func.col_offset, f"{MARK_FUNCTION}({_stage_list(wrapped.stages)}, "))
        inline.append((func.end_lineno - 1, func.end_col_offset, ")"))  # type: ignore[operator,arg-type]
    edit = prelude_edit(tree, lines, prelude_statement())
    (inline if len(edit) == 3 else new_lines).append(edit)  # type: ignore[arg-type]
    return splice(lines, inline, new_lines)


def _span(anchor: CallAnchor) -> tuple[int, int]:
    func = anchor.call.func
    return func.end_lineno - func.lineno, func.end_col_offset - func.col_offset  # type: ignore[operator]


def splice(lines: list[str], inline: list[tuple[int, int, str]], new_lines: list[tuple[int, str]]) -> str:
    """Apply edits to `lines`: texts inserted at (line index, byte column), and new lines before an index.
    Texts at one position are inserted in list order, each left of those before it."""
    for index, column, text in sorted(inline, key=lambda edit: edit[:2], reverse=True):  # stable: list order
        encoded = lines[index].encode()
        lines[index] = (encoded[:column] + text.encode() + encoded[column:]).decode()
    for index, text in sorted(new_lines, key=lambda item: item[0], reverse=True):
        lines.insert(index, text)
    return "\n".join(lines)


def render_ast(tree: ast.Module, placement: Placement) -> str:
    """The program re-rendered from its AST with the markers in (used when splicing fails)."""
    for anchor in placement.imports:
        index = next(i for i, s in enumerate(anchor.body) if s is anchor.stmt)
        anchor.body.insert(index + 1, ast.parse(_mark_call(anchor.stages)).body[0])
    for wrapped in placement.calls:
        stages: list[ast.expr] = [ast.Constant(s) for s in STAGES if s in wrapped.stages]
        wrapped.call.func = ast.Call(ast.Name(MARK_FUNCTION, ast.Load()), [*stages, wrapped.call.func], [])
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


class _Unwrap(ast.NodeTransformer):
    """Turns each wrapped call ``__practicum_mark__("stage", f)(x)`` back into ``f(x)``, noting the stages."""

    def __init__(self) -> None:
        self.stages: set[str] = set()

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        wrapper = node.func
        if isinstance(wrapper, ast.Call) and _is_wrapper(wrapper):
            self.stages.update(a.value for a in wrapper.args[:-1])  # type: ignore[attr-defined]
            node.func = wrapper.args[-1]
        return node


def _is_wrapper(call: ast.Call) -> bool:
    """``__practicum_mark__("stage", ..., callee)``: known stages, then one plain expression."""
    return (
        isinstance(call.func, ast.Name)
        and call.func.id == MARK_FUNCTION
        and not call.keywords
        and len(call.args) >= 2
        and all(isinstance(a, ast.Constant) and a.value in STAGES for a in call.args[:-1])
        and not isinstance(call.args[-1], ast.Starred)
    )


def _strip(tree: ast.Module, *, prelude: bool) -> tuple[ast.Module, set[str]]:
    """The tree without its markers (statements and call wrappers; the prelude too, when asked), and the
    stages they named."""
    unwrap = _Unwrap()
    tree = unwrap.visit(tree)
    stages = unwrap.stages
    for node in ast.walk(tree):
        for name in BLOCK_FIELDS - {"handlers", "cases"}:
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                for stmt in block:
                    if _is_marker(stmt):
                        stages.update(a.value for a in stmt.value.args)
                block[:] = [s for s in block if not _is_marker(s) and not (prelude and _is_prelude(s))]
    return tree, stages


def strip_markers(tree: ast.Module) -> ast.Module:
    """`tree` (changed in place) without its marker statements and call wrappers, the prelude kept."""
    return _strip(tree, prelude=False)[0]


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
