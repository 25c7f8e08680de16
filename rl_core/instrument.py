"""Environment instrumentation: insert progress markers into a program, and read them back from its output.

The paper's partial credit (DESIGN.md §1, §4): after the policy wrote a program, the environment inserts a
marker call after each milestone, ``__practicum_mark__("data_loaded")``; running, the first call for a stage
writes ``@@practicum:<nonce>:<stage>`` on its own line to file descriptor 1 (stdout), and `parse_stages`
reads the stages back from the output by that per-attempt nonce. A program that prints stage-like lines
itself does not know the nonce and earns nothing for them.

`instrument` works on the AST. It finds, at any depth (functions, methods, ``if __name__ ...``, loops,
with-blocks, try-blocks):

- ``imports_done``: after the last top-level import (or ``try:`` of imports); without top-level
  imports, after each import statement;
- ``data_loaded``: pandas/polars ``read_*``, numpy ``load/loadtxt/genfromtxt/fromfile/memmap``,
  ``open(...)``, ``Path.read_text/read_bytes``, ``Image.open``, ``imread`` or ``ImageFolder`` of a path that
  mentions ``input`` (a string constant, or a name assigned one);
- ``model_defined``: constructors of estimators (scikit-learn names such as ``*Classifier``,
  ``*Regressor``, ``*Regression``, ``SVC``, ``Ridge``, ``Pipeline``, ``make_pipeline``, ``GridSearchCV``;
  ``LGBM*``, ``XGB*``, ``CatBoost*``), ``torch.nn`` layers and containers, classes of the program that
  subclass ``nn.Module``/``BaseEstimator`` or define ``fit`` and ``predict``, ``AutoModel*.from_pretrained``;
- ``model_trained``: ``.fit(...)`` / ``.partial_fit`` on anything not known to be a preprocessing object
  (``*Scaler``, ``*Encoder``, ``*Vectorizer``, ...), ``lgb.train``/``xgb.train`` (which also define the
  model), ``cross_val_score``-like calls, ``trainer.train()``, and torch training loops (a loop calling
  ``.backward()`` or ``opt*.step()``: the marker goes after the outermost such loop of the function);
- ``predictions_made``: ``.predict``, ``.predict_proba``, ``.predict_log_proba``, ``.decision_function``,
  and calling a model inside ``with torch.no_grad()`` / ``torch.inference_mode()`` (or a function
  decorated with them);
- ``submission_written``: ``.to_csv``, ``.write_csv`` or ``np.savetxt`` with a path that mentions
  ``submission`` (or a receiver named ``sub*``), and ``open(..., "w")`` of such a path.

A call to a function of the program (by its name) or to a method of one of its classes (``x.name(...)``)
that contains events counts as those events too, so the marker also follows ``train = load_data()`` when
``load_data`` ends in ``return pd.read_csv(...)`` (a marker after a ``return`` would never run).

Semantics are never changed: a marker is a statement inserted after the statement containing the event
(joined with ``;`` on the same line for a simple statement, so line numbers in tracebacks still match the
original; on a new line after a compound one such as a with-block or a loop). The marker function is
defined by one ``exec(...)`` statement joined to the first line, catches its own errors and prints each
stage once. The output is checked: with the marker calls removed, its AST must equal the original's;
otherwise the markers are inserted into the AST and the program re-rendered with `ast.unparse` (comments
and line numbers lost), checked the same way. A program that does not parse is returned unchanged, with no
markers: it then fails by itself. `lm_instrument` lets a frozen LM insert the markers, with the same check.

Markers are removed from the stdout shown to users (`strip_markers`); forged lines stay, as program output.
A program that itself names the marker function (``__practicum_mark__``, as a name, an attribute or in a
string) gets no markers at all: calling the environment's marker is the one forgery that the nonce alone
would not stop, so such a program earns no partial credit (and, calling an undefined name, fails). The
same holds for a program that reaches for what would let it find the marker or the nonce at run time
(`INTROSPECTION_NAMES`: ``globals()``, ``vars()``, frames, code objects, ``gc.get_objects``, ``inspect``,
``__file__``/``argv``/``"program.py"`` to read its own source, ``exec``/``eval``/``compile``/``__import__``
to build code the check cannot see): such programs are rare in ML solutions and earn no partial credit;
their submission is still graded. The marker code runs inside the program's own process, so no check of
this kind is complete (a determined program can search its own memory by other means); what keeps forging
from paying is, as in the paper, that a marker is worth far less than a valid submission.
Not covered: events the rules do not recognise (a model built by a helper from another module, a path held
in a function argument); a marker for an event in an ``elif`` test runs after the whole if-chain.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

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

Method = Literal["ast", "lm", "none"]


@dataclass(frozen=True)
class Instrumented:
    """An instrumented program: its source, the stages it has markers for (canonical order), and how."""

    program: str
    inserted: tuple[str, ...]
    method: Method = "ast"


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


# ------------------------------------------------------------------------------------- the rules

_MODEL_CLASS = re.compile(
    r"^(?:[A-Z]\w*(?:Classifier|Regressor|Regression|Ranker|SVC|SVR|NB|Forest|Boost|Boosting|Ridge|Lasso"
    r"|ElasticNet|Perceptron|Pipeline|DiscriminantAnalysis|SearchCV|Sequential)"
    r"|SVC|SVR|NuSVC|NuSVR|LinearSVC|LinearSVR|Ridge|RidgeCV|Lasso|LassoCV|ElasticNet|ElasticNetCV"
    r"|Pipeline|KernelRidge|Sequential|make_pipeline|create_model|LGBM\w*|XGB\w*|CatBoost\w*)$"
)
_PREPROCESSOR_CLASS = re.compile(
    r"(?:Scaler|Encoder|Imputer|Vectorizer|Transformer|Tokenizer|PCA|SVD|Binarizer|Normalizer|Discretizer"
    r"|PolynomialFeatures|SelectKBest|SelectFromModel|VarianceThreshold|Fold|Split|Splitter)$"
)
_MODEL_BASES = re.compile(r"(?:Module|BaseEstimator|ClassifierMixin|RegressorMixin|LightningModule)$")
_READERS = {
    "read_csv",
    "read_parquet",
    "read_json",
    "read_feather",
    "read_excel",
    "read_table",
    "read_pickle",
    "read_hdf",
    "read_fwf",
    "read_orc",
    "scan_csv",
    "scan_parquet",
}
_NUMPY_READERS = {"load", "loadtxt", "genfromtxt", "fromfile", "memmap"}
_PATH_READERS = {"read_text", "read_bytes", "imread", "ImageFolder"}
_FITS = {"fit", "partial_fit", "fit_generator"}
_CROSS_VALIDATION = {"cross_val_score", "cross_validate", "cross_val_predict"}
_PREDICTS = {"predict", "predict_proba", "predict_log_proba", "decision_function"}
_WRITERS = {"to_csv", "write_csv", "savetxt"}
_BOOSTING_MODULES = {"lgb", "lightgbm", "xgb", "xgboost"}
_NO_GRAD = {"no_grad", "inference_mode"}
_LOOP = "__loop__"  # an event whose marker belongs after the enclosing training loop


def _name(node: ast.AST) -> str:
    """The last identifier of a name, attribute or call chain: `np.load` -> 'load', `X().to(d)` -> 'to'."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def _receiver(func: ast.expr) -> str:
    return _name(func.value) if isinstance(func, ast.Attribute) else ""


