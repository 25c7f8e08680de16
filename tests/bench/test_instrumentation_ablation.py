"""bench/instrumentation_ablation.py's LM-instrumenter arm, on a tiny LM built in code and a tiny task:
the arm runs the real loop and sandbox with the policy's frozen base as the instrumenter, and records per
attempt whose markers ran (the full benchmark, with SmolLM2, takes over an hour on a CPU)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from rl_core.environment import TaskFiles
from rl_core.features import task_features
from rl_core.grading import GradingSpec
from rl_core.policy import TaskInfo

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def bench():
    """bench/_lm.py and the ablation, imported as the benchmarks import each other (bench/ on sys.path)."""
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("_lm"), importlib.import_module("instrumentation_ablation")
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture
def tiny_task(tmp_path):
    public, private = tmp_path / "tiny" / "public", tmp_path / "tiny" / "private"
    public.mkdir(parents=True)
    private.mkdir()
    (public / "train.csv").write_text(
        "id,x,y\n" + "".join(f"{i},{i},{'yes' if i % 2 else 'no'}\n" for i in range(8))
    )
    (public / "test.csv").write_text("id,x\n" + "".join(f"{i},{i}\n" for i in range(8, 12)))
    (public / "sample_submission.csv").write_text("id,y\n" + "".join(f"{i},no\n" for i in range(8, 12)))
    (private / "answers.csv").write_text("id,y\n8,no\n9,yes\n10,no\n11,yes\n")
    files = TaskFiles(
        "tiny", public, private / "answers.csv", GradingSpec("accuracy", "id", ("y",)), 60, 2048, 0.5
    )
    features = task_features(public, id_column="id", target_columns=("y",), metric="accuracy")
    info = TaskInfo(
        "tiny",
        "Predict y.",
        "accuracy",
        True,
        "id",
        ("y",),
        60.0,
        files=("train.csv", "test.csv"),
        features=features,
    )
    return SimpleNamespace(files=files, info=info)


def test_the_ablation_has_an_lm_instrumenter_arm_beside_the_ast_and_uninstrumented_ones(bench):
    _, ablation = bench
    assert ablation.ARMS == {
        "instrumented": (True, "ast"), "lm_instrumented": (True, "lm"), "uninstrumented": (False, "ast"),
    }  # fmt: skip


@pytest.mark.slow
def test_the_lm_instrumenter_arm_records_whose_markers_each_attempt_ran(
    bench, tiny_task, monkeypatch, tmp_path
):
    from rl_core.policies.lm.config import LMPolicyConfig
    from rl_core.policies.lm.policy import LMPolicy
    from rl_core.testing import tiny_llama, tiny_tokenizer

    lm, ablation = bench
    monkeypatch.setattr(lm, "BENCH_DIR", tmp_path / "bench")
    tokenizer = tiny_tokenizer()
    config = LMPolicyConfig(max_new_tokens=8, lora_r=4, device="cpu", sampler="transformers")
    policy = LMPolicy(config, model=tiny_llama(tokenizer), tokenizer=tokenizer)
    settings = lm.LMSettings(batch=2)
    arm = lm.run_arm(
        "lm_instrumented",
        policy,
        [tiny_task],
        settings,
        attempts=2,
        learn=False,
        instrumenter="lm",
        preset="paper",
    )
    assert len(arm.records) == 2
    # A tiny random LM writes no program (nothing runs), or one whose markers fail the AST check.
    assert set(ablation.instrumenter_share([arm])) <= {"none", "lm-fallback"}
    assert all(
        r.instrumentation == ("none" if r.status == "parse_error" else "lm-fallback") for r in arm.records
    )
