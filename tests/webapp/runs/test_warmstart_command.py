"""`manage.py warmstart` on a bundled competition with a tiny model saved in the test (nothing downloaded)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from rl_core.outcome import AttemptOutcome
from rl_core.run_spec import RunConfig
from rl_core.warmstart.folders import read_manifest
from webapp.runs import selectors, services
from webapp.runs.management.commands.train import create_run
from webapp.runs.models import Run

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

PROGRAM = "import pandas as pd\nprint('a program that once scored well')\n"


@pytest.fixture
def earlier_run(iris):
    """A finished run with one valid attempt on iris."""
    run = services.run_create(
        owner=None, competitions=[iris], policy="lm", config=RunConfig(policy="lm").to_dict()
    )
    services.attempt_start(
        run_id=run.id, key="0-0", competition=iris, policy_version=0,
        sample_fields={"prompt_kind": "solve", "response": f"Plan.\n```python\n{PROGRAM}```"},
    )  # fmt: skip
    result = {
        "status": "ok",
        "valid": True,
        "score": 0.9,
        "plan": "Print.",
        "program": PROGRAM,
        "stdout_tail": "hi",
    }
    services.attempt_finish(run_id=run.id, key="0-0", outcome=AttemptOutcome.from_dict(result), staleness=0)
    return run


def warmstart(*args) -> dict:
    out = StringIO()
    call_command("warmstart", *args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_a_warm_start_stores_an_adapter_with_its_manifest_and_prints_its_summary(
    iris_tiny_model, earlier_run, data_dir, capsys
):
    summary = warmstart(
        "iris-species", "--model", iris_tiny_model, "--name", "first", "--demos", "2", "--epochs", "2",
        "--pool", "1", "--from-runs", str(earlier_run.id),
    )  # fmt: skip
    folder = data_dir / "adapters" / "first"
    assert summary["adapter"] == str(folder) and summary["name"] == "first"
    assert (summary["demonstrations"], summary["steps"]) == (3, 6)  # one demonstration a step
    assert summary["loss_first"] > 0 and summary["loss_last"] > 0 and summary["wall_s"] > 0
    assert (folder / "adapter_config.json").is_file()
    manifest = read_manifest(folder)
    assert manifest["sources"] == ["grammar", f"run:{earlier_run.id}"]
    assert manifest["by_kind"] == {"solve": 2, "improve": 1}  # the simplest program ran and was valid
    assert (manifest["competitions"], manifest["base_model"]) == (["iris-species"], iris_tiny_model)
    assert manifest["run_ids"] == [earlier_run.id]
    progress = capsys.readouterr().err  # human progress goes to the process's stderr
    assert "Fine-tuning on 2 grammar and 1 earlier-run demonstrations" in progress and "6/6" in progress
    assert not (data_dir / "warmstarts" / "first").exists()  # the pool's scratch dirs are gone


def test_a_run_can_start_from_a_stored_warm_start_and_takes_its_base_model(iris, iris_tiny_model, data_dir):
    folder = data_dir / "adapters" / "ready"
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}")
    (folder / "warmstart.json").write_text(json.dumps({"kind": "lora", "base_model": iris_tiny_model}))
    run = create_run(train_options(["iris-species"], policy="lm", warm_start="ready", model=None))
    assert (run.config["warm_start"], run.config["model"]) == ("ready", iris_tiny_model)
    with pytest.raises(CommandError, match="adapts") as caught:
        create_run(train_options(["iris-species"], policy="lm", warm_start="ready", model="smollm2-135m"))
    assert caught.value.returncode == 2


def train_options(slugs, **overrides) -> dict:
    """`manage.py train SLUG ...`'s options as its parser gives them, with `overrides`."""
    from webapp.runs.management.commands.train import Command

    return vars(Command().create_parser("manage.py", "train").parse_args(slugs)) | overrides


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ([], "SLUG: name at least one competition"),
        (["nope"], "SLUG: no competition called nope"),
        (["iris-species", "--from-runs", "999999"], "--from-runs: no run 999999"),
        (["iris-species", "--name", "../up"], "--name: '../up' is not a safe file name"),
        (["iris-species", "--epochs", "0"], "--epochs: must be at least 1"),
        (["iris-species", "--demos", "0"], "--demos: 0 grammar demonstrations and no --from-runs"),
        (["iris-species", "--model", "/no/such/model"], "--model: '/no/such/model' is not"),
    ],
)
def test_bad_input_exits_with_status_2_and_one_line_naming_the_option(iris, args, reason):
    with pytest.raises(CommandError) as caught:
        warmstart(*args)
    assert caught.value.returncode == 2
    assert str(caught.value).startswith(reason) and "\n" not in str(caught.value)


def test_a_name_already_taken_is_refused_before_any_work(iris, data_dir):
    (data_dir / "adapters" / "taken").mkdir(parents=True)
    with pytest.raises(CommandError, match="--name: a warm start called 'taken' exists already") as caught:
        warmstart("iris-species", "--name", "taken")
    assert caught.value.returncode == 2


def test_train_refuses_a_warm_start_that_does_not_exist_or_a_policy_that_is_not_an_lm(iris):
    with pytest.raises(CommandError, match=r"--warm-start: .*holds no warm start"):
        create_run(train_options(["iris-species"], policy="lm", warm_start="missing"))
    with pytest.raises(CommandError, match="a grammar run can only start from an earlier run"):
        create_run(train_options(["iris-species"], warm_start="missing"))
    assert not Run.objects.exists()


def test_self_imitation_reads_the_best_valid_attempts_of_each_run_best_first(earlier_run, iris):
    for key, score, valid in (("0-1", 0.95, True), ("0-2", 0.99, False), ("0-3", 0.5, True)):
        services.attempt_start(
            run_id=earlier_run.id, key=key, competition=iris, policy_version=0, sample_fields={"response": ""}
        )
        result = {"status": "ok", "valid": valid, "score": score, "program": PROGRAM}
        services.attempt_finish(
            run_id=earlier_run.id, key=key, outcome=AttemptOutcome.from_dict(result), staleness=0
        )
    rows = selectors.runs_best_valid_attempts(run_ids=[earlier_run.id], per_competition=2)
    assert [(a.key, a.score) for a in rows] == [("0-1", 0.95), ("0-0", 0.9)]  # roc_auc: higher is better
