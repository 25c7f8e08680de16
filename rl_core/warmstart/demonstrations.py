"""Demonstrations for a warm start: (prompt, response) pairs written as LMPolicy is asked to write them.

A demonstration's prompt is an `rl_core.policy.Prompt` (solve, or improve with an earlier valid solution);
its response is a plan paragraph, a blank line, then one ```python block, ending at the closing fence,
which is where LMPolicy's sampler stops (`format_response`). Two sources:

- grammar (`grammar_demonstrations`): programs the GrammarPolicy renders for the target competitions.
  Solve prompts are answered by fresh programs drawn from a GrammarPolicy (uniform over the grammar at
  its initial parameters, so families and settings vary). Improve prompts show an earlier valid program
  for the same task with its real output and score (run beforehand: `grammar_pool_responses` gives the
  programs to run, `rl_core.seed_programs.previous_solutions` runs them) and are answered by the
  GrammarPolicy's improve response: the same program with one or two choices changed, in full.
- imitation (`imitation_demonstrations`): the best valid attempts of earlier runs (`PastAttempt`). Each
  answers a solve prompt; each but a task's worst also answers an improve prompt that shows the next
  worse one (so the response is always the better program).

Nothing is run or checked here: grammar programs are valid by construction as far as the grammar is, and
earlier attempts are valid by their record. Pure: no files, no model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from rl_core.policies.grammar import GrammarPolicy, simplest_program
from rl_core.policy import PreviousSolution, Prompt, TaskInfo
from rl_core.prompts import PromptStyle, strip_comments
from rl_core.responses import parse_response

GRAMMAR_SOURCE = "grammar"
"""`Demonstration.source` of GrammarPolicy programs; an earlier run's attempts say f"run:{id}"."""


@dataclass(frozen=True)
class Demonstration:
    """One supervised example: the response LMPolicy should write for the prompt."""

    prompt: Prompt
    response: str  # a plan paragraph, then one ```python block, ending at its closing fence
    source: str  # GRAMMAR_SOURCE, or f"run:{run_id}" for an earlier run's attempt


@dataclass(frozen=True)
class PastAttempt:
    """A valid attempt of an earlier run, as self-imitation needs it."""

    task: TaskInfo
    response: str  # the attempt's response (or just its program)
    output: str  # the tail of its stdout, shown when it is the earlier solution of an improve prompt
    score: float
    source: str  # e.g. "run:12"


def format_response(plan: str, code: str) -> str:
    """The canonical response: the plan, a blank line, then the program in one ```python block.

    >>> format_response("Fit a model.", "print(1)\\n")
    'Fit a model.\\n\\n```python\\nprint(1)\\n```'
    """
    block = f"```python\n{code.rstrip()}\n```"
    return f"{plan.strip()}\n\n{block}" if plan.strip() else block


def canonical_response(text: str, *, style: PromptStyle = "full") -> str | None:
    """`text` rewritten by `format_response` (for the compact style: `compact_response`), or None when it
    does not hold exactly one Python block."""
    parsed = parse_response(text)
    if parsed.code is None:
        return None
    if style == "compact":
        return compact_response(parsed.plan, parsed.code)
    return format_response(parsed.plan, parsed.code)


def compact_response(plan: str, code: str) -> str:
    """A response for the compact prompt style: the plan's sentence about the program (or its first
    sentence), then the program without comments or blank lines (the same program: `ast.unparse`).

    >>> compact_response("Plan: a task. The program fits a tree. Done.", "x = 1  # one\\n")
    'The program fits a tree.\\n\\n```python\\nx = 1\\n```'
    """
    sentences = [s.strip() for s in plan.replace("\n", " ").split(". ") if s.strip()]
    chosen = next((s for s in sentences if s.startswith("The program")), sentences[0] if sentences else "")
    chosen = chosen if not chosen or chosen.endswith(".") else chosen + "."
    return format_response(chosen, strip_comments(code))


