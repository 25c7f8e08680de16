"""Where a run's policy starts: a warm-start phase inside an LM run (fine-tuning shown on the run page and
stored for later runs), an earlier run's final policy, or a stored warm start; and who may use which.
LM runs use a tiny model built in code (nothing downloaded) and a real sandbox and database."""

from __future__ import annotations

import json
from io import StringIO

import pytest
import torch
from django.core.management import call_command

from rl_core.checkpoint import load_checkpoint
from rl_core.run_spec import RunConfig
from rl_core.warmstart.folders import read_manifest
from webapp import storage
from webapp.runs import services
from webapp.runs.models import Run
from webapp.runs.warmstarts import warm_start_check
from webapp.storage import models_dir
from workers.driver import build_policy

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def train(*args: str) -> dict:
    out = StringIO()
    call_command("train", *args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_an_lm_run_fine_tunes_on_demonstrations_first_then_learns_and_stores_its_warm_start(
    iris, iris_tiny_model, data_dir
):
    summary = train(
        "iris-species", "--policy", "lm", "--model", iris_tiny_model, "--warm-start-demos", "2",
        "--attempts", "2", "--actors", "1", "--batch", "2", "--max-new-tokens", "800", "--seed-baseline",
    )  # fmt: skip
    run = Run.objects.get(id=summary["run_id"])
    assert (run.status, run.attempts_done, run.learner_steps.count()) == (Run.Status.FINISHED, 2, 1)
    progress = run.warm_start_progress
    assert (progress["status"], progress["adapter"]) == ("done", f"run-{run.id}")
    assert progress["step"] == progress["total"] == len(progress["losses"]) > 0
    manifest = read_manifest(data_dir / "adapters" / f"run-{run.id}")
    assert (manifest["competitions"], manifest["base_model"]) == (["iris-species"], iris_tiny_model)
    assert "charts/tokens_per_s" in run.learner_steps.get().metrics
    assert {a.prompt_kind for a in run.attempts.all()} <= {"solve", "improve"}


def test_a_later_lm_run_starts_from_a_stored_warm_start_by_name(iris, iris_tiny_model, data_dir):
    first = train(
        "iris-species", "--policy", "lm", "--model", iris_tiny_model, "--warm-start-demos", "1",
        "--attempts", "1", "--actors", "1", "--batch", "1", "--max-new-tokens", "800",
    )  # fmt: skip
    name = f"run-{first['run_id']}"
    second = train("iris-species", "--policy", "lm", "--warm-start", name, "--attempts", "1", "--batch", "1",
                   "--max-new-tokens", "800")  # fmt: skip
    run = Run.objects.get(id=second["run_id"])
    assert (run.config["warm_start"], run.config["model"], run.status) == (
        name,
        iris_tiny_model,
        Run.Status.FINISHED,
    )
    assert run.warm_start_progress == {}  # nothing fine-tuned again


def test_a_run_started_from_an_earlier_run_begins_with_its_final_policy(iris):
    earlier = train("iris-species", "--attempts", "4", "--actors", "2", "--batch", "2", "--seed", "1")
    config = RunConfig(warm_start=f"run:{earlier['run_id']}")
    run = services.run_admit_create(owner=None, competitions=[iris], config=config.to_dict())
    assert run.warm_start_from_id == earlier["run_id"]
    policy = build_policy(config, models_dir())
    final = load_checkpoint(storage.run_checkpoints(earlier["run_id"]))
    weights = {k: v for k, v in policy.state_dict().items() if k != "policy_version"}
    fresh = build_policy(RunConfig(), models_dir()).state_dict()
    assert policy.version == 0  # a new run counts its own updates
    assert all(torch.equal(value, final["policy"][name]) for name, value in weights.items())
    assert not all(torch.equal(value, fresh[name]) for name, value in weights.items())


def test_a_warm_start_from_a_run_the_owner_cannot_see_or_that_does_not_fit_is_refused(iris, owner, stranger):
    private = services.run_create(owner=stranger, competitions=[iris], policy="grammar", config={})
    lm_run = services.run_create(owner=owner, competitions=[iris], policy="lm", config={"policy": "lm"})
    fresh = services.run_create(owner=owner, competitions=[iris], policy="grammar", config={})
    cases = [
        (RunConfig(warm_start=f"run:{private.id}"), "which does not exist or is not yours"),
        (
            RunConfig(warm_start=f"run:{lm_run.id}"),
            "trained a lm policy on 'smollm2-135m'; this run needs the same",
        ),
        (RunConfig(warm_start=f"run:{fresh.id}"), "has no checkpoint to start from yet"),
        (RunConfig(policy="lm", imitate_runs=(private.id,)), f"imitate_runs names run {private.id}"),
    ]
    for config, message in cases:
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            warm_start_check(config=config, owner=owner)


def test_a_stored_warm_start_learned_from_a_competition_the_owner_cannot_see_is_refused(
    iris, owner, stranger, data_dir
):
    folder = data_dir / "adapters" / "secret"
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}")
    manifest = {"kind": "lora", "base_model": "smollm2-135m", "competitions": ["someone-elses-private-data"]}
    (folder / "warmstart.json").write_text(json.dumps(manifest))
    config = RunConfig(policy="lm", warm_start="secret")
    with pytest.raises(ValueError, match="is not a warm start you may use"):
        warm_start_check(config=config, owner=stranger)
    with pytest.raises(ValueError, match="is not a warm start you may use"):  # a server path, for a user
        warm_start_check(config=RunConfig(policy="lm", warm_start=str(folder)), owner=owner)
    assert warm_start_check(config=config, owner=None) is None  # the operator may
