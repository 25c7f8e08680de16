"""The run page's script (webapp/dashboards/assets/run.js) run in node against a fake websocket: which live
events it applies after a snapshot, and when it asks for a fresh one. Skipped where node is missing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

NODE = shutil.which("node")
RUN_JS = Path(__file__).resolve().parents[3] / "webapp" / "dashboards" / "assets" / "run.js"
pytestmark = pytest.mark.skipif(NODE is None, reason="needs node")

# Loads run.js with just enough of a browser (elements, a websocket that records what the page sends; no
# Plotly, so nothing is drawn), opens the socket, delivers the messages read from stdin, and prints what
# the page holds and what it sent.
HARNESS = """
const vm = require("vm"), fs = require("fs");
const sockets = [];
class FakeSocket {
  constructor(url) { this.sent = []; sockets.push(this); }
  send(message) { this.sent.push(JSON.parse(message)); }
}
const element = () => ({ textContent: "7", hidden: false, innerHTML: "", form: {}, addEventListener() {} });
const page = { document: { getElementById: element, querySelector: element, addEventListener() {} },
  location: { protocol: "http:", host: "test" }, WebSocket: FakeSocket, setTimeout: () => 0,
  setInterval: () => 0, requestAnimationFrame: () => 0 };
page.window = page;
vm.createContext(page);
vm.runInContext(fs.readFileSync(process.argv[1], "utf8"), page);
const socket = sockets[0];
socket.onopen();
for (const message of JSON.parse(fs.readFileSync(0, "utf8"))) {
  socket.onmessage({ data: JSON.stringify(message) });
}
const { seq, stats, bestSteps } = page.window.practicum.state;
console.log(JSON.stringify({ seq, finished: stats.finished, valid: stats.valid, sent: socket.sent,
  best: bestSteps.map((step) => step.number) }));
"""


def page_after(messages: list[dict]) -> dict:
    """What the run page holds after `messages`: its seq, finished and valid counts, what it sent, and the
    numbers of the attempts on its best-score curve."""
    done = subprocess.run(
        [NODE, "-e", HARNESS, str(RUN_JS)],
        input=json.dumps(messages),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def attempt(number: int, *, seq: int, score: float | None = None, improves_best: bool | None = None) -> dict:
    """The event of attempt `number` finishing with a valid submission (and the server's verdict on whether
    it improved the best score, when given)."""
    verdict = {} if improves_best is None else {"improves_best": improves_best}
    return {"type": "attempt", "seq": seq, "best_score": score, **verdict, "attempt": {
        "id": number, "number": number, "status": "ok", "valid": True, "score": score, "stages": [],
        "finished_at": "2025-01-01T00:00:00+00:00"}}  # fmt: skip


def snapshot(*, seq: int, finished: int) -> dict:
    return {"type": "snapshot", "seq": seq, "run": {"higher_is_better": True}, "attempts": [],
            "attempts_total": finished, "stats": {"finished": finished, "valid": finished, "stages": {}},
            "best_steps": [], "metrics": []}  # fmt: skip


def test_the_run_page_skips_events_its_snapshot_already_counts():
    held = page_after([snapshot(seq=3, finished=1), attempt(1, seq=2), attempt(1, seq=3), attempt(2, seq=4)])
    assert (held["seq"], held["finished"], held["valid"]) == (4, 2, 2)
    assert held["sent"] == []


def test_the_run_page_asks_once_for_a_fresh_snapshot_after_a_gap_and_applies_nothing_meanwhile():
    held = page_after([snapshot(seq=3, finished=1), attempt(2, seq=5), attempt(3, seq=6), attempt(4, seq=7)])
    assert held["sent"] == [{"type": "resync"}]
    assert (held["seq"], held["finished"]) == (3, 1)


def test_the_run_page_applies_events_again_once_the_fresh_snapshot_arrives():
    gap = [snapshot(seq=3, finished=1), attempt(2, seq=5)]
    held = page_after([*gap, snapshot(seq=5, finished=3), attempt(3, seq=5), attempt(4, seq=6)])
    assert (held["seq"], held["finished"]) == (6, 4)


def test_the_run_page_draws_the_best_score_curve_from_the_servers_verdict_alone():
    """Attempt 2 scores higher and attempt 3 lower than attempt 1; the server says (rl_core.metrics.is_better,
    for a lower-is-better metric) that 3 improved and 2 did not, and the page follows it."""
    events = [
        attempt(1, seq=2, score=0.5, improves_best=True),
        attempt(2, seq=3, score=0.9, improves_best=False),
        attempt(3, seq=4, score=0.1, improves_best=True),
    ]
    held = page_after([snapshot(seq=1, finished=0), *events])
    assert held["best"] == [1, 3]
