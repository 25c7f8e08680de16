"""`manage.py demo` as a newcomer runs it: no environment at all (SQLite, in-process channel layer and
workers), a real daphne serving the dashboard, and a live GrammarPolicy run whose attempts reach the API."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except OSError:
        return 0, b""


def wait_for(condition, timeout_s: float, what: str, demo: subprocess.Popen):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if demo.poll() is not None:
            pytest.fail(f"the demo exited ({demo.returncode}) while waiting for {what}")
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}")


def test_the_demo_serves_the_dashboard_and_a_live_run_on_embedded_defaults(tmp_path):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PRACTICUM_DATA_DIR": str(tmp_path / "data")}
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=120
    )
    port, log = free_port(), (tmp_path / "demo.log").open("wb")
    argv = [sys.executable, "manage.py", "demo", "--port", str(port), "--attempts", "6"]
    demo = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        page = wait_for(lambda: (r := get(f"{base}/runs/"))[0] == 200 and r[1], 120, "the dashboard", demo)
        assert b"diabetes-progression" in page
        runs = json.loads(get(f"{base}/api/runs/")[1])["results"]
        assert runs and runs[0]["policy"] == "grammar" and runs[0]["is_public"]
        attempts_url = f"{base}/api/runs/{runs[0]['id']}/attempts/"
        finished = wait_for(
            lambda: [a for a in json.loads(get(attempts_url)[1])["results"] if a["finished_at"]], 180,
            "a finished attempt", demo,
        )  # fmt: skip
        assert finished[0]["isolation"] in ("bwrap", "rlimits")
        output = (tmp_path / "demo.log").read_text()
        assert (
            "Demo user: demo / practicum-demo" in output and f"Dashboard: http://127.0.0.1:{port}/" in output
        )
    finally:
        os.killpg(demo.pid, signal.SIGTERM)
        demo.wait(timeout=30)
