"""The forgery guard: a program that names the marker function, or reaches for what would let it find the
marker or its nonce at run time, gets no markers (see the package docstring)."""

from __future__ import annotations

import ast

from rl_core.instrument.markers import MARK_FUNCTION

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


def names_the_marker(tree: ast.Module) -> bool:
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
