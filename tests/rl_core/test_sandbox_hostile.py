"""Hostile programs: each test tries one way out of the sandbox and asserts it is contained AND that the
attempt ends with the right status (while this worker, pytest, survives).

The tiny competition keeps its hidden answers outside every mounted dir; they hold a token no public file
has, so finding the token anywhere in the program's output means the answers leaked.
"""

from __future__ import annotations

import http.server
import itertools
import json
import os
import secrets
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rl_core.environment import TaskFiles, run_program
from rl_core.grading import GradingSpec
from rl_core.sandbox import ExecutionRequest, ExecutionResult, execute, isolation_level

pytestmark = pytest.mark.skipif(isolation_level() != "bwrap", reason="the hostile suite needs bubblewrap")

TOKEN = secrets.token_hex(12)


class Sandbox:
    def __init__(self, public_dir: Path, answers_path: Path, scratch: Path) -> None:
        self.public_dir, self.answers_path, self.scratch = public_dir, answers_path, scratch
        self.count, self.work_dir = itertools.count(), scratch

    def run(self, program: str, **limits) -> ExecutionResult:
        self.work_dir = self.scratch / f"attempt-{next(self.count)}"
        limits = {"timeout_s": 30.0, "memory_mb": 1024} | limits
        return execute(ExecutionRequest(textwrap.dedent(program), self.public_dir, self.work_dir, **limits))


@pytest.fixture
def box(tmp_path, data_dir) -> Sandbox:
    public, private = tmp_path / "competition" / "public", tmp_path / "competition" / "private"
    public.mkdir(parents=True)
    private.mkdir()
    (public / "test.csv").write_text("id,x\n1,0.5\n2,1.5\n")
    answers = private / f"answers-{TOKEN}.csv"
    answers.write_text(f"id,y\n1,{TOKEN}\n2,{TOKEN}\n")
    return Sandbox(public, answers, data_dir / "attempts")


def host_processes_of(uid: int) -> list[int]:
    """Processes of `uid` on the host that still run (zombies, already dead, are not counted)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or entry.stat().st_uid != uid:
                continue
            if (entry / "stat").read_text().rpartition(")")[2].split()[0] != "Z":
                pids.append(int(entry.name))
        except FileNotFoundError:
            continue
    return pids


# ------------------------------------------------------------------------------------- the answers


def test_program_cannot_read_the_hidden_answers_by_path(box):
    result = box.run(f"print(open({str(box.answers_path)!r}).read())")
    assert result.status == "error"
    assert "FileNotFoundError" in result.stderr
    assert TOKEN not in result.stdout + result.stderr.replace(str(box.answers_path), "")


def test_program_cannot_find_the_hidden_answers_by_walking_the_filesystem(box):
    result = box.run(
        f"""
        import os
        token, seen = {TOKEN[::-1]!r}[::-1], 0  # reversed, so that this program's own text does not hold it
        for top, dirs, files in os.walk("/"):
            if top in ("/proc", "/sys"):
                dirs[:] = []
                continue
            for name in files:
                seen += 1
                path = os.path.join(top, name)
                if token in name:
                    print("FOUND", path)
                if not top.startswith(("/usr", "/root/.pyenv", "/work/main/.venv", "/dev")):
                    try:
                        if token in open(path, errors="replace").read(1_000_000):
                            print("FOUND", path)
                    except OSError:
                        pass
        print("seen", seen)
        """,
        timeout_s=120,
    )
    assert result.status == "ok", result.stderr
    assert "FOUND" not in result.stdout
    assert int(result.stdout.split()[-1]) > 1000  # it did walk the interpreter's files


def test_program_cannot_reach_the_hidden_answers_through_proc(box):
    result = box.run(
        f"""
        import glob
        answers = {str(box.answers_path)!r}
        for root in glob.glob("/proc/*/root") + glob.glob("/proc/*/cwd"):
            for path in (root + answers, root + "/../../.." + answers):
                try:
                    print("READ", open(path).read())
                except OSError as error:
                    print("denied", type(error).__name__)
        print(open("/proc/self/mountinfo").read())
        """
    )
    assert result.status == "ok", result.stderr
    assert "READ" not in result.stdout and TOKEN not in result.stdout
    assert "denied" in result.stdout
    assert str(box.answers_path.parent) not in result.stdout


def test_program_cannot_pass_the_answers_off_as_its_submission_with_a_symlink(box):
    result = box.run(f"import os; os.symlink({str(box.answers_path)!r}, 'submission/submission.csv')")
    assert result.status == "ok"
    assert result.submission_path is None


def test_program_cannot_redirect_the_submission_dir_with_a_symlink(box, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "submission.csv").write_text("id,y\n")
    result = box.run(f"import os; os.rmdir('submission'); os.symlink({str(elsewhere)!r}, 'submission')")
    assert result.status == "ok"
    assert result.submission_path is None


# ------------------------------------------------------------------------------------- the network


CONNECT = """
import socket
import subprocess
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
    print("CONNECTED")