def _constructor(value: ast.AST) -> str:
    """The class a value was built from, looking through `.to(...)`-style chains: `Net().to(d)` -> 'Net'."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if isinstance(value.func.value, ast.Call):
            value = value.func.value
        else:
            break
    return _name(value.func) if isinstance(value, ast.Call) else ""


@dataclass
class _Facts:
    """What the whole program tells about its names, gathered before events are looked for."""

    model_classes: set[str] = field(default_factory=set)
    models: set[str] = field(default_factory=set)
    preprocessors: set[str] = field(default_factory=set)
    paths: dict[str, set[str]] = field(default_factory=lambda: {"input": set(), "submission": set()})
    functions: dict[str, list[ast.AST]] = field(default_factory=dict)
    function_stages: dict[str, set[str]] = field(default_factory=dict)

    def is_model_class(self, name: str) -> bool:
        return name in self.model_classes or (bool(_MODEL_CLASS.match(name)) and name not in self.functions)

    def mentions(self, nodes: Iterable[ast.AST], word: str) -> bool:
        """Whether a string constant under `nodes` contains `word`, or a name assigned one is used."""
        for node in nodes:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and word in sub.value.lower():
                    return True
                if isinstance(sub, ast.Name) and sub.id in self.paths[word]:
                    return True
        return False


def _gather(tree: ast.Module) -> _Facts:
    facts = _Facts()
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            facts.functions.setdefault(node.name, []).append(node)
    _gather_model_classes(classes, facts)
    for node in ast.walk(tree):
        targets = _assigned_names(node)
        if targets:
            _gather_assignment(targets, node.value, facts)  # type: ignore[attr-defined]
    return facts


def _gather_model_classes(classes: list[ast.ClassDef], facts: _Facts) -> None:
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name in facts.model_classes:
                continue
            methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
            bases = {_name(b) for b in cls.bases}
            if {"fit", "predict"} <= methods or any(
                _MODEL_BASES.search(b) or b in facts.model_classes for b in bases
            ):
                facts.model_classes.add(cls.name)
                changed = True


def _assigned_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Assign):
        targets: list[ast.expr] = list(node.targets)
    elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
        targets = [node.target]
    else:
        return []
    return [t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)]


def _gather_assignment(targets: list[str], value: ast.expr, facts: _Facts) -> None:
    built = _constructor(value)
    is_torch_layer = _is_torch_layer(value.func) if isinstance(value, ast.Call) else False
    for word in ("input", "submission"):
        if facts.mentions([value], word):
            facts.paths[word].update(targets)
    if facts.is_model_class(built) or is_torch_layer:
        facts.models.update(targets)
    elif _PREPROCESSOR_CLASS.search(built):
        facts.preprocessors.update(targets)


def _is_torch_layer(func: ast.expr) -> bool:
    receiver, name = _receiver(func), _name(func)
    return receiver == "nn" and name[:1].isupper() and not name.endswith("Loss") and name != "Parameter"


def _call_events(call: ast.Call, facts: _Facts, no_grad: bool) -> set[str]:
    """The stages one call is an event of (with `_LOOP` for a training-loop step)."""
    func, name = call.func, _name(call.func)
    receiver, args = _receiver(func), [*call.args, *(k.value for k in call.keywords)]
    key = name if isinstance(func, ast.Name) else "." + name  # functions are called by name, methods not
    events: set[str] = set(facts.function_stages.get(key, ()))
    if _is_data_read(call, name, receiver, args, facts):
        events.add("data_loaded")
    if facts.is_model_class(name) or _is_torch_layer(func) or _is_pretrained_model(name, receiver):
        events.add("model_defined")
    if receiver in _BOOSTING_MODULES and name == "train":
        events |= {"model_defined", "model_trained"}
    if _is_fit(call, name, facts) or name in _CROSS_VALIDATION or (name == "train" and "trainer" in receiver):
        events.add("model_trained")
    if name == "backward" or (name == "step" and "opt" in receiver.lower()):
        events.add(_LOOP)
    if name in _PREDICTS or (no_grad and (name in facts.models or name == "forward")):
        events.add("predictions_made")
    if _is_submission_write(call, name, receiver, args, facts):
        events.add("submission_written")
    return events


def _is_data_read(call: ast.Call, name: str, receiver: str, args: list[ast.expr], facts: _Facts) -> bool:
    if name in _READERS or (receiver in {"np", "numpy"} and name in _NUMPY_READERS):
        return True
    opens = name == "open" and not _writes(call)
    if opens or name in _PATH_READERS:
        return facts.mentions(
            [*args, *([call.func.value] if isinstance(call.func, ast.Attribute) else [])], "input"
        )
    return False


def _writes(call: ast.Call) -> bool:
    modes = [*call.args[1:2], *(k.value for k in call.keywords if k.arg == "mode")]
    return any(
        isinstance(m, ast.Constant) and isinstance(m.value, str) and set(m.value) & set("wax") for m in modes
    )


def _is_fit(call: ast.Call, name: str, facts: _Facts) -> bool:
    if name not in _FITS or not isinstance(call.func, ast.Attribute):
        return False
    target = call.func.value
    preprocessor = _name(target) in facts.preprocessors if isinstance(target, ast.Name) else False
    return not preprocessor and not _PREPROCESSOR_CLASS.search(_constructor(target))


def _is_pretrained_model(name: str, receiver: str) -> bool:
    return name == "from_pretrained" and "Model" in receiver


def _is_submission_write(
    call: ast.Call, name: str, receiver: str, args: list[ast.expr], facts: _Facts
) -> bool:
    if name in _WRITERS:
        return facts.mentions(args, "submission") or receiver.lower().startswith("sub")
    return name == "open" and _writes(call) and facts.mentions(args, "submission")


# ------------------------------------------------------------------------------------- where markers go


@dataclass
class _Anchor:
    """Markers for `stages` go right after `stmt`, which sits in the statement list `body`."""

    stmt: ast.stmt
    body: list[ast.stmt]
    stages: set[str]


_Loops = tuple[tuple[ast.stmt, list[ast.stmt]], ...]


class _Walker:
    """Finds the anchors of one program, given the facts and the stages of its functions so far."""

    def __init__(self, facts: _Facts, import_anchor: ast.stmt | None) -> None:
        self.facts, self.import_anchor = facts, import_anchor
        self.anchors: dict[int, _Anchor] = {}
        self.function_stages: dict[str, set[str]] = {}  # "name" for functions, ".name" for methods
        self.functions: list[str] = []
        self.class_bodies: set[int] = set()

    def body(self, stmts: list[ast.stmt], loops: _Loops = (), no_grad: bool = False) -> None:
        for stmt in stmts:
            self.statement(stmt, stmts, loops, no_grad)

    def statement(self, stmt: ast.stmt, body: list[ast.stmt], loops: _Loops, no_grad: bool) -> None:
        events = set().union(*(_call_events(c, self.facts, no_grad) for c in _direct_calls(stmt)))
        if _LOOP in events:
            events.discard(_LOOP)
            self._add(*(loops[0] if loops else (stmt, body)), {"model_trained"})
        if stmt is self.import_anchor or (
            self.import_anchor is None and isinstance(stmt, ast.Import | ast.ImportFrom)
        ):
            events.add("imports_done")
        if isinstance(stmt, ast.Return | ast.Raise):
            self._credit(events)  # a marker after it would never run: the call sites get it
        elif events:
            self._add(stmt, body, events)
        self._nested(stmt, body, loops, no_grad)

    def _nested(self, stmt: ast.stmt, body: list[ast.stmt], loops: _Loops, no_grad: bool) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            self.functions.append(("." if id(body) in self.class_bodies else "") + stmt.name)
            self.body(stmt.body, (), any(_name(d) in _NO_GRAD for d in stmt.decorator_list))
            self.functions.pop()
        elif isinstance(stmt, ast.ClassDef):
            self.class_bodies.add(id(stmt.body))
            self.body(stmt.body)
        elif isinstance(stmt, ast.For | ast.AsyncFor | ast.While):
            self.body(stmt.body, (*loops, (stmt, body)), no_grad)
            self.body(stmt.orelse, loops, no_grad)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            entering = any(_name(item.context_expr) in _NO_GRAD for item in stmt.items)
            self.body(stmt.body, loops, no_grad or entering)
        else:
            for block in _blocks(stmt):
                self.body(block, loops, no_grad)

    def _add(self, stmt: ast.stmt, body: list[ast.stmt], stages: set[str]) -> None:
        anchor = self.anchors.setdefault(id(stmt), _Anchor(stmt, body, set()))
        anchor.stages |= stages
        self._credit(stages)

    def _credit(self, stages: set[str]) -> None:
        """Calls to the enclosing functions are events of `stages` too (dunder methods excepted)."""
        for function in self.functions:
            if not function.lstrip(".").startswith("__"):
                self.function_stages.setdefault(function, set()).update(stages - {"imports_done"})


def _blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists nested in an if, try or match statement."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list):
            yield block
    for handler in getattr(stmt, "handlers", []):
        yield handler.body
    for case in getattr(stmt, "cases", []):
        yield case.body


_BLOCK_FIELDS = {"body", "orelse", "finalbody", "handlers", "cases"}


def _direct_calls(stmt: ast.stmt) -> Iterator[ast.Call]:
    """The calls in a statement's own expressions (a compound statement's header), not in nested blocks."""
    for name, value in ast.iter_fields(stmt):
        if name in _BLOCK_FIELDS:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.AST):
                yield from (n for n in ast.walk(item) if isinstance(n, ast.Call))


def _is_import(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.ImportFrom):
        return stmt.module != "__future__"
    if isinstance(stmt, ast.Try):
        return all(isinstance(s, ast.Import | ast.ImportFrom) for s in stmt.body)
    return isinstance(stmt, ast.Import)


def _anchors(tree: ast.Module) -> list[_Anchor]:
    """Where markers go, iterating until the stages of the program's functions stop changing."""
    facts = _gather(tree)
    imports = [s for s in tree.body if _is_import(s)]
    for _ in range(10):
        walker = _Walker(facts, imports[-1] if imports else None)
        walker.body(tree.body)
        if walker.function_stages == facts.function_stages:
            break
        facts.function_stages = walker.function_stages
    return list(walker.anchors.values())


