"""The web process stays light and one-way: loading the ASGI app and every view (every URL's callback, the
websocket consumers, and every views/api module) imports neither torch nor any workers module. Each check
starts a fresh interpreter, as daphne would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOAD_EVERY_VIEW = """
import importlib, json, os, sys
from pathlib import Path
os.environ["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
from webapp.asgi import application
from django.urls import URLPattern, URLResolver, get_resolver

def callbacks(patterns):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from callbacks(pattern.url_patterns)
        elif isinstance(pattern, URLPattern):
            yield pattern.callback

modules = {getattr(view, "__module__", "") for view in callbacks(get_resolver().url_patterns)}
VIEW_FILES = ("views", "api", "consumers", "routing", "urls")
modules |= {".".join(p.with_suffix("").parts) for p in Path("webapp").rglob("*.py") if p.stem in VIEW_FILES}
for name in sorted(m for m in modules if m):
    importlib.import_module(name)
print(json.dumps({"views": sorted(modules), "loaded": sorted(sys.modules)}))
"""


def web_process_modules(tmp_path: Path) -> dict:
    """The view modules a fresh web process loaded, and every module it then held."""
    done = subprocess.run(
        [sys.executable, "-c", LOAD_EVERY_VIEW], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PRACTICUM_DATA_DIR": str(tmp_path / "data")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_web_process_loads_neither_torch_nor_any_worker_module(tmp_path):
    report = web_process_modules(tmp_path)
    assert {"webapp.dashboards.views", "webapp.runs.api", "webapp.dashboards.consumers"} <= set(
        report["views"]
    )
    heavy = [name for name in report["loaded"] if name.split(".")[0] in ("torch", "transformers", "workers")]
    assert heavy == []
