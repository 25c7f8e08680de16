"""GrammarPolicy: sampling, scoring, masking, improve mutations, state, and programs that really run."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from rl_core.features import task_features
from rl_core.grading import GradingSpec, grade_submission
from rl_core.metrics import get_metric
from rl_core.policies.grammar import GrammarPolicy, simplest_program
from rl_core.policies.grammar_space import FAMILIES, HEAD_BY_NAME, HEADS, is_active, parse_choices
from rl_core.policy import PreviousSolution, Prompt, TaskInfo

WORDS = ["good", "bad", "great", "awful", "fine", "meh", "superb", "poor", "odd", "plain"]
N_TRAIN, N_TEST = 60, 20


def _inputs(n: int, rng: np.random.Generator, first_id: int) -> pd.DataFrame:
    age = rng.normal(40, 10, size=n)
    age[rng.random(n) < 0.15] = np.nan
    colour = rng.choice(["red", "green", "blue"], size=n).astype(object)
    colour[rng.random(n) < 0.1] = None
    return pd.DataFrame(
        {
            "id": np.arange(first_id, first_id + n),
            "age": age,
            "height": rng.normal(170, 8, size=n),
            "colour": colour,
            "review": [" ".join(rng.choice(WORDS, size=8)) for _ in range(n)],
        }
    )


def _targets(kind: str, frame: pd.DataFrame) -> pd.DataFrame:
    """The target columns of `frame` for a task kind, as they appear in train.csv and answers.csv."""
    signal = np.nan_to_num(frame["age"].to_numpy(), nan=40.0) - 40 + 5 * (frame["colour"] == "red")
    if kind == "binary":
        return pd.DataFrame({"y": (signal > 0).astype(int)})
    if kind == "multiclass":
        species = np.array(["a", "b", "c"])[np.digitize(signal, [-5, 5])]
        return pd.DataFrame({"species": species})
    if kind == "regression":
        return pd.DataFrame({"price": np.abs(signal) + 1.0})
    if kind == "multi_target":
        return pd.DataFrame({"u": np.abs(signal), "v": frame["height"] / 100})
    return pd.DataFrame({"p": (signal > 0).astype(int), "q": (frame["height"] > 170).astype(int)})


SPECS = {  # kind -> (metric, target columns of the submission)
    "binary": ("roc_auc", ("y",)),
    "multiclass": ("log_loss", ("species_a", "species_b", "species_c")),
    "regression": ("rmsle", ("price",)),
    "multi_target": ("rmse", ("u", "v")),
    "multilabel": ("mean_columnwise_roc_auc", ("p", "q")),
}


def _answers(kind: str, test: pd.DataFrame) -> pd.DataFrame:
    targets = _targets(kind, test)
    if kind == "multiclass":
        targets = pd.get_dummies(targets["species"], prefix="species").astype(int)
    return pd.concat([test[["id"]], targets], axis=1)


def make_task(root: Path, kind: str, *, drop: tuple[str, ...] = ()) -> TaskInfo:
    """A tiny competition of `kind` under root/input, answers in root/answers.csv."""
    rng = np.random.default_rng(7)
    train, test = _inputs(N_TRAIN, rng, 0), _inputs(N_TEST, rng, 1000)
    (root / "input").mkdir(parents=True)
    (root / "submission").mkdir()
    pd.concat([train, _targets(kind, train)], axis=1).drop(columns=list(drop)).to_csv(
        root / "input" / "train.csv", index=False
    )
    test.drop(columns=list(drop)).to_csv(root / "input" / "test.csv", index=False)
    _answers(kind, test).to_csv(root / "answers.csv", index=False)
    metric, targets = SPECS[kind]
    found = task_features(root / "input", id_column="id", target_columns=targets, metric=metric)
    return TaskInfo(
        slug=f"tiny-{kind}",
        description="A tiny test task.",
        metric=metric,
        higher_is_better=get_metric(metric).higher_is_better,
        id_column="id",
        target_columns=targets,
        time_limit_s=60.0,
        features=found,
    )


@pytest.fixture
def task(tmp_path) -> TaskInfo:
    return make_task(tmp_path, "binary")


def _solve(task: TaskInfo, n: int = 1) -> list[Prompt]:
    return [Prompt(task=task, kind="solve")] * n


def _improve(task: TaskInfo, code: str) -> Prompt:
    return Prompt(task=task, kind="improve", previous=PreviousSolution(code=code, output="", score=0.5))


def _code(response: str) -> str:
    return response.split("```python\n", 1)[1].split("```", 1)[0]


def _seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_it_starts_at_version_zero():
    assert GrammarPolicy().version == 0


def test_sampling_is_deterministic_under_a_seeded_generator(task):
    first = GrammarPolicy().sample(_solve(task, 5), generator=_seeded(3))
    second = GrammarPolicy().sample(_solve(task, 5), generator=_seeded(3))
    assert [s.response for s in first] == [s.response for s in second]
    assert [s.logprobs for s in first] == [s.logprobs for s in second]


def test_samples_carry_one_logprob_per_drawn_head_and_the_family(task):
    sample = GrammarPolicy().sample(_solve(task), generator=_seeded())[0]
    assert len(sample.logprobs) == len(sample.action.drawn)
    assert sample.info["family"] == sample.info["choices"]["family"] in FAMILIES
    assert parse_choices(_code(sample.response)) == sample.info["choices"]


def test_sample_logprobs_equal_score_logprobs_under_the_same_parameters(task):
    policy = GrammarPolicy()
    with torch.no_grad():
        for head in HEADS:
            policy.layer(head.name).weight.normal_(generator=_seeded(1))
    solves = policy.sample(_solve(task, 6), generator=_seeded(2))
    improves = policy.sample([_improve(task, _code(s.response)) for s in solves], generator=_seeded(4))
    samples = solves + improves
    scored = policy.score(samples)
    for row, sample in enumerate(samples):
        n = len(sample.logprobs)
        assert scored.mask[row].sum() == n
        assert torch.allclose(scored.logprobs[row, :n], torch.tensor(sample.logprobs), atol=1e-5)


def test_score_reads_the_action_and_never_the_dashboard_info(task):
    policy = GrammarPolicy()
    with torch.no_grad():
        policy.layer("family").weight.normal_(generator=_seeded(1))
    sample = policy.sample(_solve(task), generator=_seeded(2))[0]
    blank = dataclasses.replace(sample, info={})
    assert torch.equal(policy.score([blank]).logprobs, policy.score([sample]).logprobs)
    with pytest.raises(ValueError, match="ChoiceAction"):
        policy.score([dataclasses.replace(sample, action=None)])


def test_a_gradient_step_on_one_sample_raises_its_probability(task):
    policy = GrammarPolicy()
    sample = policy.sample(_solve(task), generator=_seeded())[0]
    before = policy.score([sample]).logprobs.sum()
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.5)
    (-before).backward()
    optimizer.step()
    assert policy.score([sample]).logprobs.sum() > before.detach()


def test_inactive_heads_get_no_gradient(tmp_path):
    numeric_only = make_task(tmp_path, "binary", drop=("colour", "review"))
    policy = GrammarPolicy()
    samples = policy.sample(_solve(numeric_only, 8), generator=_seeded())
    policy.score(samples).logprobs.sum().backward()
    for name in ("encode", "text.analyzer", "text.max_features"):
        grad = policy.layer(name).weight.grad
        assert grad is not None and grad.abs().sum() == 0


def test_masked_heads_do_not_change_the_score(task):
    policy = GrammarPolicy()
    samples = policy.sample(_solve(task, 8), generator=_seeded())
    families = {s.info["family"] for s in samples}
    idle = next(f for f in FAMILIES if f not in families)
    before = policy.score(samples).logprobs
    with torch.no_grad():
        for head in HEADS:
            if head.family == idle:
                policy.layer(head.name).bias.add_(3.0)
    assert torch.equal(policy.score(samples).logprobs, before)


def test_scored_entries_past_a_sample_s_heads_are_masked_zeros(task):
    samples = GrammarPolicy().sample(_solve(task, 8), generator=_seeded())
    scored = GrammarPolicy().score(samples)
    assert scored.logprobs.shape == scored.mask.shape == (8, max(len(s.logprobs) for s in samples))
    assert bool((scored.logprobs[~scored.mask] == 0).all())


def test_a_uniform_policy_has_the_mean_log_option_count_as_entropy(task):
    sample = GrammarPolicy().sample(_solve(task), generator=_seeded())[0]
    sizes = [len(HEAD_BY_NAME[name].options) for name in sample.action.drawn]
    entropy = GrammarPolicy().score([sample]).entropy
    assert entropy.item() == pytest.approx(float(np.mean(np.log(sizes))), abs=1e-5)


def test_state_dict_round_trip_restores_scores_and_version(task):
    trained = GrammarPolicy()
    with torch.no_grad():
        for head in HEADS:
            trained.layer(head.name).bias.normal_(generator=_seeded(5))
    trained.version = 7
    samples = trained.sample(_solve(task, 4), generator=_seeded())
    restored = GrammarPolicy()
    restored.load_state_dict(trained.state_dict())
    assert restored.version == 7
    assert torch.equal(restored.score(samples).logprobs, trained.score(samples).logprobs)


def test_the_scale_head_is_inactive_for_tree_families(task):
    assert not is_active(HEAD_BY_NAME["scale"], {"family": "random_forest"}, task.features)
    assert is_active(HEAD_BY_NAME["scale"], {"family": "knn"}, task.features)


def test_an_improve_prompt_changes_a_few_choices_and_keeps_the_rest(task):
    policy = GrammarPolicy()
    previous = policy.sample(_solve(task), generator=_seeded())[0]
    improved = policy.sample([_improve(task, _code(previous.response))], generator=_seeded(1))[0]
    mutated = improved.info["mutated"]
    assert 1 <= len(mutated) <= policy.mutate_max_heads
    assert all(improved.info["choices"][h] != previous.info["choices"][h] for h in mutated)
    kept = [
        h
        for h in previous.info["choices"]
        if h not in improved.action.drawn and h in improved.info["choices"]
    ]
    assert all(improved.info["choices"][h] == previous.info["choices"][h] for h in kept)
    assert kept


def test_an_improve_prompt_on_code_without_grammar_choices_is_answered_as_a_solve(task):
    improved = GrammarPolicy().sample([_improve(task, "print('hello')")], generator=_seeded())[0]
    solved = GrammarPolicy().sample(_solve(task), generator=_seeded())[0]
    assert improved.info["mutated"] == []
    assert improved.response == solved.response


def test_the_simplest_program_is_median_imputation_one_hot_and_logistic_regression(task):
    code = _code(simplest_program(task))
    assert 'SimpleImputer(strategy="median")' in code
    assert "OneHotEncoder(" in code and "LogisticRegression(" in code
    assert (parse_choices(code) or {}).get("family") == "linear"


def test_the_simplest_regression_program_uses_ridge(tmp_path):
    assert "Ridge(" in _code(simplest_program(make_task(tmp_path, "regression")))


def test_rendering_rejects_a_missing_choice(task):
    choices = _varied_choices("lightgbm", task.features)
    del choices["lightgbm.num_leaves"]
    with pytest.raises(ValueError, match=r"lightgbm\.num_leaves"):
        GrammarPolicy().render(choices, task)


def test_a_task_without_features_is_rejected_with_its_name(task):
    bare = TaskInfo("bare", "", "roc_auc", True, "id", ("y",), 60.0)
    with pytest.raises(ValueError, match="bare"):
        GrammarPolicy().sample(_solve(bare), generator=_seeded())


def test_every_response_is_a_plan_then_one_python_block(task):
    for sample in GrammarPolicy().sample(_solve(task, 4), generator=_seeded()):
        plan, rest = sample.response.split("```python\n")
        assert plan.startswith("Plan: ") and len(plan) > 200
        assert rest.count("```") == 1


def _varied_choices(family: str, features: dict) -> dict:
    """Deterministic choices for `family` that spread every head's options across the families."""
    shift = FAMILIES.index(family)
    choices: dict = {"family": family}
    for position, head in enumerate(HEADS[1:], start=1):
        if is_active(head, choices, features):
            choices[head.name] = head.options[(shift + position) % len(head.options)]
    return choices


