"""The forgery guard: a program that names the marker function, or reaches for what would let it find the
marker function or its nonce in its own memory at run time, gets no markers (see the package docstring).

A deny-list over the program's AST, so never complete; the package docstring lists the layers behind it.
It is tuned to leave ordinary ML code alone: ``model.eval()``, ``model.compile()``, ``model.modules()``,
``gc.collect()``, ``getattr(model, "feature_importances_", None)``, ``model.__class__.__name__`` and
``df.columns`` all pass.
"""

from __future__ import annotations

import ast

from rl_core.instrument.markers import MARK_FUNCTION

INTROSPECTION_NAMES = frozenset(
    {"globals", "vars", "locals", "dir", "exec", "eval", "compile", "__import__", "__builtins__", "__main__",
     "__file__", "argv", "inspect", "builtins", "ctypes", "importlib"}
)  # fmt: skip
"""Names (bare, or imported modules) through which a program could reach the marker function or read the
nonce at run time: its globals, its namespace listed (``dir()``), its own source file, code built at run
time, frame inspection, raw memory (``ctypes``), modules looked up by a computed name (``importlib``)."""
INTROSPECTION_MODULES = frozenset({"code", "codeop", "runpy", "pydoc", "pdb", "bdb", "trace", "tracemalloc"})
"""Modules that run code built from strings or inspect frames; denied when imported (their names are common
variable names, so only imports count)."""
INTROSPECTION_ATTRIBUTES = frozenset(
    {"_getframe", "currentframe", "f_globals", "f_locals", "f_back", "f_code", "f_builtins", "tb_frame",
     "gi_frame", "cr_frame", "ag_frame", "co_consts", "__code__", "__globals__", "__builtins__", "__dict__",
     "__defaults__", "__kwdefaults__", "__closure__", "__subclasses__", "__file__", "argv", "get_objects",
     "get_referrers", "get_referents", "settrace", "setprofile", "monitoring", "_current_frames"}
)  # fmt: skip
"""Attributes with the same reach (``sys._getframe``, ``gc.get_objects``, ``f.__globals__``, an exception's
``__traceback__.tb_frame``, a function's ``__defaults__``, ...). ``model.eval()`` and ``model.compile()`` are
innocent attributes: only bare ``eval``/``compile`` count."""
UNCALLED_ATTRIBUTES = frozenset({"modules"})
"""Attributes denied unless called: ``sys.modules`` (a table of every module, ``__main__`` included) is
never called, torch's ``model.modules()`` always is."""
ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
"""Allowed only with a constant, non-dunder, non-denied attribute name: ``getattr(m, name)`` with a computed
name could fetch anything the attribute checks deny."""
INTROSPECTION_STRINGS = ("program.py", "/proc/self", "practicum")


def names_the_marker(tree: ast.Module) -> bool:
    """Whether the policy's program mentions the marker function, or reaches for what would let it find the
    marker or its nonce at run time (the names, modules, attributes, calls and strings above)."""
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if _introspects(node) or _computed_attribute(node):
            return True
        if isinstance(node, ast.Attribute) and node.attr in UNCALLED_ATTRIBUTES and id(node) not in called:
            return True
        text = node.value.lower() if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
        if any(fragment in text for fragment in INTROSPECTION_STRINGS):
            return True
    return False


def _introspects(node: ast.AST) -> bool:
    """Whether `node` names the marker function or one of the introspection names, modules or attributes."""
    if isinstance(node, ast.Attribute):  # uncalled ones are `names_the_marker`'s business
        return MARK_FUNCTION.rstrip("_") in node.attr or node.attr in INTROSPECTION_ATTRIBUTES
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.alias):
        name = node.name.split(".")[0]
        if name in INTROSPECTION_MODULES or _denied_attribute(node.name):  # from sys import modules
            return True
    elif isinstance(node, ast.ImportFrom) and node.module:
        name = node.module.split(".")[0]
        if name in INTROSPECTION_MODULES:
            return True
    else:
        return False
    return MARK_FUNCTION.rstrip("_") in name or name in INTROSPECTION_NAMES


def _denied_attribute(attr: str) -> bool:
    return (
        MARK_FUNCTION.rstrip("_") in attr or attr in INTROSPECTION_ATTRIBUTES or attr in UNCALLED_ATTRIBUTES
    )


def _computed_attribute(node: ast.AST) -> bool:
    """``getattr(x, name)`` and friends with a name that is computed, a dunder, or a denied attribute."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    if node.func.id not in ATTRIBUTE_FUNCTIONS:
        return False
    if (
        len(node.args) < 2
        or not isinstance(node.args[1], ast.Constant)
        or not isinstance(node.args[1].value, str)
    ):
        return True
    attr = node.args[1].value
    return (attr.startswith("__") and attr.endswith("__")) or _denied_attribute(attr)
