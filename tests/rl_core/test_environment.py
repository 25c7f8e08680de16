"""rl_core.environment: one attempt end to end on a tiny competition built here, with honest and broken
programs reaching exactly the stages they should."""

from __future__ import annotations

import itertools
import json

import pytest

from rl_core.environment import TaskFiles, run_program, run_response
from rl_core.grading import GradingSpec
from rl_core.instrument import STAGES
from rl_core.outcome import AttemptOutcome
from rl_core.reward import RewardConfig

NONCE = "feedc0de"

CORRECT = """\
import pandas as pd
from sklearn.linear_model import LogisticRegression

train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")
model = LogisticRegression()
model.fit(train[["x1", "x2"]], train["y"])
predictions = model.predict(test[["x1", "x2"]])
pd.DataFrame({"id": test["id"], "y": predictions}).to_csv("submission/submission.csv", index=False)
print("done")
"""


@pytest.fixture
def task(tmp_path) -> TaskFiles:
    public, private = tmp_path / "tiny" / "public", tmp_path / "tiny" / "private"
    public.mkdir(parents=True)
    private.mkdir()
    rows = [(i, i % 7 / 7, (i * 3) % 5 / 5) for i in range(60)]
    label = lambda x1, x2: "yes" if x1 + x2 > 0.8 else "no"  # noqa: E731
    train = ["id,x1,x2,y", *(f"{i},{a},{b},{label(a, b)}" for i, a, b in rows[:40])]
    (public / "train.csv").write_text("\n".join(train) + "\n")
    (public / "test.csv").write_text(
        "\n".join(["id,x1,x2", *(f"{i},{a},{b}" for i, a, b in rows[40:])]) + "\n"
    )
    (public / "sample_submission.csv").write_text(
        "\n".join(["id,y", *(f"{i},no" for i, _, _ in rows[40:])]) + "\n"
    )
    answers = ["id,y", *(f"{i},{label(a, b)}" for i, a, b in rows[40:])]
    (private / "answers.csv").write_text("\n".join(answers) + "\n")
    return TaskFiles(
        slug="tiny",
        public_dir=public,
        answers_path=private / "answers.csv",
        grading=GradingSpec("accuracy", "id", ("y",)),
        time_limit_s=120,
        memory_mb=2048,
        baseline_score=0.5,
    )


@pytest.fixture
def attempt(task, data_dir):
    counter = itertools.count()

    def attempt(program: str, **options) -> AttemptOutcome:
        return run_program(program, task, data_dir / "attempts" / str(next(counter)), nonce=NONCE, **options)

    return attempt


# ---------------------------------------------------------------------------- honest and broken programs


@pytest.mark.slow
def test_a_correct_program_reaches_every_stage_with_a_valid_score(attempt):
    outcome = attempt(CORRECT)
    assert (outcome.status, outcome.stages, outcome.valid) == ("ok", STAGES, True), outcome.stderr_tail
    assert 0.5 < outcome.score <= 1.0
    assert outcome.reward == pytest.approx((outcome.score - 0.5) / 0.5 + 0.6)


@pytest.mark.slow
def test_a_wrong_input_path_stops_after_the_imports(attempt):
    outcome = attempt(CORRECT.replace("input/train.csv", "input/trian.csv"))
    assert (outcome.status, outcome.stages, outcome.valid) == ("error", ("imports_done",), False)
    assert "FileNotFoundError" in outcome.stderr_tail
    assert outcome.reward == pytest.approx(-1.0 + 0.1)


@pytest.mark.slow
def test_a_missing_import_stops_at_the_first_use(attempt):
    outcome = attempt(CORRECT.replace("import pandas as pd\n", ""))
    assert (outcome.status, outcome.stages) == ("error", ("imports_done",))
    assert "NameError: name 'pd' is not defined" in outcome.stderr_tail


@pytest.mark.slow
def test_wrong_columns_reach_every_stage_but_are_not_valid(attempt):
    outcome = attempt(CORRECT.replace('"y": predictions', '"label": predictions'))
    assert (outcome.status, outcome.stages, outcome.valid) == ("ok", STAGES, False)
    assert "y" in outcome.grade_error
    assert outcome.reward == pytest.approx(-1.0 + 0.6)


