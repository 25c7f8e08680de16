"""Checkpoint files: atomic writes, finding the newest, pruning, and plain-data samples."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from rl_core.checkpoint import (
    experience_from_dict,
    experience_to_dict,
    load_checkpoint,
    sample_from_dict,
    sample_to_dict,
    save_checkpoint,
    warm_start,
)
from rl_core.checkpoint_files import latest_checkpoint, list_checkpoints
from rl_core.policies.table import TablePolicy
from rl_core.policy import (
    ChoiceAction,
    Experience,
    PreviousSolution,
    Prompt,
    Sample,
    TaskInfo,
    TokenAction,
)

TASK = TaskInfo("comp", "a task", "rmse", False, "id", ("y",), 60.0, features={"rows": 100})


@pytest.fixture
def directory(tmp_path):
    return tmp_path / "checkpoints"


def improve_sample() -> Sample:
    previous = PreviousSolution("print(1)", "1\n", 0.25, attempt_id="0-17")
    prompt = Prompt(task=TASK, kind="improve", previous=previous)
    return Sample(
        prompt, "Plan.\n```python\nprint(2)\n```\n", (-0.5, -1.25), 3, {"family": "knn", "k": [1, 2]}
    )


def test_the_newest_checkpoint_is_the_one_with_the_most_updates(directory):
    save_checkpoint(directory, 9, {"x": 1})
    save_checkpoint(directory, 10, {"x": 2})
    assert latest_checkpoint(directory).name == "checkpoint-00000010.pt"
    assert load_checkpoint(directory) == {"x": 2}


def test_only_the_newest_checkpoints_are_kept(directory):
    for update in range(1, 6):
        save_checkpoint(directory, update, {"x": update}, keep=2)
    assert [p.name for p in list_checkpoints(directory)] == [
        "checkpoint-00000004.pt",
        "checkpoint-00000005.pt",
    ]


def test_a_failed_write_leaves_the_previous_checkpoint_and_no_temporary_file(directory):
    save_checkpoint(directory, 1, {"x": 1})
    with pytest.raises(Exception):  # noqa: B017 - whatever pickling raises for a lambda
        save_checkpoint(directory, 2, {"x": lambda: None})
    assert [p.name for p in directory.iterdir()] == ["checkpoint-00000001.pt"]


def test_there_is_no_checkpoint_in_a_missing_or_empty_directory(directory):
    assert latest_checkpoint(directory) is None
    directory.mkdir()
    with pytest.raises(FileNotFoundError, match="No checkpoint"):
        load_checkpoint(directory)


def test_a_sample_survives_a_checkpoint_round_trip(directory):
    save_checkpoint(directory, 1, {"sample": sample_to_dict(improve_sample()), "t": torch.ones(2)})
    loaded = load_checkpoint(directory)  # weights_only: plain data and tensors only
    assert sample_from_dict(loaded["sample"], {"comp": TASK}) == improve_sample()


@pytest.mark.parametrize(
    "action",
    [
        TokenAction((5, 17, 2)),
        ChoiceAction(choices={"family": "knn", "knn.k": 5}, drawn=("knn.k",), excluded={"knn.k": 15}),
    ],
)
def test_a_sample_keeps_its_action_through_a_checkpoint_file(directory, action):
    sample = replace(improve_sample(), action=action)
    save_checkpoint(directory, 1, {"sample": sample_to_dict(sample)})
    assert sample_from_dict(load_checkpoint(directory)["sample"], {"comp": TASK}).action == action


@pytest.mark.parametrize(
    ("info", "action"),
    [
        ({"response_ids": [5, 17, 2], "stop": "eos"}, TokenAction((5, 17, 2))),
        (
            {"family": "knn", "choices": {"family": "knn", "knn.k": 5}, "drawn": ["knn.k"], "mutated": []},
            ChoiceAction(choices={"family": "knn", "knn.k": 5}, drawn=("knn.k",)),
        ),
        ({"family": "knn"}, None),
    ],
)
def test_a_sample_saved_before_samples_had_an_action_reads_it_from_its_info(info, action):
    saved = sample_to_dict(replace(improve_sample(), info=info))
    del saved["action"]  # the form checkpoints had before
    loaded = sample_from_dict(saved, {"comp": TASK})
    assert (loaded.action, loaded.info) == (action, info)


def test_an_improve_samples_previous_solution_keeps_the_attempt_it_came_from(directory):
    save_checkpoint(directory, 1, {"sample": sample_to_dict(improve_sample())})
    loaded = sample_from_dict(load_checkpoint(directory)["sample"], {"comp": TASK})
    assert loaded.prompt.previous is not None and loaded.prompt.previous.attempt_id == "0-17"


def test_a_previous_solution_saved_before_entries_named_their_attempt_loads_with_no_attempt():
    saved = sample_to_dict(improve_sample())
    del saved["previous"]["attempt_id"]  # the form checkpoints had before
    previous = sample_from_dict(saved, {"comp": TASK}).prompt.previous
    assert previous == PreviousSolution("print(1)", "1\n", 0.25, attempt_id="")


def test_an_experience_survives_the_plain_data_round_trip():
    experience = Experience(improve_sample(), -9.7, 12.5, False)
    assert experience_from_dict(experience_to_dict(experience), {"comp": TASK}) == experience


def test_a_warm_start_takes_the_policy_parameters_of_another_run(directory):
    trained = TablePolicy(["a", "b"], init_logits=[1.5, -0.5])
    save_checkpoint(directory, 4, {"policy": trained.state_dict(), "learner": {}, "loop": {}})
    fresh = TablePolicy(["a", "b"])
    warm_start(fresh, directory)
    assert torch.equal(fresh.logits, trained.logits)
    assert fresh.version == 0
