"""`import_competition` and `grade`: one JSON object on stdout, exit 2 with a one-line reason on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from webapp.competitions.models import Competition

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]


def run_json(*args) -> dict:
    from io import StringIO

    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue())


def test_import_competition_prints_the_slug(make_bundle, owner):
    assert run_json("import_competition", str(make_bundle()), "--owner", "alice", "--public") == {
        "slug": "tiny-churn"
    }
    competition = Competition.objects.get()
    assert competition.owner == owner and competition.is_public


def test_import_competition_exits_2_naming_the_problem(make_bundle):
    with pytest.raises(CommandError) as caught:
        run_json("import_competition", str(make_bundle(spec={"metric": "vibes"})))
    assert caught.value.returncode == 2 and "vibes" in str(caught.value)


def test_import_competition_refuses_an_unknown_owner(make_bundle):
    with pytest.raises(CommandError, match="--owner: no user called 'nobody'"):
        run_json("import_competition", str(make_bundle()), "--owner", "nobody")


def test_grade_scores_a_valid_submission(make_bundle, tmp_path):
    run_json("import_competition", str(make_bundle()))
    submission = tmp_path / "sub.csv"
    submission.write_text("id,churned\n13,1\n12,0\n11,1\n10,1\n")  # shuffled rows, one wrong
    assert run_json("grade", "tiny-churn", str(submission)) == {"valid": True, "score": 0.75, "error": None}


def test_grade_reports_an_invalid_submission_with_exit_0(make_bundle, tmp_path):
    run_json("import_competition", str(make_bundle()))
    submission = tmp_path / "sub.csv"
    submission.write_text("id,churned\n10,1\n")
    result = run_json("grade", "tiny-churn", str(submission))
    assert result["valid"] is False and result["score"] is None and result["error"]


def test_grade_exits_2_for_a_missing_competition(tmp_path):
    with pytest.raises(CommandError, match="no competition called 'nope'") as caught:
        run_json("grade", "nope", str(tmp_path / "x.csv"))
    assert caught.value.returncode == 2


def test_the_real_command_line_prints_json_and_one_line_errors(tmp_path):
    """Through a real process: stdout is JSON only, bad input exits 2 with one line on stderr."""
    env = {
        "PATH": "/usr/bin:/bin",
        "PRACTICUM_DATA_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path}/db",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    missing = subprocess.run(
        [sys.executable, "manage.py", "grade", "nope", "x.csv"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2
    assert missing.stdout == "" and missing.stderr.strip().count("\n") == 0


def test_grade_exits_2_for_a_missing_submission_file(make_bundle, tmp_path):
    run_json("import_competition", str(make_bundle()))
    with pytest.raises(CommandError, match=r"no-such\.csv") as caught:
        run_json("grade", "tiny-churn", str(tmp_path / "no-such.csv"))
    assert caught.value.returncode == 2


PROGRAM = """
import pandas as pd
from sklearn.linear_model import LogisticRegression
train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")
model = LogisticRegression()
model.fit(train[["age"]], train["churned"])
test["churned"] = model.predict(test[["age"]])
test[["id", "churned"]].to_csv("submission/submission.csv", index=False)
"""
STAGES = [
    "imports_done",
    "data_loaded",
    "model_defined",
    "model_trained",
    "predictions_made",
    "submission_written",
]


def test_execute_runs_a_program_as_an_attempt_and_reports_its_grade(make_bundle, tmp_path):
    run_json("import_competition", str(make_bundle()))
    (tmp_path / "solution.py").write_text(PROGRAM)
    report = run_json("execute", "tiny-churn", str(tmp_path / "solution.py"))
    assert (report["status"], report["exit_code"], report["valid"], report["stages"]) == (
        "ok",
        0,
        True,
        STAGES,
    )
    assert 0 <= report["score"] <= 1 and report["reward"] > 0 and report["duration_s"] > 0
    assert report["isolation"] in ("bwrap", "rlimits")


def test_execute_without_instrumentation_reports_no_stages(make_bundle, tmp_path):
    run_json("import_competition", str(make_bundle()))
    (tmp_path / "solution.py").write_text(PROGRAM)
    report = run_json("execute", "tiny-churn", str(tmp_path / "solution.py"), "--no-instrument")
    assert (report["valid"], report["stages"]) == (True, [])


def test_execute_reports_a_crash_after_training_with_the_stages_it_reached(make_bundle, tmp_path):
    run_json("import_competition", str(make_bundle()))
    crashing = PROGRAM.replace(
        'test["churned"] = model.predict', 'raise SystemExit(3)\ntest["churned"] = model.predict'
    )
    (tmp_path / "crash.py").write_text(crashing)
    report = run_json("execute", "tiny-churn", str(tmp_path / "crash.py"), "--timeout", "30")
    assert (report["status"], report["exit_code"], report["valid"]) == ("error", 3, False)
    assert report["stages"] == STAGES[:4] and report["score"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [(["nope", "p.py"], "no competition called 'nope'"), (["tiny-churn", "missing.py"], "no such file"),
     (["tiny-churn", "solution.py", "--timeout", "0"], "--timeout: must be positive")],
)  # fmt: skip
def test_execute_exits_2_naming_the_bad_input(make_bundle, tmp_path, monkeypatch, args, message):
    run_json("import_competition", str(make_bundle()))
    (tmp_path / "solution.py").write_text(PROGRAM)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CommandError, match=message) as caught:
        run_json("execute", *args)
    assert caught.value.returncode == 2


def test_execute_with_an_lm_instrumenter_keeps_the_ast_markers_when_the_lm_changes_the_program(
    make_bundle, tmp_path
):
    """A tiny untrained LM cannot reproduce the program, so its version is refused and the AST's is used."""
    from rl_core.testing import save_tiny_llama

    run_json("import_competition", str(make_bundle()))
    (tmp_path / "solution.py").write_text(PROGRAM)
    model = save_tiny_llama(tmp_path / "tiny")
    args = ("execute", "tiny-churn", str(tmp_path / "solution.py"), "--instrumenter", "lm", "--model", model)
    report = run_json(*args)
    assert (report["instrumentation"], report["stages"], report["valid"]) == ("lm-fallback", STAGES, True)


def test_import_competition_exits_2_for_answers_the_metric_cannot_score(make_bundle):
    bundle = make_bundle(
        spec={"metric": "roc_auc"}, files={"private/answers.csv": "id,churned\n10,0\n11,0\n12,0\n13,0\n"}
    )
    with pytest.raises(CommandError) as caught:
        run_json("import_competition", str(bundle))
    assert caught.value.returncode == 2
    assert str(caught.value).startswith(
        "private/answers.csv: the metric 'roc_auc' cannot score these answers"
    )
    assert Competition.objects.count() == 0


def test_the_real_import_command_rejects_unscorable_answers_in_one_line(make_bundle, tmp_path):
    """Through a real process: exit 2 and one line on stderr, never a traceback."""
    bundle = make_bundle(
        spec={"metric": "f1"},
        files={
            "private/answers.csv": "id,churned\n10,no\n11,yes\n12,no\n13,yes\n",
            "public/sample_submission.csv": "id,churned\n10,no\n11,no\n12,no\n13,no\n",
        },
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "PRACTICUM_DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": f"sqlite:///{tmp_path}/db",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    result = subprocess.run(
        [sys.executable, "manage.py", "import_competition", str(bundle)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
    assert "private/answers.csv: the metric 'f1' cannot score these answers" in result.stderr