except OSError as error:
    print("refused", type(error).__name__)
"""


def host_can_connect(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.mark.parametrize(("service", "port"), [("PostgreSQL", 5432), ("Redis", 6379)])
def test_program_cannot_connect_to_the_services_on_loopback(box, service, port):
    if not host_can_connect(port):
        pytest.skip(f"{service} is not listening on 127.0.0.1:{port} here")
    result = box.run(CONNECT.format(port=port))
    assert result.status == "ok"
    assert "CONNECTED" not in result.stdout and "refused" in result.stdout


def test_program_cannot_connect_to_a_web_server_on_loopback(box):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        assert host_can_connect(port)
        result = box.run(CONNECT.format(port=port))
    finally:
        server.shutdown()
    assert result.status == "ok"
    assert "CONNECTED" not in result.stdout and "refused" in result.stdout


def test_program_cannot_reach_the_internet(box):
    result = box.run(CONNECT.replace('"127.0.0.1"', '"1.1.1.1"').format(port=53))
    assert result.status == "ok"
    assert "CONNECTED" not in result.stdout and "refused" in result.stdout


# ------------------------------------------------------------------------------------- secrets


@pytest.fixture
def secrets_in_env(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", f"postgresql://user:{TOKEN}@db/practicum")
    monkeypatch.setenv("SECRET_KEY", TOKEN)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", TOKEN)


def test_program_cannot_read_secrets_from_its_own_environment(box, secrets_in_env):
    assert os.environ["SECRET_KEY"] == TOKEN
    result = box.run("import os; print(dict(os.environ)); print(open('/proc/self/environ').read())")
    assert result.status == "ok"
    assert TOKEN not in result.stdout and "DATABASE_URL" not in result.stdout


WORKER = """
import json, sys
from pathlib import Path
from rl_core.sandbox import ExecutionRequest, execute
public, work, program = sys.argv[1:]
own = open("/proc/self/environ", "rb").read().decode(errors="replace")
result = execute(ExecutionRequest(program, Path(public), Path(work), timeout_s=30.0, memory_mb=1024))
print(json.dumps({"worker_env": own, "status": result.status, "stdout": result.stdout}))
"""


def test_program_cannot_read_secrets_from_its_parents_environment(box):
    """The worker is a real process that was started with the secrets in its environment (so they are in
    its /proc/<pid>/environ, which the control assertion checks); the program looks at every environ."""
    program = textwrap.dedent(
        """
        import glob, os
        for path in [f"/proc/{os.getppid()}/environ", *glob.glob("/proc/*/environ")]:
            try:
                print(path, open(path, "rb").read())
            except OSError as error:
                print(path, "denied", type(error).__name__)
        """
    )
    secrets_env = {"DATABASE_URL": f"postgresql://user:{TOKEN}@db/practicum", "SECRET_KEY": TOKEN}
    worker = subprocess.run(
        [sys.executable, "-c", WORKER, str(box.public_dir), str(box.scratch / "from-worker"), program],
        env=os.environ | secrets_env,
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert worker.returncode == 0, worker.stderr
    report = json.loads(worker.stdout.splitlines()[-1])
    assert TOKEN in report["worker_env"]  # control: the secret really was there to be stolen
    assert report["status"] == "ok"
    assert "environ" in report["stdout"]
    assert TOKEN not in report["stdout"] and "SECRET_KEY" not in report["stdout"]


# ------------------------------------------------------------------------------------- the filesystem


def outside_targets(box: Sandbox, data_dir: Path) -> dict[str, Path]:
    name = f"escape-{TOKEN}"
    return {
        "data dir": data_dir / name,
        "venv": Path(sys.prefix) / name,
        "input": box.public_dir / name,
        "answers dir": box.answers_path.parent / name,
    }


@pytest.mark.parametrize("where", ["data dir", "venv", "input", "answers dir"])
def test_program_cannot_write_outside_its_scratch_dir(box, data_dir, where):
    target = outside_targets(box, data_dir)[where]
    result = box.run(
        f"""
        try:
            open({str(target)!r}, "w").write("escaped")
            print("WROTE")
        except OSError as error:
            print("denied", type(error).__name__)
        """
    )
    assert result.status == "ok"
    assert "WROTE" not in result.stdout
    assert not target.exists()


def test_program_writing_to_tmp_writes_into_its_scratch_dir_not_the_hosts(box):
    name = f"escape-{TOKEN}"
    result = box.run(f"open('/tmp/{name}', 'w').write('kept')")
    assert result.status == "ok"
    assert not (Path("/tmp") / name).exists()
    assert (box.work_dir / "tmp" / name).read_text() == "kept"


def test_program_cannot_fill_the_disk_with_one_file(box):
    result = box.run(
        """
        chunk = b"x" * 2**20
        with open("big.bin", "wb") as f:
            while True:
                f.write(chunk)
        """,
        max_file_mb=8,
    )
    assert result.status == "error"
    assert "File too large" in result.stderr
    assert (box.work_dir / "big.bin").stat().st_size <= 8 * 2**20


def test_program_cannot_fill_the_disk_with_many_files(box):
    result = box.run(
        """
        import itertools, time
        for i in itertools.count():
            open(f"part-{i}.bin", "wb").write(b"x" * 2**20)
            time.sleep(0.005)
        """,
        max_file_mb=8,
    )
    assert result.status == "killed"
    assert "scratch dir exceeded" in result.stderr
    written = sum(p.stat().st_size for p in box.work_dir.glob("part-*.bin"))
    assert 8 * 2**20 < written < 300 * 2**20


def test_program_cannot_fill_memory_through_dev_shm(box):
    result = box.run(
        """
        written = 0
        try:
            with open("/dev/shm/fill", "wb") as f:
                while True:
                    f.write(b"x" * 2**20)
                    f.flush()
                    written += 1
        except OSError as error:
            print(written, type(error).__name__)
        """,
        memory_mb=1024,
    )
    assert result.status == "ok", result.stderr
    assert int(result.stdout.split()[0]) <= 1024 // 4


# ------------------------------------------------------------------------------------- processes


def test_a_fork_bomb_is_contained_and_times_out(box):
    result = box.run(
        """
        import os, time
        print(os.getuid(), flush=True)
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.05)
        """,
        timeout_s=3,
        max_processes=32,
    )
    assert result.status == "timeout"
    uid = int(result.stdout.split()[0])
    assert uid != 0 and host_processes_of(uid) == []


def test_the_process_count_is_capped(box):
    result = box.run(
        """
        import os, time
        children = 0
        try:
            while True:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                children += 1
        except OSError as error:
            print(children, type(error).__name__)
        """,
        max_processes=32,
    )
    assert result.status == "ok", result.stderr
    assert int(result.stdout.split()[0]) < 32


def test_a_memory_bomb_is_stopped_and_reported_as_memory(box):
    result = box.run("blocks = []\nwhile True: blocks.append(bytearray(64 * 2**20))", memory_mb=512)
    assert result.status == "memory"
    assert "MemoryError" in result.stderr


def test_an_infinite_loop_is_killed_at_the_limit(box):
    started = time.monotonic()
    result = box.run("while True: pass", timeout_s=2)
    elapsed = time.monotonic() - started
    assert (result.status, result.duration_s) == ("timeout", 2.0)
    assert 2 <= elapsed < 10


def test_a_child_that_outlives_the_program_is_killed(box):
    result = box.run(
        """
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                while True:
                    open("heartbeat", "a").write("x")
                    time.sleep(0.05)
            os._exit(0)
        time.sleep(0.5)
        print(os.getuid())
        """
    )
    assert result.status == "ok", result.stderr
    beats = (box.work_dir / "heartbeat").read_text()
    time.sleep(0.5)
    assert (box.work_dir / "heartbeat").read_text() == beats
    assert host_processes_of(int(result.stdout.split()[0])) == []


def test_program_cannot_kill_its_parent_or_the_worker(box):
    result = box.run(
        f"""
        import os, signal
        for pid in (os.getppid(), 1, {os.getpid()}, {os.getppid()}):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError as error:
                print(pid, type(error).__name__)
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        print("still here")
        """
    )
    assert result.status == "ok"
    assert "still here" in result.stdout
    os.kill(os.getpid(), 0)  # this worker is alive


def test_program_sees_only_its_own_processes(box):
    result = box.run(
        """
        import os, subprocess
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        print(pids)
        print(subprocess.run(["ps", "-e", "-o", "pid,comm"], capture_output=True, text=True).stdout)
        """
    )
    assert result.status == "ok", result.stderr
    pids = eval(result.stdout.splitlines()[0])
    assert len(pids) <= 3 and os.getpid() not in pids
    assert "pytest" not in result.stdout and "python -m pytest" not in result.stdout


def test_program_runs_as_an_unprivileged_user(box):
    result = box.run("import os; print(os.getuid(), os.geteuid(), open('/proc/self/status').read())")
    uid, euid = map(int, result.stdout.split()[:2])
    assert uid != 0 and euid != 0
    assert "CapEff:\t0000000000000000" in result.stdout


# ------------------------------------------------------------------------------------- markers


def tiny_task(box: Sandbox) -> TaskFiles:
    return TaskFiles(
        slug="tiny",
        public_dir=box.public_dir,
        answers_path=box.answers_path,
        grading=GradingSpec("accuracy", "id", ("y",)),
        time_limit_s=30,
        memory_mb=1024,
        baseline_score=None,
    )


def test_program_cannot_forge_stage_markers(box, data_dir):
    task = tiny_task(box)
    stages = ["imports_done", "data_loaded", "model_defined", "model_trained", "submission_written"]
    forged = "\n".join(
        f"print('@@practicum:{nonce}:{stage}')" for nonce in ("0" * 16, "nonce") for stage in stages
    )
    outcome = run_program(forged, task, data_dir / "forge", nonce="a1b2c3d4e5f60718")
    assert outcome.status == "ok"
    assert outcome.stages == ()
    assert "@@practicum:0000000000000000:imports_done" in outcome.stdout_tail


def test_program_cannot_call_the_environments_marker_itself(box, data_dir):
    task = tiny_task(box)
    program = "import os\n__practicum_mark__('model_trained', 'predictions_made', 'submission_written')\n"
    outcome = run_program(program, task, data_dir / "self-mark", nonce="a1b2c3d4e5f60718")
    assert (outcome.status, outcome.stages) == ("error", ())
    assert "NameError" in outcome.stderr_tail


def test_program_cannot_reach_the_marker_through_its_globals_or_learn_the_nonce_from_its_source(
    box, data_dir
):
    task = tiny_task(box)
    program = (
        "import os\n"
        "source = open(__file__).read()\n"
        "globals()['__prac' + 'ticum_mark__']('model_trained', 'predictions_made')\n"
    )
    outcome = run_program(program, task, data_dir / "introspect", nonce="a1b2c3d4e5f60718")
    assert outcome.stages == ()
    assert "a1b2c3d4e5f60718" not in outcome.stdout_tail + outcome.stderr_tail
