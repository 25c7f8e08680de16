"""`manage.py execute SLUG PROGRAM.py [--timeout S] [--memory-mb M] [--no-instrument]
[--instrumenter ast|lm] [--model NAME_OR_PATH]`

Runs one program against a competition exactly as an agent's attempt runs (instrumented, sandboxed,
graded, rewarded) and prints the report of DESIGN.md §7: {"status", "exit_code", "duration_s", "stages",
"valid", "score", "reward", "isolation", "stdout_tail", "stderr_tail"}, plus "instrumentation" (how the
markers were inserted). `--instrumenter lm` lets a frozen causal LM insert the markers, as the paper did
(the embedded SmolLM2 unless `--model` names another); its version is kept only when, without the markers,
it is the same program, else the AST instrumenter's is used ("instrumentation": "lm-fallback";
rl_core.instrument.lm_instrument). The scratch
directory is kept under PRACTICUM_DATA_DIR/scratch/ for inspection.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from django.conf import settings

from webapp.cli import BadInput, JsonCommand
from webapp.competitions import selectors


class Command(JsonCommand):
    help = "Run one program in the sandbox against a competition and grade it."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("program", type=Path)
        parser.add_argument("--timeout", type=float, help="seconds (default: the competition's time limit)")
        parser.add_argument("--memory-mb", type=int, help="MB (default: the competition's limit)")
        parser.add_argument("--no-instrument", action="store_true", help="run without progress markers")
        parser.add_argument("--instrumenter", choices=["ast", "lm"], default="ast", help="who inserts them")
        parser.add_argument(
            "--model", default=None, help="--instrumenter lm: the frozen LM (default: embedded)"
        )

    def run(self, *, slug, program, timeout, memory_mb, no_instrument, instrumenter, model, **_):
        from rl_core.environment import run_program
        from webapp.competitions.agent_inputs import competition_task_files

        competition = selectors.competition_get(slug=slug)
        if competition is None:
            raise BadInput(f"SLUG: no competition called {slug!r}.")
        if not program.is_file():
            raise BadInput(f"PROGRAM: no such file {program}.")
        if timeout is not None and timeout <= 0:
            raise BadInput(f"--timeout: must be positive, not {timeout}.")
        if memory_mb is not None and memory_mb <= 0:
            raise BadInput(f"--memory-mb: must be positive, not {memory_mb}.")
        try:
            source = program.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise BadInput(f"PROGRAM: {program} is not UTF-8 text.") from None
        generate = frozen_lm(model) if instrumenter == "lm" and not no_instrument else None
        work_dir = Path(settings.DATA_DIR) / "scratch" / f"execute-{uuid.uuid4().hex[:12]}"
        work_dir.mkdir(parents=True)
        outcome = run_program(
            source,
            competition_task_files(competition=competition),
            work_dir,
            instrument=not no_instrument,
            timeout_s=timeout,
            memory_mb=memory_mb,
            lm_generate=generate,
        )
        self.progress(f"Scratch directory: {work_dir}")
        return outcome.to_report() | {"instrumentation": outcome.instrumentation}


def frozen_lm(model: str | None):
    """prompt -> the frozen model's greedy reply (LMPolicy.generate_frozen, adapters off)."""
    from rl_core.policies.lm.config import LMPolicyConfig
    from rl_core.policies.lm.policy import LMPolicy
    from rl_core.policies.lm.weights import EMBEDDED_MODEL, ModelNotFoundError
    from webapp.storage import models_dir

    try:
        policy = LMPolicy(LMPolicyConfig(model=model or EMBEDDED_MODEL, cache_dir=str(models_dir())))
    except (ModelNotFoundError, OSError) as error:
        raise BadInput(f"--model: {error}") from None

    def generate(prompt: str) -> str:  # the reply is the program plus markers: shorter than the prompt
        limit = len(policy.tokenizer(prompt, add_special_tokens=False)["input_ids"]) + 64
        return policy.generate_frozen(prompt, max_new_tokens=limit)

    return generate
