"""Dependencies run one way, workers -> webapp -> rl_core, and import-linter (pyproject.toml) refuses
anything else: the contracts hold on this tree, and break on a copy where the web app imports a worker."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINTER = Path(sys.executable).with_name("lint-imports")
CONTRACTS = (
    "rl_core is a pure library",
    "workers -> webapp -> rl_core",
    "no import cycles inside rl_core, webapp or workers",
)


def lint_imports(root: Path) -> str:
    done = subprocess.run([str(LINTER)], cwd=root, capture_output=True, text=True, timeout=300)
    return done.stdout + done.stderr


def test_every_import_contract_is_kept():
    report = lint_imports(ROOT)
    assert [name for name in CONTRACTS if f"{name} KEPT" not in report] == [], report


def test_the_web_app_importing_a_worker_breaks_the_layers(tmp_path):
    for package in ("rl_core", "webapp", "workers"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "webapp" / "probe.py").write_text("def start(run_id):\n    from workers import dispatch\n")
    report = lint_imports(tmp_path)
    assert "workers -> webapp -> rl_core BROKEN" in report
    assert "webapp.probe -> workers.dispatch" in report
