"""bench/gpu_lm.py without CUDA (it says so in one line and exits 0), and the size of its default model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.skipif(torch.cuda.is_available(), reason="with CUDA the script measures for minutes")
def test_without_cuda_it_prints_one_line_saying_so_and_exits_zero(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCH / "gpu_lm.py"), "--json", str(tmp_path / "out.json")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["gpu_lm: no CUDA device on this machine; nothing measured (this "
                                          "benchmark needs one GPU)."]  # fmt: skip
    assert not (tmp_path / "out.json").exists()


def test_the_default_model_is_about_half_a_billion_parameters():
    sys.path.insert(0, str(BENCH))
    try:
        import gpu_lm
    finally:
        sys.path.remove(str(BENCH))
    from rl_core.testing import tiny_tokenizer

    config = gpu_lm.model_config(0.5e9, tiny_tokenizer())
    assert config.num_hidden_layers == 24
    assert 0.45e9 < gpu_lm.count_parameters(config) < 0.55e9
