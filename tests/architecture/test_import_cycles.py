"""No import cycle among the modules of rl_core, webapp or workers, counting every import statement: at
module level and inside function bodies alike (an import moved into a function still runs, so it cannot
hide a cycle). Only imports under `if TYPE_CHECKING:` are left out: they never run.

import-linter's acyclic_siblings contract (pyproject.toml) checks the same between sibling packages;
this test checks it module by module."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("rl_core", "webapp", "workers")


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_imports(node: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Every module name an import statement under `node` names (relative ones resolved), skipping the
    bodies of `if TYPE_CHECKING:`; `from a import b` yields a.b too, in case b is a module."""
    if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
        children: list[ast.AST] = list(node.orelse)
    else:
        children = list(ast.iter_child_nodes(node))
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = module.split(".")
            anchor = parts[: len(parts) - node.level + (1 if is_package else 0)]
            base = ".".join([*anchor, base] if base else anchor)
        yield base
        yield from (f"{base}.{alias.name}" for alias in node.names)
    for child in children:
        yield from runtime_imports(child, module, is_package)


def ancestors(module: str) -> set[str]:
    """The packages Python imports before `module` anyway: importing one of them is no cycle."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports (at any depth in its code)."""
    paths = {module_name(p, root): p for p in (root / package).rglob("*.py") if "migrations" not in p.parts}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        named = runtime_imports(tree, module, path.name == "__init__.py")
        graph[module] = {name for name in named if name in paths} - {module} - ancestors(module)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while (member := stack.pop()) != node:
                component.append(member)
            if component:
                found.append(sorted([*component, node]))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_package_has_an_import_cycle_even_through_imports_inside_functions():
    found = {package: cycles(import_graph(ROOT, package)) for package in PACKAGES}
    assert {package: found_cycles for package, found_cycles in found.items() if found_cycles} == {}


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def later():\n    from . import a\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n"
    )
    (package / "d.py").write_text("import pkg.c\n")
    assert cycles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b"]]