def _run(root: Path, code: str) -> subprocess.CompletedProcess:
    (root / "program.py").write_text(code)
    return subprocess.run(
        [sys.executable, "program.py"], cwd=root, capture_output=True, text=True, timeout=60, check=False
    )


RUN_CASES = [
    *((kind, family) for kind in ("binary", "multiclass", "regression") for family in FAMILIES),
    # Several outputs: the wrapped regressors, a native one, and the multilabel wrapper (same for all).
    *(("multi_target", family) for family in ("linear", "hist_gb", "lightgbm", "xgboost")),
    *(("multilabel", family) for family in ("linear", "xgboost")),
]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "family"), RUN_CASES)
def test_every_family_program_runs_and_writes_a_valid_submission(tmp_path, kind, family):
    task = make_task(tmp_path, kind)
    result = _run(tmp_path, _code(GrammarPolicy().render(_varied_choices(family, task.features), task)))
    assert result.returncode == 0, result.stderr[-2000:]
    submission = pd.read_csv(tmp_path / "submission" / "submission.csv")
    assert list(submission.columns) == ["id", *task.target_columns]
    assert len(submission) == N_TEST
    spec = GradingSpec(task.metric, "id", task.target_columns)
    grade = grade_submission(tmp_path / "submission" / "submission.csv", tmp_path / "answers.csv", spec)
    assert grade.valid, grade.error