# ------------------------------------------------------------------------------------- rendering

_MARK_SOURCE = """def __practicum_mark__(*stages, _seen=set()):
    new = [s for s in stages if s not in _seen]
    _seen.update(new)
    try:
        __import__("sys").stdout.flush()
    except Exception:
        pass
    try:
        __import__("os").write(1, "".join("@@practicum:NONCE:%s\\n" % s for s in new).encode())
    except Exception:
        pass
"""


def _prelude(nonce: str) -> str:
    """One simple statement defining the marker function (so it can share a line with the program's)."""
    if not re.fullmatch(r"\w+", nonce):
        raise ValueError(f"A nonce must be letters, digits or underscores, got {nonce!r}.")
    return f"exec({_MARK_SOURCE.replace('NONCE', nonce)!r})"


def _mark_call(stages: Iterable[str]) -> str:
    return f"{MARK_FUNCTION}({', '.join(repr(s) for s in STAGES if s in set(stages))})"


class _CannotRender(Exception):
    pass


def _prelude_index(tree: ast.Module) -> int:
    """How many leading statements (the docstring, `from __future__` imports) must precede the prelude."""
    body, head = tree.body, 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        head = 1
    while head < len(body) and isinstance(body[head], ast.ImportFrom) and body[head].module == "__future__":  # type: ignore[attr-defined]
        head += 1
    return head


