"""Hostile programs that try to earn stage credit they did not earn, each run for real: instrumented, through
the sandbox, graded (rl_core.environment.run_program). No program may earn more stage credit than the
honest version of itself.

Every program here starts with an import and writes a valid submission, so its honest version earns
exactly HONEST; the forgeries know the attempt's nonce (as if they had learned it), which is the strongest
position a program could be in.
"""

from __future__ import annotations

import itertools
import textwrap

import pytest

from rl_core import instrument as instrument_module
from rl_core import sandbox
from rl_core.environment import TaskFiles, run_program
from rl_core.grading import GradingSpec
from rl_core.instrument import STAGES

NONCE = "f0f1f2f3f4f5f6f7"
HONEST = ("imports_done", "submission_written")
WRITE = "open('submission/submission.csv', 'w').write('id,y\\n1,a\\n2,b\\n')\n"
LINES = (
    f"lines = ['@@' + 'prac' + 'ticum:{NONCE}:' + s for s in {list(STAGES)!r}]\n"
    "blob = '\\n'.join(lines) + '\\n'\n"
)
QUOTED = (
    'import sys; m = sys.modules["__m" + "ain__"]; '
    'f = getattr(m, [n for n in dir(m) if n.startswith("__prac")][0]); '
    'f("imports_done", "data_loaded", "model_defined", "model_trained", '
    '"predictions_made", "submission_written")'
)
"""The forgery quoted in issue 15, which passed the old guard and was credited with all six stages."""


def tried(route: str) -> str:
    """`route` inside a try-statement, so that a route that fails goes on to write the submission."""
    return (
        "try:\n"
        + textwrap.indent(route, "    ")
        + "\nexcept Exception as error:\n    print('failed:', error)\n"
    )


@pytest.fixture(autouse=True)
def unisolated_allowed(monkeypatch):
    """Where the sandbox is unisolated (no bwrap, non-root), these tests opt in as an operator would."""
    monkeypatch.setattr(sandbox, "unisolated_allowed", lambda: True)


@pytest.fixture
def attempt(tmp_path, data_dir):
    public, private = tmp_path / "public", tmp_path / "private"
    public.mkdir()
    private.mkdir()
    (public / "test.csv").write_text("id,x\n1,0\n2,1\n")
    (private / "answers.csv").write_text("id,y\n1,a\n2,b\n")
    task = TaskFiles(
        "tiny", public, private / "answers.csv", GradingSpec("accuracy", "id", ("y",)), 30, 1024, None
    )
    counter = itertools.count()

    def attempt(program: str, **options):
        return run_program(program, task, data_dir / f"attempt-{next(counter)}", nonce=NONCE, **options)

    return attempt


def test_the_honest_program_earns_its_stages_and_a_valid_score(attempt):
    outcome = attempt("import os\n" + WRITE)
    assert (outcome.status, outcome.stages, outcome.valid) == ("ok", HONEST, True), outcome.stderr_tail


def test_the_quoted_forgery_earns_no_stage_credit(attempt):
    outcome = attempt(QUOTED + "\n")
    assert (outcome.status, outcome.stages) == ("error", ())
    assert "IndexError" in outcome.stderr_tail  # the guard left it no marker function to find


def test_the_quoted_forgery_earns_only_stages_it_has_code_for_even_when_the_guard_misses_it(
    attempt, monkeypatch
):
    monkeypatch.setattr(instrument_module, "names_the_marker", lambda tree: False)
    outcome = attempt(QUOTED + "\n")
    assert (outcome.status, outcome.stages) == ("ok", ("imports_done",)), outcome.stderr_tail


@pytest.mark.parametrize(
    "route",
    [
        "print(blob)",
        "os.write(1, blob.encode())",
        "sys.__stdout__.write(blob); sys.__stdout__.flush()",
        "open('/dev/stdout', 'w').write(blob)",
        "os.write(2, blob.encode())",
        "subprocess.run([sys.executable, '-c', 'import sys; sys.stdout.write(sys.argv[1])', blob])",
        "os.system('printf \"%s\"' % blob)",
        "for fd in range(3, 64):\n    try:\n        os.write(fd, blob.encode())\n"
        "    except OSError:\n        pass",
    ],
)
def test_marker_lines_written_to_any_output_earn_nothing(attempt, route):
    outcome = attempt("import os, subprocess, sys\n" + LINES + tried(route) + WRITE)
    assert (outcome.status, outcome.stages, outcome.valid) == ("ok", HONEST, True), outcome.stderr_tail


