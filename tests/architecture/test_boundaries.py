"""The layout's two boundaries (DESIGN.md §5): rl_core is a pure library; the web process has no torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_IN_RL_CORE = {"django", "celery", "channels", "webapp", "workers"}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_nothing_under_rl_core_imports_the_web_or_worker_layers():
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_roots(path) & FORBIDDEN_IN_RL_CORE)
        for path in (ROOT / "rl_core").rglob("*.py")
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_web_process_does_not_import_torch():
    """Load the ASGI app and every URL's view, as daphne would, and check torch never got imported."""
    code = (
        "import sys, django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'webapp.settings'; "
        "from webapp.asgi import application; from django.urls import get_resolver; "
        "get_resolver().url_patterns; import webapp.competitions.views; "
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "False"]


def test_import_linter_finds_no_indirect_path_from_rl_core_to_the_web():
    linter = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(linter)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rl_core is a pure library KEPT" in result.stdout


NAME_LOADERS = {
    "import_module", "__import__", "import_string", "run_module", "run_path", "spec_from_file_location",
}  # fmt: skip
"""Calls that load a module by a name or path computed at run time, out of the import contracts' sight."""
LOADS_BY_NAME = {"webapp/runs/dispatch.py"}
"""The one place that may: settings.RUN_DISPATCHER, a dotted path (the web app must not import workers)."""


def name_loads(path: Path) -> list[int]:
    """The lines of `path` that call a module loader by name (strings that hold programs are not calls)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) in NAME_LOADERS
    ]


def test_no_module_is_loaded_by_name_outside_the_dispatcher_setting():
    found = {
        path.relative_to(ROOT).as_posix(): name_loads(path)
        for package in ("rl_core", "webapp", "workers")
        for path in (ROOT / package).rglob("*.py")
    }
    assert {path: lines for path, lines in found.items() if lines and path not in LOADS_BY_NAME} == {}
    assert name_loads(ROOT / "webapp/runs/dispatch.py"), "the dispatcher setting is loaded by name"


def test_a_module_loaded_by_name_is_found(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import importlib\n\ndef load(name):\n    return importlib.import_module(name)\n")
    assert name_loads(probe) == [4]
