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


EVERY_DESCRIPTOR = (
    "for fd in range(3, 64):\n    try:\n        os.write(fd, blob.encode())\n"
    "    except OSError:\n        pass"
)
"""Writing the marker lines to every descriptor the program may hold, its marker channel's among them."""


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
        EVERY_DESCRIPTOR,
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


# Issue 24, classes 1 and 2: code for a stage that never runs, or that runs on objects that did no work.

LIBRARIES = "import os\nimport pandas as pd\nfrom sklearn.linear_model import Ridge\n"
NEVER_RUN = {
    "a lambda never called": "load = lambda: pd.read_csv('input/test.csv')\n",
    "a short-circuit and": "x = False and pd.read_csv('input/test.csv')\n",
    "a short-circuit or": "y = True or Ridge().fit([[0], [1]], [0, 1])\n",
    "the untaken arm of a conditional expression": "m = None if True else Ridge()\n",
    "a comprehension over nothing": "p = [Ridge().fit([[0]], [0]).predict([[0]]) for _ in []]\n",
    "an elif test after a taken branch": (
        "if True:\n    pass\nelif pd.read_csv('input/test.csv') is None:\n    pass\n"
    ),
    "a loop that runs zero times": "for _ in range(0):\n    loss.backward()\n    optimizer.step()\n",
    "a helper that returns first": "def fit():\n    return None\n    Ridge().fit([[0]], [0])\nfit()\n",
}


@pytest.mark.parametrize("case", NEVER_RUN)
def test_an_event_call_that_is_never_evaluated_earns_nothing(attempt, case):
    outcome = attempt(LIBRARIES + NEVER_RUN[case] + WRITE)
    assert (outcome.status, outcome.stages, outcome.valid) == ("ok", HONEST, True), outcome.stderr_tail


WORKLESS = {
    "a class of the program named like an estimator": (
        "class RandomForestClassifier:\n    def fit(self, X, y):\n        return self\n"
        "    def predict(self, X):\n        return [0] * len(X)\n"
        "model = RandomForestClassifier().fit([[0]], [0])\npredictions = model.predict([[0], [1]])\n"
    ),
    "a class of the program that says it is scikit-learn's": (
        "class RandomForestClassifier:\n    __module__ = 'sklearn.ensemble._forest'\n"
        "    def fit(self, X, y):\n        self.classes_ = [0]\n        return self\n"
        "    def predict(self, X):\n        return [0] * len(X)\n"
        "model = RandomForestClassifier().fit([[0]], [0])\npredictions = model.predict([[0], [1]])\n"
    ),
    "a module the program wrote and imported": (
        "open('fake.py', 'w').write('class RandomForestClassifier:\\n"
        "    def fit(self, X, y):\\n        self.classes_ = [0]\\n        return self\\n"
        "    def predict(self, X):\\n        return [0] * len(X)\\n')\n"
        "import sys\nsys.path.insert(0, '.')\nfrom fake import RandomForestClassifier\n"
        "model = RandomForestClassifier().fit([[0]], [0])\npredictions = model.predict([[0], [1]])\n"
    ),
    "a reader of the program named like pandas'": (
        "def read_csv(path):\n    return [1, 2, 3]\nrows = read_csv('input/test.csv')\n"
    ),
    "a method named like a stage's on an unrelated object": (
        "class Store:\n    def fit(self):\n        return pd.read_csv('input/test.csv')\n"
        "settings = {'fit': 1}\nvalue = settings.get('fit')\n"
        "class Fake:\n    def fit(self, X, y):\n        return self\nFake().fit(None, None)\n"
    ),
    "an unfitted estimator predicting nothing": "model = Ridge()\nempty = []\n",
}


@pytest.mark.parametrize("case", WORKLESS)
def test_a_call_on_objects_that_did_no_work_earns_nothing(attempt, case):
    outcome = attempt(LIBRARIES + WORKLESS[case] + WRITE)
    expected = ("imports_done", "model_defined", "submission_written") if "unfitted" in case else HONEST
    assert (outcome.status, outcome.stages, outcome.valid) == ("ok", expected, True), outcome.stderr_tail


def test_an_honest_trivial_pipeline_earns_every_stage_it_ran(attempt):
    """Fitted on two constant rows, it still read the data, fitted, predicted the test rows and wrote."""
    program = (
        "import pandas as pd\n"
        "from sklearn.dummy import DummyClassifier\n"
        "test = pd.read_csv('input/test.csv')\n"
        "model = DummyClassifier().fit([[0], [0]], ['a', 'a'])\n"
        "predictions = model.predict(test[['x']])\n"
        "frame = pd.DataFrame({'id': test['id'], 'y': predictions})\n"
        "frame.to_csv('submission/submission.csv', index=False)\n"
    )
    outcome = attempt(program)
    assert (outcome.status, outcome.stages, outcome.valid) == ("ok", STAGES, True), outcome.stderr_tail


def test_a_program_that_reaches_the_marker_can_mark_imports_done_and_nothing_else(attempt, monkeypatch):
    """The guard missed it (patched off here): the statement form marks only imports_done, and the call form
    needs the evidence of a real call."""
    monkeypatch.setattr(instrument_module, "names_the_marker", lambda tree: False)
    program = (
        LIBRARIES
        + "if os.environ.get('NEVER_SET'):\n"
        + "    Ridge().fit(pd.read_csv('input/test.csv'), [0]).predict([[0]])\n"
        + "mark = globals()['__prac' + 'ticum_mark__']\n"
        + f"mark(*{list(STAGES)!r})\n"
        + "mark('model_trained', 'predictions_made', lambda: [1, 2])()\n"
        + WRITE
    )
    outcome = attempt(program)
    assert (outcome.status, outcome.stages, outcome.valid) == ("ok", HONEST, True), outcome.stderr_tail


def test_a_forged_submission_marker_earns_nothing_without_the_file(attempt):
    """Issue 24, class 3: a program that has the nonce writes marker lines to every descriptor, its channel's
    among them, and writes no submission. The file is the evidence, checked by the sandbox outside it."""
    program = (
        "import os, sys\nimport pandas as pd\n"
        "if os.environ.get('NEVER_SET'):\n    pd.DataFrame().to_csv('submission/submission.csv')\n"
        + LINES
        + tried(EVERY_DESCRIPTOR)
    )
    outcome = attempt(program)
    assert outcome.status == "ok" and not outcome.valid, outcome.stderr_tail
    assert outcome.stages == ("imports_done",)


def test_a_forged_data_marker_earns_nothing_when_no_public_file_was_read(attempt):
    """Issue 24, class 3: the same forger, with code for reading the data that never runs. The sandbox sees,
    from outside, that no public file was opened."""
    program = (
        "import os, sys\nimport pandas as pd\n"
        "if os.environ.get('NEVER_SET'):\n    pd.read_csv('input/test.csv')\n"
        + LINES
        + tried(EVERY_DESCRIPTOR)
        + WRITE
    )
    outcome = attempt(program)
    assert (outcome.status, outcome.stages, outcome.valid) == ("ok", HONEST, True), outcome.stderr_tail


def test_the_sandbox_reports_which_public_files_a_program_read(attempt):
    outcome = attempt("import os\nrows = open('input/test.csv').read()\nos.listdir('input')\n" + WRITE)
    assert outcome.status == "ok" and "data_loaded" in outcome.stages, outcome.stderr_tail