def test_the_nonce_is_not_in_the_programs_source_environment_or_arguments(attempt):
    program = (
        "import os\n"
        "seen = [open(f, 'rb').read() for f in os.listdir('.') if os.path.isfile(f)]\n"
        "seen += [open('/proc/' + str(os.getpid()) + '/' + f, 'rb').read() for f in ('cmdline', 'environ')]\n"
        "seen += [repr(os.environ).encode()]\n"
        f"print([{NONCE[:8]!r} + {NONCE[8:]!r} in blob.decode(errors='replace') for blob in seen])\n" + WRITE
    )
    outcome = attempt(program)
    assert outcome.status == "ok", outcome.stderr_tail
    assert "True" not in outcome.stdout_tail and "False" in outcome.stdout_tail


@pytest.mark.parametrize(
    "route",
    [
        "globals()[[n for n in globals() if n.startswith('__prac')][0]](*STAGES)",
        "vars()[[n for n in vars() if n.startswith('__prac')][0]](*STAGES)",
        "m = sys.modules['__m' + 'ain__']; getattr(m, [n for n in dir(m) if '__prac' in n][0])(*STAGES)",
        "import inspect; g = inspect.currentframe().f_globals; g[[n for n in g if '__pr' in n][0]](*STAGES)",
        "g = sys._getframe().f_globals; g[[n for n in g if n.startswith('__prac')][0]](*STAGES)",
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    g = e.__traceback__.tb_frame.f_globals\n"
        "    g[[n for n in g if n.startswith('__prac')][0]](*STAGES)",
        "import builtins; g = builtins.globals(); g[[n for n in g if n.startswith('__prac')][0]](*STAGES)",
        "import gc; [f(*STAGES) for f in gc.get_objects() if '__prac' in getattr(f, '__name__', '')]",
        "import importlib; m = importlib.import_module('__m' + 'ain__'); "
        "getattr(m, [n for n in dir(m) if n.startswith('__prac')][0])(*STAGES)",
    ],
)
def test_a_program_that_introspects_to_reach_the_marker_earns_no_stage_credit_but_is_graded(attempt, route):
    program = f"import os, sys\nSTAGES = {list(STAGES)!r}\n{tried(route)}{WRITE}"
    outcome = attempt(program)
    assert (outcome.status, outcome.stages, outcome.valid) == ("ok", (), True), outcome.stderr_tail


COOKIE = (
    "# coding: raw_unicode_escape\n"
    "import os\n"
    "if os.environ.get('NEVER_SET'):\n"
    "    open('input/test.csv').read()\n"
    "# read as UTF-8 this line is a comment; read as raw_unicode_escape it is three:"
    " \\u000atry: __practicum_mark__('data_loaded')\\u000aexcept NameError: pass\n"
)
"""Issue 24, class 4: the checker reads the text as UTF-8, the interpreter as the cookie says, where
``\\u000a`` is a line break: the comment's tail runs, naming the marker function where the guard saw no
name, and claims the stage of a read that never ran (its marker was inserted, so credit used to follow)."""


def test_a_coding_cookie_that_hides_code_in_a_comment_earns_no_stage_credit_but_is_graded(attempt):
    outcome = attempt(COOKIE + WRITE)
    assert (outcome.status, outcome.stages, outcome.valid) == ("ok", (), True), outcome.stderr_tail


def test_a_utf8_coding_cookie_is_no_obstacle_to_honest_credit(attempt):
    outcome = attempt("# -*- coding: utf-8 -*-\nimport os\n" + WRITE)
    assert (outcome.status, outcome.stages, outcome.valid) == ("ok", HONEST, True), outcome.stderr_tail


def test_lm_markers_that_all_follow_the_imports_earn_only_what_the_program_ran(attempt):
    """Issue 24, class 5: the program has code for every stage but runs none of it past its imports; an LM
    markup (as a supervisor would ship it) puts all six markers right after the imports."""
    program = (
        "import os\n"
        "def never():\n"
        "    import pandas as pd\n"
        "    from sklearn.linear_model import Ridge\n"
        "    df = pd.read_csv('input/test.csv')\n"
        "    model = Ridge().fit(df[['x']], df['x'])\n"
        "    df.assign(y=model.predict(df[['x']])).to_csv('submission/submission.csv')\n"
    )
    markup = program.replace("import os\n", f"import os\n__practicum_mark__{STAGES!r}\n", 1)
    outcome = attempt(program + WRITE, lm_markup=markup + WRITE)
    assert outcome.status == "ok", outcome.stderr_tail
    assert (outcome.instrumentation, outcome.stages, outcome.valid) == ("lm-fallback", HONEST, True)