def _prelude_edit(tree: ast.Module, lines: list[str], prelude: str) -> tuple[int, int, str] | tuple[int, str]:
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


def _line_start(anchor: _Anchor, parents: Mapping[int, ast.stmt], lines: list[str]) -> ast.stmt:
    """The statement after which a new line can go: an `elif` hands over to its `if`."""
    stmt = anchor.stmt
    while lines[stmt.lineno - 1].lstrip().startswith("elif") and id(stmt) in parents:
        stmt = parents[id(stmt)]
    if lines[stmt.lineno - 1].encode()[: stmt.col_offset].strip():
        raise _CannotRender(f"line {stmt.lineno}")
    return stmt


def _render_text(program: str, tree: ast.Module, anchors: list[_Anchor], nonce: str) -> str:
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
    edit = _prelude_edit(tree, lines, _prelude(nonce))
    (inline if len(edit) == 3 else new_lines).append(edit)  # type: ignore[arg-type]
    return _splice(lines, inline, new_lines)


def _splice(lines: list[str], inline: list[tuple[int, int, str]], new_lines: list[tuple[int, str]]) -> str:
    """Apply edits to `lines`: texts inserted at (line index, byte column), and new lines before an index."""
    for index, column, text in sorted(inline, reverse=True):
        encoded = lines[index].encode()
        lines[index] = (encoded[:column] + text.encode() + encoded[column:]).decode()
    for index, text in sorted(new_lines, key=lambda item: item[0], reverse=True):
        lines.insert(index, text)
    return "\n".join(lines)


