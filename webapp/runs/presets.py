"""Named starting points for a run's settings: what the start form's preset buttons fill in and what the
demos run. Each preset's values are ones a benchmark measured (bench/async_vs_sync.py, bench/lm_valid_rate.py,
bench/lm_throughput.py); its description, shown on the page, says what was measured in words and names no
file. Every field a preset leaves out keeps RunConfig's default."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from rl_core.run_spec import RunConfig
from webapp.runs.warmstarts import WarmStartRequest


@dataclass(frozen=True)
class Preset:
    label: str
    description: str
    fields: MappingProxyType[str, Any]

    def __post_init__(self) -> None:
        RunConfig.from_dict(dict(self.fields))  # it names real settings with valid values, or fails here


GRAMMAR_QUICK = Preset(
    label="Grammar policy, quick",
    description="The grammar policy, 64 attempts, K = 2 in flight, an update every B = 8: a few minutes on "
    "2 CPU cores. Updating as attempts finish, rather than waiting for all B, keeps both sandboxes busy; it "
    "was faster in every measurement.",
    fields=MappingProxyType({"policy": "grammar", "attempts": 64, "actors": 2, "batch": 8, "sync": False}),
)
LM_WARM_START = Preset(
    label="LM from the warm start",
    description="SmolLM2-135M fine-tuned first on 48 grammar demonstrations (about 20 minutes on 2 CPU "
    "cores; about half its programs are then valid at temperature 0.3), compact prompts (about 300 tokens), "
    "K = 2 sandboxes fed by a sampler that writes 8 programs at a time while earlier ones run (measured: "
    "3.9 times the attempts per hour of writing one program whenever a sandbox frees up), one PPO update "
    "per B = 8 attempts, and a baseline program in the improve pool from the start.",
    fields=MappingProxyType({
        "policy": "lm", "prompt_style": "compact", "max_new_tokens": 1024, "temperature": 0.3, "actors": 2,
        "batch": 8, "sync": False, "lr": 1e-4, "seed_baseline": True, "attempts": 64,
        "warm_start_demos": WarmStartRequest.demonstrations,
    }),
)  # fmt: skip
PRESETS = {"grammar-quick": GRAMMAR_QUICK, "lm-warm-start": LM_WARM_START}
