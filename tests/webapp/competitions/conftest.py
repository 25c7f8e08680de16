"""Helper modules beside the tests (paper12_*, table_penguins): importable by name from the tests here, and
kept out of collection, which `--doctest-modules` would otherwise import without this path set-up."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

collect_ignore = ["paper12_files.py", "paper12_graders.py", "paper12_text.py", "table_penguins.py"]