def _render_ast(tree: ast.Module, anchors: list[_Anchor], nonce: str) -> str:
    """The program re-rendered from its AST with marker statements inserted (used when splicing fails)."""
    for anchor in anchors:
        index = next(i for i, s in enumerate(anchor.body) if s is anchor.stmt)
        anchor.body.insert(index + 1, ast.parse(_mark_call(anchor.stages)).body[0])
    tree.body.insert(_prelude_index(tree), ast.parse(_prelude(nonce)).body[0])
    return ast.unparse(ast.fix_missing_locations(tree))


# ------------------------------------------------------------------------------------- checking


def _is_marker(stmt: ast.stmt) -> bool:
    """`__practicum_mark__("stage", ...)` as a statement, with known stage names only."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    call = stmt.value
    return (
        isinstance(call.func, ast.Name)
        and call.func.id == MARK_FUNCTION
        and not call.keywords
        and bool(call.args)
        and all(isinstance(a, ast.Constant) and a.value in STAGES for a in call.args)
    )


def _is_prelude(stmt: ast.stmt) -> bool:
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    call = stmt.value
    return (
        isinstance(call.func, ast.Name)
        and call.func.id == "exec"
        and len(call.args) == 1
        and isinstance(call.args[0], ast.Constant)
        and str(call.args[0].value).startswith(f"def {MARK_FUNCTION}(")
    )


def _strip(tree: ast.Module, *, prelude: bool) -> tuple[ast.Module, set[str]]:
    """The tree without marker statements (and the prelude, when asked), and the stages the markers named."""
    stages: set[str] = set()
    for node in ast.walk(tree):
        for name in _BLOCK_FIELDS - {"handlers", "cases"}:
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                for stmt in block:
                    if _is_marker(stmt):
                        stages.update(a.value for a in stmt.value.args)  # type: ignore[attr-defined]
                block[:] = [s for s in block if not _is_marker(s) and not (prelude and _is_prelude(s))]
    return tree, stages


def _checked(candidate: str, original_dump: str, *, prelude: bool) -> tuple[str, ...] | None:
    """The stages `candidate` marks when, without its markers, it is the original program; else None."""
    try:
        tree = ast.parse(candidate)
    except (SyntaxError, ValueError):
        return None
    stripped, stages = _strip(tree, prelude=prelude)
    if ast.dump(stripped) != original_dump:
        return None
    return tuple(s for s in STAGES if s in stages)


INTROSPECTION_NAMES = frozenset(
    {"globals", "vars", "locals", "exec", "eval", "compile", "__import__", "__builtins__", "__main__",
     "__file__", "argv", "inspect"}
)  # fmt: skip
"""Names (bare, or imported modules) through which a program could reach the marker function or read the
nonce at run time: its globals, its own source file, code built at run time, frame inspection."""
INTROSPECTION_ATTRIBUTES = frozenset(
    {"_getframe", "currentframe", "f_globals", "f_locals", "f_back", "f_code", "co_consts", "__code__",
     "__globals__", "__builtins__", "__file__", "argv", "get_objects", "get_referrers", "get_referents"}
)  # fmt: skip
"""Attributes with the same reach (``sys._getframe``, ``gc.get_objects``, ``f.__globals__``, ...).
``model.eval()`` and ``model.compile()`` are innocent attributes: only bare ``eval``/``compile`` count."""
INTROSPECTION_STRINGS = ("program.py", "/proc/self", "practicum")


def _names_the_marker(tree: ast.Module) -> bool:
    """Whether the policy's program mentions the marker function, or reaches for what would let it find the
    marker or its nonce at run time (`INTROSPECTION_NAMES`, `INTROSPECTION_ATTRIBUTES`, ...STRINGS)."""
    for node in ast.walk(tree):
        if _introspects(node):
            return True
        text = node.value.lower() if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
        if any(fragment in text for fragment in INTROSPECTION_STRINGS):
            return True
    return False


def _introspects(node: ast.AST) -> bool:
    """Whether `node` names the marker function or one of the introspection names or attributes."""
    if isinstance(node, ast.Attribute):
        return MARK_FUNCTION.rstrip("_") in node.attr or node.attr in INTROSPECTION_ATTRIBUTES
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.alias):
        name = node.name.split(".")[0]
    elif isinstance(node, ast.ImportFrom) and node.module:
        name = node.module.split(".")[0]
    else:
        return False
    return MARK_FUNCTION.rstrip("_") in name or name in INTROSPECTION_NAMES


def _parse(program: str) -> ast.Module | None:
    try:
        return ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


# ------------------------------------------------------------------------------------- instrumenters


def instrument(program: str, nonce: str) -> Instrumented:
    """Insert the stage markers, printing with `nonce` (letters, digits, underscores), by AST rules.

    Returns the program unchanged with no markers when it does not parse, has no recognisable event, or
    names the marker function itself (a forgery: see the module docstring).

    >>> out = instrument("import pandas as pd\\ndf = pd.read_csv('input/train.csv')\\n", "ab12")
    >>> out.inserted
    ('imports_done', 'data_loaded')
    >>> out.program.splitlines()[1]
    "df = pd.read_csv('input/train.csv'); __practicum_mark__('data_loaded')"
    """
    tree = _parse(program)
    if tree is None or _names_the_marker(tree):
        return Instrumented(program, (), "ast")
    original_dump, anchors = ast.dump(tree), _anchors(tree)
    if not anchors:
        return Instrumented(program, (), "ast")
    try:
        candidate: str | None = _render_text(program, tree, anchors, nonce)
    except (_CannotRender, IndexError, UnicodeDecodeError):  # positions that do not fit the text
        candidate = None
    stages = _checked(candidate, original_dump, prelude=True) if candidate is not None else None
    if stages is None:
        candidate = _render_ast(tree, anchors, nonce)
        stages = _checked(candidate, original_dump, prelude=True)
    if stages is None:
        return Instrumented(program, (), "ast")
    return Instrumented(candidate, stages, "ast")  # type: ignore[arg-type]


LM_PROMPT = """You add progress markers to a Python program without changing it in any other way.
After the statement where each milestone happens, insert a new statement `__practicum_mark__("STAGE")`, with
STAGE one of: imports_done (the imports are done), data_loaded (the input data is read), model_defined (the
model is constructed), model_trained (the model is fitted or its training loop ends), predictions_made
(predictions are computed), submission_written (the submission file is written).
Do not define __practicum_mark__. Do not edit, add, remove or reorder any other code, comments aside.
Reply with the whole program in one ```python code block and nothing else.

```python
{program}
```
"""


def lm_instrument(program: str, nonce: str, generate: Callable[[str], str]) -> Instrumented:
    """Let a frozen LM insert the markers; keep its version only if, without the marker calls, its AST
    equals the original's and it marks at least one stage. Otherwise (or if `generate` raises) the AST
    instrumenter's result is returned (``method="ast"``).

    Args:
        generate: prompt -> completion, e.g. greedy decoding with the base model's adapters off.
    """
    tree = _parse(program)
    if tree is None or _names_the_marker(tree):
        return Instrumented(program, (), "ast")
    try:
        candidate = _reply_code(generate(LM_PROMPT.format(program=program)))
    except Exception:
        return instrument(program, nonce)
    original_dump = ast.dump(tree)
    stages = _checked(candidate, original_dump, prelude=False)
    if not stages:
        return instrument(program, nonce)
    lines = candidate.split("\n")
    edit = _prelude_edit(ast.parse(candidate), lines, _prelude(nonce))
    try:
        with_prelude = _splice(lines, [edit], []) if len(edit) == 3 else _splice(lines, [], [edit])  # type: ignore[list-item]
    except (IndexError, UnicodeDecodeError):
        return instrument(program, nonce)
    if _checked(with_prelude, original_dump, prelude=True) != stages:
        return instrument(program, nonce)
    return Instrumented(with_prelude, stages, "lm")


def _reply_code(reply: str) -> str:
    """The code of an LM reply: its one fenced block, or the whole reply when it has none."""
    from rl_core.responses import parse_response

    parsed = parse_response(reply)
    return parsed.code if parsed.code is not None else reply
