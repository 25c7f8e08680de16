"""Fixtures for the run tests: the bundled iris competition, and a tiny LM that knows its prompts."""

from __future__ import annotations

import pytest

from rl_core.policy import Prompt
from rl_core.prompts import SYSTEM_PROMPT, build_messages
from rl_core.testing import save_tiny_llama
from rl_core.warmstart.demonstrations import grammar_pool_responses
from webapp.competitions.agent_inputs import competition_task_info
from webapp.competitions.management.commands.seed_competitions import seed_one


@pytest.fixture
def iris():
    """The bundled iris-species competition, seeded into the test database and data dir."""
    return seed_one("iris-species")


@pytest.fixture
def iris_tiny_model(tmp_path, iris) -> str:
    """A 2-layer Llama whose small BPE tokenizer was trained on iris prompts (both styles) and grammar
    programs, saved as a model folder: short token sequences keep LM runs fast."""
    task = competition_task_info(competition=iris)
    prompts = [build_messages(Prompt(task, "solve"), style=s)[1]["content"] for s in ("full", "compact")]
    corpus = [SYSTEM_PROMPT, *prompts, *grammar_pool_responses([task], 6)[task.slug]]
    return save_tiny_llama(tmp_path / "tiny-llama", corpus)