@pytest.mark.slow
def test_a_crash_after_training_reaches_the_stages_up_to_training(attempt):
    outcome = attempt(CORRECT.replace("predictions = ", "raise RuntimeError('boom')\npredictions = "))
    assert (outcome.status, outcome.valid) == ("error", False)
    assert outcome.stages == ("imports_done", "data_loaded", "model_defined", "model_trained")
    assert outcome.reward == pytest.approx(-1.0 + 0.4)


@pytest.mark.slow
def test_without_instrumentation_a_correct_program_earns_only_its_score(attempt):
    outcome = attempt(CORRECT, instrument=False)
    assert (outcome.valid, outcome.stages, outcome.instrumentation) == (True, (), "none")
    assert outcome.reward == pytest.approx((outcome.score - 0.5) / 0.5)


@pytest.mark.slow
def test_the_paper_preset_rewards_the_raw_score(attempt):
    outcome = attempt(CORRECT, reward=RewardConfig(preset="paper"))
    assert outcome.reward == pytest.approx(outcome.score + 0.6)


# -------------------------------------------------------------------------------------- what is recorded


def test_a_submission_left_by_a_crashing_program_is_not_graded(attempt):
    outcome = attempt("open('submission/submission.csv', 'w').write('id,y\\n')\nraise SystemExit(1)")
    assert (outcome.status, outcome.valid, outcome.score) == ("error", False, None)
    assert "did not finish" in outcome.grade_error


def test_a_program_that_writes_no_submission_is_not_valid(attempt):
    outcome = attempt("print('hello')")
    assert (outcome.status, outcome.valid, outcome.reward) == ("ok", False, -1.0)
    assert "no submission" in outcome.grade_error


def test_a_timeout_counts_the_limit_as_the_duration(attempt):
    outcome = attempt("import time\ntime.sleep(60)", timeout_s=1)
    assert (outcome.status, outcome.duration_s, outcome.valid) == ("timeout", 1.0, False)
    assert outcome.stages == ("imports_done",)


def test_it_records_the_program_and_the_instrumented_program(attempt):
    outcome = attempt("import os\nprint(os.sep)")
    assert outcome.program == "import os\nprint(os.sep)"
    assert "__practicum_mark__('imports_done')" in outcome.instrumented_program
    assert outcome.instrumentation == "ast"


def test_genuine_markers_are_removed_from_the_stdout_tail(attempt):
    outcome = attempt("import os\nprint('visible')")
    assert outcome.stages == ("imports_done",)
    assert outcome.stdout_tail == "visible\n"


def test_the_report_has_exactly_the_fields_of_manage_py_execute(attempt):
    report = attempt("import os").to_report()
    assert list(report) == [
        "status",
        "exit_code",
        "duration_s",
        "stages",
        "valid",
        "score",
        "reward",
        "isolation",
        "stdout_tail",
        "stderr_tail",
    ]
    assert json.loads(json.dumps(report)) == report


# --------------------------------------------------------------------------------------------- responses


def test_a_response_without_a_code_block_is_a_parse_failure_with_the_failure_reward(task, data_dir):
    outcome = run_response("I would use a random forest.", task, data_dir / "never")
    assert (outcome.status, outcome.reward, outcome.valid) == ("parse_error", -1.0, False)
    assert outcome.grade_error == "The response has no fenced Python code block."
    assert outcome.plan == "I would use a random forest."
    assert not (data_dir / "never").exists()


def test_a_parse_failure_uses_the_configured_failure_reward(task, data_dir):
    outcome = run_response("no code", task, data_dir / "never", reward=RewardConfig(preset="paper"))
    assert outcome.reward == -10.0


def test_a_response_runs_its_code_and_keeps_its_plan(task, data_dir):
    outcome = run_response("Print a word.\n```python\nprint('word')\n```", task, data_dir / "a", nonce=NONCE)
    assert (outcome.status, outcome.stdout_tail, outcome.plan) == ("ok", "word\n", "Print a word.")


def test_an_lm_instrumenter_can_insert_the_markers(attempt):
    def generate(prompt: str) -> str:
        return "```python\nimport os\n__practicum_mark__('imports_done')\nprint(os.sep)\n```"

    outcome = attempt("import os\nprint(os.sep)", lm_generate=generate)
    assert (outcome.instrumentation, outcome.stages, outcome.stdout_tail) == ("lm", ("imports_done",), "/\n")
