"""Dependencies run one way, workers -> webapp -> rl_core, and import-linter (pyproject.toml) refuses
anything else: the contracts hold on this tree, and break on a copy where the web app imports a worker."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINTER = Path(sys.executable).with_name("lint-imports")
CONTRACTS = (
    "rl_core is a pure library",
    "workers -> webapp -> rl_core",
    "no import cycles inside rl_core, webapp or workers",
    "run settings are declared without torch",
    "the web app imports no torch",
    "competitions: pages -> flows -> services -> importing",
    "the labelled-table flow: views -> services -> bundle -> proposal -> files",
    "importing: archives | mlebench -> bundles -> public_formats | sentences",
)


def lint_imports(root: Path) -> str:
    done = subprocess.run([str(LINTER)], cwd=root, capture_output=True, text=True, timeout=300)
    return done.stdout + done.stderr


def test_every_import_contract_is_kept():
    report = lint_imports(ROOT)
    assert [name for name in CONTRACTS if f"{name} KEPT" not in report] == [], report


def copy_tree(tmp_path: Path) -> Path:
    for package in ("rl_core", "webapp", "workers"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def test_the_web_app_importing_a_worker_breaks_the_layers(tmp_path):
    copy_tree(tmp_path)
    (tmp_path / "webapp" / "probe.py").write_text("def start(run_id):\n    from workers import dispatch\n")
    report = lint_imports(tmp_path)
    assert "workers -> webapp -> rl_core BROKEN" in report
    assert "webapp.probe -> workers.dispatch" in report


PLANTED = {
    "run settings are declared without torch": (
        "rl_core/run_spec.py",
        "import torch",
        "rl_core.run_spec -> torch",
    ),
    "the web app imports no torch": (
        "webapp/runs/selectors.py",
        "from rl_core import learner",
        "rl_core.learner -> torch",
    ),
    "competitions: pages -> flows -> services -> importing": (
        "webapp/competitions/storage.py",
        "from webapp.competitions import services",
        "webapp.competitions.storage -> webapp.competitions.services",
    ),
    "the labelled-table flow: views -> services -> bundle -> proposal -> files": (
        "webapp/competitions/tables/files.py",
        "from webapp.competitions.tables import views",
        "webapp.competitions.tables.files -> webapp.competitions.tables.views",
    ),
    "importing: archives | mlebench -> bundles -> public_formats | sentences": (
        "webapp/competitions/importing/sentences.py",
        "from webapp.competitions.importing import bundles",
        "webapp.competitions.importing.sentences -> webapp.competitions.importing.bundles",
    ),
}
"""Per contract: a module, an import it must not make (planted inside a function, which still counts), and
the chain the report must name."""


@pytest.mark.parametrize("contract", PLANTED)
def test_a_planted_violation_breaks_its_contract(tmp_path, contract):
    module, statement, chain = PLANTED[contract]
    path = copy_tree(tmp_path) / module
    path.write_text(path.read_text() + f"\n\ndef planted_probe():\n    {statement}\n")
    report = " ".join(lint_imports(tmp_path).split())  # the report wraps long chains
    assert f"{contract} BROKEN" in report and chain in report, report


def test_an_import_only_for_annotations_breaks_no_contract(tmp_path):
    path = copy_tree(tmp_path) / "webapp" / "runs" / "selectors.py"
    planted = (
        "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from rl_core.learner import Learner\n"
    )
    path.write_text(path.read_text() + planted)
    report = lint_imports(tmp_path)
    assert "BROKEN" not in report, report
