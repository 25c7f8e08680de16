"""rl_core.instrument: where markers go, that they never change a program, and how stages are read back.

Programs that are executed here use tiny stand-ins for pandas and scikit-learn (the instrumenter goes by
names), so they run in a bare interpreter in milliseconds.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from dataclasses import astuple

import pytest

from rl_core.instrument import (
    CHANNEL_ENV,
    LM_PROMPT,
    STAGES,
    Instrumented,
    accept_lm_markup,
    credited_stages,
    instrument,
    lm_instrument,
    lm_markup,
    marker_line,
    parse_stages,
)
from rl_core.sandbox.channel import MarkerChannel

NONCE = "n0nce42"


def write_inputs(folder) -> None:
    """The public files PIPELINE reads."""
    (folder / "input").mkdir(exist_ok=True)
    (folder / "input" / "train.csv").write_text("id,x,y\n1,0,a\n2,1,b\n3,0,a\n4,1,b\n")
    (folder / "input" / "test.csv").write_text("id,x\n5,0\n6,1\n")


def stages_of(program: str) -> tuple[str, ...]:
    return instrument(textwrap.dedent(program), NONCE).inserted


def run(program: str, cwd) -> subprocess.CompletedProcess:
    """Run `program` with a marker channel for NONCE, as the sandbox does; ``.markers`` is what came back."""
    (cwd / "input").mkdir(exist_ok=True)
    (cwd / "submission").mkdir(exist_ok=True)
    channel = MarkerChannel.open(NONCE)
    try:
        result = subprocess.run(
            [sys.executable, "-c", program],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=60,
            pass_fds=(channel.child_fd,),
            env=os.environ | {CHANNEL_ENV: str(channel.child_fd)},
        )
        channel.spawned()
        result.markers = _received(channel)  # type: ignore[attr-defined]
    finally:
        channel.close()
    return result


def _received(channel: MarkerChannel) -> str:
    """Everything on the channel (a program that never read its nonce resets it: that ends it too)."""
    channel.ours.setblocking(True)
    data = b""
    try:
        while chunk := channel.ours.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data.decode()


def is_marker_or_prelude(stmt: ast.stmt) -> bool:
    call = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None
    name = call.func.id if call is not None and isinstance(call.func, ast.Name) else ""
    return name == "__practicum_mark__" or (name == "exec" and "def __practicum_mark__" in ast.unparse(stmt))


class Unwrapped(ast.NodeTransformer):
    """``__practicum_mark__('stage', f)(x)`` back to ``f(x)``."""

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        wrapper = node.func
        if isinstance(wrapper, ast.Call) and getattr(wrapper.func, "id", "") == "__practicum_mark__":
            node.func = wrapper.args[-1]
        return node


def without_markers(source: str) -> str:
    """The AST dump of `source` without marker statements, call wrappers and the marker function."""
    tree = Unwrapped().visit(ast.parse(source))
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                block[:] = [s for s in block if not is_marker_or_prelude(s)]
    return ast.dump(tree)


PIPELINE = """
import os
import sys

import pandas as pd
from sklearn.ensemble import RandomForestClassifier

SUBMISSION = os.path.join("submission", "submission.csv")

def load(name):
    return pd.read_csv(os.path.join("input", name))

def main():
    train, test = load("train.csv"), load("test.csv")
    model = RandomForestClassifier(n_estimators=10, random_state=0)
    for fold in range(3):
        with open(os.devnull, "w"):
            model.fit(train[["x"]], train["y"])
    predictions = model.predict(test[["x"]])
    pd.DataFrame({"id": test["id"], "y": predictions}).to_csv(SUBMISSION, index=False)
    print("rows", len(predictions))

if __name__ == "__main__":
    main()