def split_count(count: int, parts: int) -> list[int]:
    """`count` split into `parts` near-equal shares, the larger ones first.

    >>> split_count(7, 3)
    [3, 2, 2]
    """
    return [count // parts + (1 if index < count % parts else 0) for index in range(parts)]


def grammar_pool_responses(
    tasks: Sequence[TaskInfo], per_task: int, *, seed: int = 0
) -> dict[str, list[str]]:
    """Programs to run as earlier solutions of improve demonstrations: per task, the simplest program and
    `per_task` - 1 GrammarPolicy programs. slug -> responses."""
    generator = torch.Generator().manual_seed(seed)
    policy = GrammarPolicy()
    pools = {}
    for task in tasks:
        drawn = policy.sample([Prompt(task=task, kind="solve")] * max(per_task - 1, 0), generator=generator)
        pools[task.slug] = [simplest_program(task), *(sample.response for sample in drawn)]
    return pools


def grammar_demonstrations(
    tasks: Sequence[TaskInfo],
    count: int,
    *,
    pools: Mapping[str, Sequence[PreviousSolution]] | None = None,
    improve_share: float = 0.5,
    seed: int = 0,
    style: PromptStyle = "full",
) -> list[Demonstration]:
    """`count` GrammarPolicy demonstrations, split evenly over `tasks` (their `features` must be filled).

    Args:
        pools: slug -> valid earlier grammar programs with their output and score. A task with a pool gets
            round(share x improve_share) improve demonstrations, the earlier solutions taken in turn; a
            task without one gets only solve demonstrations.
        seed: seeds the GrammarPolicy's draws (the same arguments give the same demonstrations).
        style: the prompt style the LM will be asked in; compact responses drop comments and most of the
            plan (`compact_response`).
    Returns:
        Per task, its solve demonstrations, then its improve demonstrations.
    """
    generator = torch.Generator().manual_seed(seed)
    policy = GrammarPolicy()
    demonstrations: list[Demonstration] = []
    for task, share in zip(tasks, split_count(count, len(tasks)), strict=True):
        earlier = list((pools or {}).get(task.slug, ()))
        improves = round(share * improve_share) if earlier else 0
        prompts = [Prompt(task=task, kind="solve")] * (share - improves)
        prompts += [
            Prompt(task=task, kind="improve", previous=earlier[i % len(earlier)]) for i in range(improves)
        ]
        for sample in policy.sample(prompts, generator=generator):
            response = canonical_response(sample.response, style=style)
            if response is not None:
                demonstrations.append(Demonstration(sample.prompt, response, GRAMMAR_SOURCE))
    return demonstrations


def imitation_demonstrations(
    attempts: Sequence[PastAttempt], *, improve: bool = True, style: PromptStyle = "full"
) -> list[Demonstration]:
    """Demonstrations from earlier runs' valid attempts: a solve prompt for each distinct program, and with
    `improve`, an improve prompt per program but the worst of its task, showing the next worse program.
    Responses are written in `style`, as `grammar_demonstrations` writes them (`canonical_response`).

    Attempts whose response holds no single Python block are skipped; of several attempts with the same
    program, the best-scoring one is kept. Returns, per task in order of first appearance, best first.
    """
    by_task: dict[str, list[PastAttempt]] = {}
    for attempt in attempts:
        by_task.setdefault(attempt.task.slug, []).append(attempt)
    demonstrations: list[Demonstration] = []
    for group in by_task.values():
        ranked = _distinct_best_first(group, style)
        for index, (attempt, response, _) in enumerate(ranked):
            demonstrations.append(
                Demonstration(Prompt(task=attempt.task, kind="solve"), response, attempt.source)
            )
            if improve and index + 1 < len(ranked):
                worse, _, worse_code = ranked[index + 1]
                previous = PreviousSolution(worse_code, worse.output, worse.score)
                prompt = Prompt(task=attempt.task, kind="improve", previous=previous)
                demonstrations.append(Demonstration(prompt, response, attempt.source))
    return demonstrations


def _distinct_best_first(
    attempts: Sequence[PastAttempt], style: PromptStyle
) -> list[tuple[PastAttempt, str, str]]:
    """(attempt, response in `style`, code) for one task's attempts: distinct programs, best score first."""
    ordered = sorted(attempts, key=lambda a: a.score, reverse=attempts[0].task.higher_is_better)
    ranked, seen = [], set()
    for attempt in ordered:
        parsed = parse_response(attempt.response)
        if parsed.code is None or parsed.code in seen:
            continue
        seen.add(parsed.code)
        response = canonical_response(attempt.response, style=style)
        if response is not None:
            ranked.append((attempt, response, parsed.code))
    return ranked
