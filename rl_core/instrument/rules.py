"""Where markers go: the rules that recognise each stage's event calls in a program's AST (`find_placement`:
the calls to wrap, and the last import), and what a marker statement of an LM may claim (`event_stages`,
`markers_follow_their_events`, `placement_within`)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

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
    """The stages one call is an event of."""
    func, name = call.func, _name(call.func)
    receiver, args = _receiver(func), [*call.args, *(k.value for k in call.keywords)]
    events: set[str] = set()
    if _is_data_read(call, name, receiver, args, facts):
        events.add("data_loaded")
    if facts.is_model_class(name) or _is_torch_layer(func) or _is_pretrained_model(name, receiver):
        events.add("model_defined")
    if receiver in _BOOSTING_MODULES and name == "train":
        events |= {"model_defined", "model_trained"}
    if _is_fit(call, name, facts) or name in _CROSS_VALIDATION or (name == "train" and "trainer" in receiver):
        events.add("model_trained")
    if name == "backward" or (name == "step" and "opt" in receiver.lower()):
        events.add("model_trained")  # a training step: the evidence checks it really stepped
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
class Anchor:
    """A marker statement for `stages` goes right after `stmt`, which sits in the statement list `body`
    (``imports_done`` only: an import that completed has run)."""

    stmt: ast.stmt
    body: list[ast.stmt]
    stages: set[str]


@dataclass
class CallAnchor:
    """`call` is an event of `stages`: its callee is wrapped, so its markers can fire only when the call
    itself is evaluated and returns (never for a call in an untaken branch, an uncalled lambda, a loop that
    ran zero times), and then only on the evidence its result and receiver give (`marker_function`)."""

    call: ast.Call
    stages: set[str]


@dataclass
class Placement:
    """Where one program's markers go."""

    imports: list[Anchor]
    calls: list[CallAnchor]

    @property
    def stages(self) -> set[str]:
        return set().union(*(a.stages for a in self.imports), *(a.stages for a in self.calls))


class _Walker:
    """Finds the events of one program, statement by statement, given the facts about its names."""

    def __init__(self, facts: _Facts, import_anchor: ast.stmt | None) -> None:
        self.facts, self.import_anchor = facts, import_anchor
        self.placement = Placement([], [])
        self.within: dict[int, set[str]] = {}  # id(stmt) -> the stages of the events in it, nested included
        self.enclosing: list[ast.stmt] = []

    def body(self, stmts: list[ast.stmt], no_grad: bool = False) -> None:
        for stmt in stmts:
            self.statement(stmt, stmts, no_grad)

    def statement(self, stmt: ast.stmt, body: list[ast.stmt], no_grad: bool) -> None:
        found: set[str] = set()
        for call in _direct_calls(stmt):
            stages = _call_events(call, self.facts, no_grad)
            if stages:
                self.placement.calls.append(CallAnchor(call, stages))
                found |= stages
        if stmt is self.import_anchor or (
            self.import_anchor is None and isinstance(stmt, ast.Import | ast.ImportFrom)
        ):
            self.placement.imports.append(Anchor(stmt, body, {"imports_done"}))
            found.add("imports_done")
        for holder in (*self.enclosing, stmt):
            self.within.setdefault(id(holder), set()).update(found)
        self.enclosing.append(stmt)
        self._nested(stmt, no_grad)
        self.enclosing.pop()

    def _nested(self, stmt: ast.stmt, no_grad: bool) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            self.body(stmt.body, any(_name(d) in _NO_GRAD for d in stmt.decorator_list))
        elif isinstance(stmt, ast.ClassDef):
            self.body(stmt.body)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            entering = any(_name(item.context_expr) in _NO_GRAD for item in stmt.items)
            self.body(stmt.body, no_grad or entering)
        else:
            for block in _blocks(stmt):
                self.body(block, no_grad)


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


BLOCK_FIELDS = {"body", "orelse", "finalbody", "handlers", "cases"}


def _direct_calls(stmt: ast.stmt) -> Iterator[ast.Call]:
    """The calls in a statement's own expressions (a compound statement's header), not in nested blocks."""
    for name, value in ast.iter_fields(stmt):
        if name in BLOCK_FIELDS:
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


def find_placement(tree: ast.Module) -> Placement:
    """Where the markers of `tree` go: the event calls to wrap, and the statement after the imports."""
    return _walk(tree).placement


def event_stages(tree: ast.Module) -> dict[int, set[str]]:
    """id(statement) -> the stages of the events the rules find in it, in nested blocks too (a training
    loop holds ``model_trained``; the last import ``imports_done``). What a marker that follows a statement
    may claim (`markers_follow_their_events`)."""
    return _walk(tree).within


def marker_claims(
    tree: ast.Module, is_marker: Callable[[ast.stmt], set[str] | None]
) -> list[tuple[ast.stmt | None, set[str]]]:
    """Each marker statement of `tree` (`is_marker` gives its stages, None for other statements) as (the
    statement it follows, other markers aside; None when it comes first in its block, its stages)."""
    claims: list[tuple[ast.stmt | None, set[str]]] = []
    for node in ast.walk(tree):
        for name in BLOCK_FIELDS - {"handlers", "cases"}:
            block = getattr(node, name, None)
            if not (isinstance(block, list) and block and isinstance(block[0], ast.stmt)):
                continue
            previous: ast.stmt | None = None
            for stmt in block:
                stages = is_marker(stmt)
                if stages is None:
                    previous = stmt
                else:
                    claims.append((previous, stages))
    return claims


def markers_follow_their_events(tree: ast.Module, is_marker: Callable[[ast.stmt], set[str] | None]) -> bool:
    """Whether every marker statement in `tree` comes right after a statement, other markers aside, that
    holds an event of each stage it names."""
    within = event_stages(tree)
    return all(
        previous is not None and stages <= within.get(id(previous), set())
        for previous, stages in marker_claims(tree, is_marker)
    )


def placement_within(placement: Placement, claims: list[tuple[ast.stmt, set[str]]]) -> Placement:
    """The part of `placement` inside the claimed statements, for the stages claimed there: the events an
    LM's markers point at, to be marked as the rules mark them."""
    chosen = Placement([], [])
    for stmt, stages in claims:
        nodes = {id(n) for n in ast.walk(stmt)}
        chosen.imports += [a for a in placement.imports if id(a.stmt) in nodes and "imports_done" in stages]
        inside = [a for a in placement.calls if id(a.call) in nodes and a.stages & stages]
        chosen.calls += [CallAnchor(a.call, a.stages & stages) for a in inside]
    return chosen


def _walk(tree: ast.Module) -> _Walker:
    imports = [s for s in tree.body if _is_import(s)]
    walker = _Walker(_gather(tree), imports[-1] if imports else None)
    walker.body(tree.body)
    return walker