"""


# ---------------------------------------------------------------------------------------- reading stages


def test_parse_stages_keeps_only_lines_with_the_nonce_in_canonical_order():
    stdout = "\n".join(
        [
            marker_line(NONCE, "model_trained"),
            marker_line("other", "data_loaded"),
            "@@practicum::imports_done",
            marker_line(NONCE, "imports_done"),
        ]
    )
    assert parse_stages(stdout, NONCE) == ("imports_done", "model_trained")


def test_parse_stages_counts_a_repeated_stage_once():
    assert parse_stages(marker_line(NONCE, "data_loaded") * 3, NONCE) == ("data_loaded",)


def test_parse_stages_ignores_unknown_stage_names():
    assert parse_stages(marker_line(NONCE, "model_hacked"), NONCE) == ()


def test_only_stages_the_instrumenter_inserted_are_credited():
    lines = [marker_line(NONCE, stage) for stage in STAGES]
    assert credited_stages(lines, NONCE, ("imports_done", "model_trained")) == (
        "imports_done",
        "model_trained",
    )


# ---------------------------------------------------------------------------------------- finding events


def test_it_marks_imports_done_after_the_last_top_level_import():
    program = instrument("import os\nimport sys\nx = 1\nimport json\ny = 2\n", NONCE).program
    assert program.splitlines()[3] == "import json; __practicum_mark__('imports_done')"


def test_it_marks_imports_inside_functions_when_there_are_none_at_the_top():
    assert stages_of("def main():\n    import pandas as pd\n") == ("imports_done",)


@pytest.mark.parametrize(
    "line",
    [
        "df = pd.read_csv('input/train.csv')",
        "df = pl.read_parquet('input/train.parquet')",
        "X = np.load('input/x.npy')",
        "X = numpy.loadtxt(path, delimiter=',')",
        "text = open('input/notes.txt').read()",
        "text = Path('./input/notes.txt').read_text()",
        "image = Image.open(f'input/images/{name}.png')",
    ],
)
def test_it_marks_data_loaded_after_a_read(line):
    assert stages_of(line) == ("data_loaded",)


def test_it_does_not_count_opening_a_file_outside_input_as_data():
    assert stages_of("log = open('notes.txt').read()") == ()


def test_it_follows_a_path_held_in_a_variable():
    assert stages_of("TRAIN = 'input/train.json'\nwith open(TRAIN) as f:\n    rows = f.read()\n") == (
        "data_loaded",
    )


@pytest.mark.parametrize(
    "line",
    [
        "model = RandomForestClassifier(n_estimators=100)",
        "model = LogisticRegression(C=1.0)",
        "model = lgb.LGBMRegressor()",
        "model = xgb.XGBClassifier(n_estimators=50)",
        "model = SVC(probability=True)",
        "model = make_pipeline(StandardScaler(), Ridge())",
        "search = GridSearchCV(Ridge(), {'alpha': [1, 10]})",
        "net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))",
    ],
)
def test_it_marks_model_defined_after_an_estimator_is_built(line):
    assert stages_of(line) == ("model_defined",)


def test_it_marks_model_defined_when_a_torch_module_of_the_program_is_instantiated():
    program = "import torch\nclass Net(nn.Module):\n    def forward(self, x):\n        return x\n"
    program += "model = Net().to('cpu')\n"
    assert (
        instrument(program, NONCE).program.splitlines()[4]
        == "model = __practicum_mark__('model_defined', Net)().to('cpu')"
    )


def test_it_does_not_count_a_loss_or_a_scaler_as_a_model():
    assert stages_of("criterion = nn.CrossEntropyLoss()\nscaler = StandardScaler()\n") == ()


def test_it_marks_model_trained_after_fit():
    assert stages_of("model.fit(X, y)") == ("model_trained",)


def test_it_does_not_count_fitting_a_preprocessor_as_training():
    assert stages_of("scaler = StandardScaler()\nscaler.fit(X)\nStandardScaler().fit(X)\n") == ()


def test_it_counts_lgb_train_as_defining_and_training_a_model():
    assert stages_of("booster = lgb.train(params, lgb.Dataset(X, y))") == ("model_defined", "model_trained")


def test_it_marks_each_step_of_a_torch_training_loop_where_it_is_evaluated():
    program = textwrap.dedent(
        """\
        import torch
        for epoch in range(3):
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
        done = True
        """
    )
    lines = instrument(program, NONCE).program.splitlines()
    assert lines[5:8] == [
        "        __practicum_mark__('model_trained', loss.backward)()",
        "        __practicum_mark__('model_trained', optimizer.step)()",
        "done = True",
    ]  # the marker fires at the first step that ran: a loop that runs zero times marks nothing


@pytest.mark.parametrize("line", ["p = model.predict(X)", "p = clf.predict_proba(X)[:, 1]"])
def test_it_marks_predictions_made_after_predict(line):
    assert stages_of(line) == ("predictions_made",)


def test_it_marks_predictions_made_for_a_model_called_under_no_grad():
    program = "model = Net()\nwith torch.no_grad():\n    out = model(X)\nloss = model(X)\n"
    lines = instrument(
        "import torch\nclass Net(nn.Module):\n    pass\n" + program, NONCE
    ).program.splitlines()
    del lines[0]
    assert lines[4] == "    out = __practicum_mark__('predictions_made', model)(X)"
    assert lines[5] == "loss = model(X)"


@pytest.mark.parametrize(
    "program",
    [
        "sub.to_csv('submission/submission.csv', index=False)",
        "OUT = os.path.join('submission', 'submission.csv')\ndf.to_csv(OUT, index=False)",
        "np.savetxt('submission/submission.csv', preds, delimiter=',')",
        "with open('./submission/submission.csv', 'w') as f:\n    f.write(text)",
        "submission.to_csv(path, index=False)",
    ],
)
def test_it_marks_submission_written_after_the_submission_write(program):
    assert stages_of(program) == ("submission_written",)


def test_it_does_not_count_other_csv_writes_as_the_submission():
    assert stages_of("features.to_csv('features.csv')") == ()


def test_an_event_inside_a_helper_is_marked_where_it_is_evaluated_not_at_the_helpers_call():
    program = "import os\ndef load():\n    return pd.read_csv('input/train.csv')\ntrain = load()\n"
    lines = instrument(program, NONCE).program.splitlines()
    assert lines[2:4] == [
        "    return __practicum_mark__('data_loaded', pd.read_csv)('input/train.csv')",
        "train = load()",
    ]


def test_it_marks_every_stage_of_a_complete_pipeline():
    assert stages_of(PIPELINE) == STAGES


# ---------------------------------------------------------------------------- never changing the program


def test_without_its_markers_the_instrumented_program_is_the_original():
    assert without_markers(instrument(PIPELINE, NONCE).program) == ast.dump(ast.parse(PIPELINE))


def test_markers_keep_every_line_number_and_comment():
    program = "import os\nx = np.load(\n    'input/a.npy'\n)\n# a comment\nmodel.fit(x)  # train\n"
    instrumented = instrument(program, NONCE).program.splitlines()
    assert instrumented[1:] == [
        "x = __practicum_mark__('data_loaded', np.load)(",
        "    'input/a.npy'",
        ")",
        "# a comment",
        "__practicum_mark__('model_trained', model.fit)(x)  # train",
    ]


def test_a_program_that_does_not_parse_is_returned_unchanged_without_markers():
    program = "import pandas as pd\ndf = pd.read_csv('input/train.csv'\n"
    assert instrument(program, NONCE) == Instrumented(program, (), "ast")


def test_a_program_without_events_is_returned_unchanged():
    assert instrument("print('hello')\n", NONCE) == Instrumented("print('hello')\n", (), "ast")


def test_it_keeps_the_docstring_and_future_imports_first(tmp_path):
    program = '"""Doc."""\nfrom __future__ import annotations\nimport os\nprint(__doc__)\n'
    result = run(instrument(program, NONCE).program, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.markers) == ("Doc.\n", f"{marker_line(NONCE, 'imports_done')}\n")


def test_it_instruments_a_program_that_starts_with_a_function(tmp_path):
    program = "@staticmethod\ndef f():\n    return 1\nimport os\nprint(f.__func__())\n"
    result = run(instrument(program, NONCE).program, tmp_path)
    assert (result.stdout, result.markers) == ("1\n", f"{marker_line(NONCE, 'imports_done')}\n"), (
        result.stderr
    )


def test_it_falls_back_to_rendering_the_ast_when_the_text_cannot_be_spliced():
    program = "import os\rx = np.load('input/a.npy')\r"  # old-Mac newlines: the text splice misplaces markers
    out = instrument(program, NONCE)
    assert out.inserted == ("imports_done", "data_loaded")
    assert without_markers(out.program) == ast.dump(ast.parse(program))


def test_the_nonce_is_not_written_into_the_instrumented_program():
    assert NONCE not in instrument(PIPELINE, NONCE).program


def test_a_marker_channel_rejects_a_nonce_that_could_forge_a_second_line():
    with pytest.raises(ValueError, match="nonce"):
        MarkerChannel.open("x\n@@practicum:x:model_trained")


# ----------------------------------------------------------------------------- running instrumented code


def test_the_instrumented_pipeline_marks_every_stage_once_on_its_channel_and_prints_the_same_output(tmp_path):
    write_inputs(tmp_path)
    original = run(PIPELINE, tmp_path)
    instrumented = run(instrument(PIPELINE, NONCE).program, tmp_path)
    assert instrumented.returncode == original.returncode == 0, instrumented.stderr
    assert parse_stages(instrumented.markers, NONCE) == STAGES
    assert instrumented.markers.count(NONCE) == len(STAGES)
    assert instrumented.stdout == original.stdout


def test_the_marker_channel_is_not_inherited_by_child_processes(tmp_path):
    program = "import os, subprocess, sys\n"
    program += "child = 'import os; print(sorted(os.environ), sorted(os.listdir(\\'/dev/fd\\')))'\n"
    program += "print(subprocess.run([sys.executable, '-c', child], capture_output=True, text=True,"
    program += " close_fds=False).stdout)\n"
    marked = instrument(program, NONCE)
    result = run(marked.program, tmp_path)
    assert marked.inserted == ("imports_done",)
    assert CHANNEL_ENV not in result.stdout, result.stderr
    assert "['0', '1', '2', '3']" in result.stdout  # stdio and listdir's own descriptor: no channel


def test_a_crash_after_training_reaches_exactly_the_stages_before_it(tmp_path):
    write_inputs(tmp_path)
    program = PIPELINE.replace(
        '    predictions = model.predict(test[["x"]])', "    raise RuntimeError('boom')"
    )
    result = run(instrument(program, NONCE).program, tmp_path)
    assert "RuntimeError: boom" in result.stderr
    assert parse_stages(result.markers, NONCE) == (
        "imports_done",
        "data_loaded",
        "model_defined",
        "model_trained",
    )


def test_a_traceback_points_at_the_original_line(tmp_path):
    program = "import os\nx = 1\nraise ValueError(x)\n"
    result = run(instrument(program, NONCE).program, tmp_path)
    assert "line 3, in <module>" in result.stderr


def test_markers_reach_the_channel_even_when_the_program_redirects_sys_stdout(tmp_path):
    write_inputs(tmp_path)
    program = "import io, sys\nimport pandas as pd\nsys.stdout = io.StringIO()\n"
    program += "x = pd.read_csv('input/train.csv')\n"
    assert parse_stages(run(instrument(program, NONCE).program, tmp_path).markers, NONCE) == (
        "imports_done",
        "data_loaded",
    )


def test_a_marker_does_not_break_a_program_that_closed_stdout(tmp_path):
    program = "import os\nos.close(1)\nimport sys\n"
    result = run(instrument(program, NONCE).program, tmp_path)
    assert result.returncode == 0, result.stderr


# ----------------------------------------------------------------------------------- the LM instrumenter


SMALL = "import pandas as pd\ndf = pd.read_csv('input/train.csv')\nprint(len(df))\n"


def test_the_lm_instrumenter_keeps_an_lm_output_that_only_adds_markers():
    reply = (
        "```python\nimport pandas as pd\n__practicum_mark__('imports_done')\n"
        "df = pd.read_csv('input/train.csv')\n__practicum_mark__(\"data_loaded\")\nprint(len(df))\n```"
    )
    out = lm_instrument(SMALL, NONCE, lambda prompt: reply)
    assert (out.method, out.inserted) == ("lm", ("imports_done", "data_loaded"))
    assert out.program == instrument(SMALL).program  # the events it points at, marked as the rules mark them


def test_the_lm_instrumenter_shows_the_program_to_the_lm():
    prompts: list[str] = []

    def generate(prompt: str) -> str:
        prompts.append(prompt)
        return ""

    lm_instrument(SMALL, NONCE, generate)
    assert prompts == [LM_PROMPT.format(program=SMALL)]


def test_the_lm_instrumenter_falls_back_to_the_ast_when_the_lm_changes_the_code():
    reply = "```python\nimport pandas as pd\ndf = pd.read_csv('input/test.csv')\n"
    reply += "__practicum_mark__('data_loaded')\n```"
    out = lm_instrument(SMALL, NONCE, lambda prompt: reply)
    assert (out.program, out.inserted, out.method) == (*astuple(instrument(SMALL, NONCE))[:2], "lm-fallback")


def test_the_lm_instrumenter_falls_back_to_the_ast_on_garbage():
    assert lm_instrument(SMALL, NONCE, lambda prompt: "I cannot help with that ```").method == "lm-fallback"


def test_the_lm_instrumenter_falls_back_to_the_ast_when_the_lm_adds_no_marker():
    assert lm_instrument(SMALL, NONCE, lambda prompt: SMALL).method == "lm-fallback"


def test_the_lm_instrumenter_rejects_a_marker_with_an_unknown_stage():
    reply = SMALL + "__practicum_mark__('model_hacked')\n"
    assert lm_instrument(SMALL, NONCE, lambda prompt: reply).method == "lm-fallback"


def test_the_lm_instrumenter_falls_back_to_the_ast_when_generation_fails():
    def broken(prompt: str) -> str:
        raise RuntimeError("out of memory")

    assert lm_instrument(SMALL, NONCE, broken).method == "lm-fallback"


def test_the_lms_markup_is_its_replys_code_without_the_marker_prelude():
    reply = "Here it is.\n```python\nimport pandas as pd\n__practicum_mark__('imports_done')\n```"
    expected = "import pandas as pd\n__practicum_mark__('imports_done')\n"
    assert lm_markup(SMALL, lambda prompt: reply) == expected


def test_a_program_the_guard_refuses_is_never_shown_to_the_lm():
    shown: list[str] = []
    assert lm_markup("print(globals())\n", lambda prompt: shown.append(prompt) or "") == ""
    assert shown == []


def test_a_markup_from_elsewhere_that_only_adds_markers_marks_the_events_it_points_at():
    markup = SMALL.replace("print(", "__practicum_mark__('data_loaded')\nprint(")
    out = accept_lm_markup(SMALL, markup, NONCE)
    assert (out.method, out.inserted) == ("lm", ("data_loaded",))
    assert out.program.startswith("exec(") and out.program.splitlines()[1:] == [
        "df = __practicum_mark__('data_loaded', pd.read_csv)('input/train.csv')",
        "print(len(df))",
    ]


def test_a_markup_from_elsewhere_that_changes_the_program_is_refused_for_the_rules():
    markup = SMALL.replace("train.csv", "test.csv") + "__practicum_mark__('data_loaded')\n"
    out = accept_lm_markup(SMALL, markup, NONCE)
    assert (out.program, out.inserted, out.method) == (*astuple(instrument(SMALL, NONCE))[:2], "lm-fallback")


def test_a_markup_for_a_program_the_guard_refuses_is_refused_even_when_it_only_adds_markers():
    program = "g = globals()\nprint(1)\n"
    out = accept_lm_markup(program, program + "__practicum_mark__('imports_done')\n", NONCE)
    assert (out.method, out.inserted) == ("lm-fallback", ())


def test_a_torch_train_mode_switch_is_not_the_training_function_of_the_same_name():
    program = textwrap.dedent(
        """\
        import torch
        def train(model):
            model.train()
            for xb in loader:
                model(xb).sum().backward()
        train(net)
        """
    )
    lines = instrument(program, NONCE).program.splitlines()
    assert lines[2] == "    model.train()"
    assert lines[4] == "        __practicum_mark__('model_trained', model(xb).sum().backward)()"


def test_a_method_of_the_program_that_loads_data_is_marked_inside_not_at_its_calls():
    program = "import os\nclass Data:\n    def load(self):\n        return pd.read_csv('input/a.csv')\n"
    program += "frame = Data().load()\n"
    lines = instrument(program, NONCE).program.splitlines()
    assert lines[3:5] == [
        "        return __practicum_mark__('data_loaded', pd.read_csv)('input/a.csv')",
        "frame = Data().load()",
    ]


@pytest.mark.parametrize(
    "forgery",
    [
        "__practicum_mark__('model_trained')",
        "globals()['__practicum_mark__']('model_trained')",
        "import builtins; builtins.__practicum_mark__('model_trained')",
        "globals()['__prac' + 'ticum_mark__']('model_trained')",
        "import sys; sys._getframe().f_globals['__prac' + 'ticum_mark__']('model_trained')",
        "nonce = open(__file__).read()",
        "nonce = open('program.py').read()",
        "import sys; nonce = open(sys.argv[0]).read()",
        "import gc; found = [o for o in gc.get_objects() if isinstance(o, str)]",
        "from inspect import currentframe",
        "eval('__prac' + 'ticum_mark__')('model_trained')",
        'import sys; m = sys.modules["__m" + "ain__"]; f = getattr(m, [n for n in dir(m) if "__pr" in n][0])',
        "import os; m = os.sys.modules['__m' + 'ain__']",
        "from sys import modules",
        "names = dir()",
        "f = getattr(object, name)",
        "f = getattr(main_module, '__dict__')",
        "import builtins; g = builtins.globals()",
        "import importlib; m = importlib.import_module('__m' + 'ain__')",
        "import ctypes",
        "import code; code.InteractiveInterpreter().runsource(text)",
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    g = e.__traceback__.tb_frame.f_back",
        "secret = mark.__defaults__",
        "import sys; sys.settrace(tracer)",
    ],
)
def test_a_program_that_calls_the_marker_itself_gets_no_markers(forgery):
    program = f"import pandas as pd\ndf = pd.read_csv('input/train.csv')\n{forgery}\n"
    assert instrument(program, NONCE) == Instrumented(program, (), "ast")
    assert lm_instrument(program, NONCE, lambda prompt: program).inserted == ()


@pytest.mark.parametrize(
    "innocent",
    [
        "model.eval()",
        "model.compile()",
        "import gc; gc.collect()",
        "if __name__ == '__main__':\n    pass",
        "n = len(df.columns)",
        "layers = list(model.modules())",
        "importances = getattr(model, 'feature_importances_', None)",
        "ok = hasattr(model, 'predict_proba')",
        "print(type(model).__name__, model.__class__.__name__)",
        "code = 'abc'",
        "import sys; print(sys.version)",
    ],
)
def test_ordinary_code_that_looks_like_introspection_still_gets_markers(innocent):
    program = f"import pandas as pd\ndf = pd.read_csv('input/train.csv')\n{innocent}\n"
    assert instrument(program, NONCE).inserted == ("imports_done", "data_loaded")


# Issue 24, class 5: the LM's markers must follow the events they name.

TRAINS = (
    "import pandas as pd\nfrom sklearn.linear_model import Ridge\n"
    "df = pd.read_csv('input/train.csv')\nmodel = Ridge()\n"
    "for epoch in range(3):\n    model.fit(df[['x']], df['y'])\nprint(model)\n"
)


def markup_after(program: str, anchor: str, *stages: str) -> str:
    """`program` with one marker statement for `stages` on a new line after the line starting `anchor`,
    indented as that line (as the line before it when `anchor` starts with "<": after a loop's body)."""
    lines = program.split("\n")
    dedent = anchor.startswith("<")
    index = next(i for i, line in enumerate(lines) if line.startswith(anchor.lstrip("<")))
    line = lines[index - 1] if dedent else lines[index]
    indent = line[: len(line) - len(line.lstrip())]
    lines.insert(index + 1, indent + f"__practicum_mark__({', '.join(map(repr, stages))})")
    return "\n".join(lines)


def test_lm_markers_all_right_after_the_imports_are_refused_for_the_rules():
    markup = markup_after(TRAINS, "from sklearn", *STAGES)
    out = accept_lm_markup(TRAINS, markup, NONCE)
    assert (out.method, out.inserted) == ("lm-fallback", instrument(TRAINS).inserted)


@pytest.mark.parametrize(
    ("anchor", "stage"),
    [
        ("from sklearn", "imports_done"),
        ("df = ", "data_loaded"),
        ("model = ", "model_defined"),
        ("<    model.fit", "model_trained"),  # after the loop that holds the fit
        ("    model.fit", "model_trained"),  # right after the fit, inside the loop
    ],
)
def test_an_lm_marker_right_after_a_statement_holding_its_event_is_accepted(anchor, stage):
    out = accept_lm_markup(TRAINS, markup_after(TRAINS, anchor, stage), NONCE)
    assert (out.method, out.inserted) == ("lm", (stage,))


@pytest.mark.parametrize(
    ("anchor", "stage"),
    [
        ("import pandas", "imports_done"),  # an import, but not the last: the imports are not done
        ("df = ", "model_defined"),
        ("model = ", "model_trained"),
        ("print(model)", "predictions_made"),
    ],
)
def test_an_lm_marker_after_a_statement_without_its_event_is_refused(anchor, stage):
    out = accept_lm_markup(TRAINS, markup_after(TRAINS, anchor, stage), NONCE)
    assert out.method == "lm-fallback"


def test_an_lm_marker_first_in_its_block_follows_nothing_and_is_refused():
    markup = TRAINS.replace("    model.fit", "    __practicum_mark__('model_trained')\n    model.fit")
    assert accept_lm_markup(TRAINS, markup, NONCE).method == "lm-fallback"


def test_the_marker_functions_constants_are_the_protocols():
    from rl_core.instrument import marker_function
    from rl_core.instrument.markers import CHANNEL_ENV, MARK_FUNCTION, MARKER_PREFIX

    defaults = marker_function.__practicum_mark__.__kwdefaults__
    assert (defaults["_env"], defaults["_prefix"]) == (CHANNEL_ENV, MARKER_PREFIX.encode())
    assert marker_function.__practicum_mark__.__name__ == MARK_FUNCTION


TORCH_PIPELINE = """
import pandas as pd
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(1, 2)

    def forward(self, x):
        return self.linear(x)

train = pd.read_csv("input/train.csv")
x = torch.tensor(train[["x"]].values, dtype=torch.float32)
y = torch.tensor((train["y"] == "b").values, dtype=torch.long)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range({epochs}):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
with torch.no_grad():
    predictions = model(x).argmax(dim=1)
"""


@pytest.mark.parametrize(("epochs", "trained"), [(3, True), (0, False)])
def test_a_torch_training_loop_is_credited_when_its_steps_ran(tmp_path, epochs, trained):
    write_inputs(tmp_path)
    program = TORCH_PIPELINE.format(epochs=epochs)
    result = run(instrument(program, NONCE).program, tmp_path)
    assert result.returncode == 0, result.stderr
    stages = ("imports_done", "data_loaded", "model_defined", "predictions_made")
    assert parse_stages(result.markers, NONCE) == tuple(
        s for s in STAGES if s in stages or (trained and s == "model_trained")
    )
