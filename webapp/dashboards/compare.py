"""The compare page's content for any number of runs: learning curves against three clocks, the
configuration fields that differ, and the best submissions side by side with a code diff."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from rl_core.metrics import is_better
from rl_core.run_spec import RunConfig, settings
from webapp.runs import selectors
from webapp.runs.models import Attempt, Run
from webapp.runs.payloads import run_summary

MAX_RUNS = 12
CURVE_POINTS = 1500


def parse_run_ids(raw: str) -> list[int]:
    """`?runs=1,2,3` as ids, in order, without repeats; anything that is not a number is ignored.

    >>> parse_run_ids("3, 1,x,3,,2")
    [3, 1, 2]
    """
    ids = [int(part) for part in raw.split(",") if part.strip().isdigit()]
    return list(dict.fromkeys(ids))


def split_at_limit(ids: list[int], limit: int = MAX_RUNS) -> tuple[list[int], list[int]]:
    """(the ids the page compares, the ones it leaves out and says so): at most `limit`, the first asked.

    >>> split_at_limit([5, 4, 3], limit=2)
    ([5, 4], [3])
    """
    return ids[:limit], ids[limit:]


def run_curve(run: Run) -> dict[str, Any]:
    """One run's curve points in finishing order, downsampled; the best score is a running best over all.

    Each point: finished (attempts finished so far: the x axis "attempts", so a line never runs backwards
    when attempts finish out of order), number (the attempt's own number), reward, best (best valid score so
    far), wall_s (since the run started), exec_s (executor-seconds used so far: the sum of Δt of the attempts
    finished up to then)."""
    summary = run_summary(run)
    higher = summary["higher_is_better"]
    rows = [
        a for a in selectors.run_attempt_rows(run=run) if a.finished_at and a.status != Attempt.Status.LOST
    ]
    rows.sort(key=lambda a: a.finished_at)
    t0 = run.started_at or (min(a.started_at for a in rows) if rows else None)
    points: list[dict[str, Any]] = []
    best, exec_s = None, 0.0
    for attempt in rows:
        exec_s += attempt.duration_s or 0.0
        scored = attempt.valid and attempt.score is not None
        if scored and (best is None or is_better(attempt.score, best, higher_is_better=higher)):
            best = attempt.score
        wall_s = (attempt.finished_at - t0).total_seconds()
        points.append(
            {
                "finished": len(points) + 1,
                "number": attempt.number,
                "reward": attempt.reward,
                "best": best,
                "wall_s": wall_s,
                "exec_s": exec_s,
            }
        )
    return {"id": run.id, "label": f"#{run.id} {run.name}", "higher_is_better": higher,
            "points": selectors.downsample(points, CURVE_POINTS)}  # fmt: skip


@dataclass(frozen=True)
class ConfigRow:
    field: str
    label: str
    values: list[Any]
    differs: bool


def config_rows(runs: list[Run], *, show_all: bool) -> list[ConfigRow]:
    """The runs' competitions, owners and settings side by side, settings in the run specification's order
    and words (rl_core.run_spec); only the rows that differ unless `show_all`. A setting a stored config
    lacks shows its default."""
    configs = [{**RunConfig().to_dict(), **run.config} for run in runs]
    extra = {
        "competitions": [", ".join(sorted(c.slug for c in run.competitions.all())) for run in runs],
        "owner": [run.owner.username if run.owner else "" for run in runs],
    }
    stored = sorted({name for config in configs for name in config} - set(settings()))
    rows = []
    for name in [*extra, *settings(), *stored]:
        values = extra[name] if name in extra else [config.get(name) for config in configs]
        differs = any(v != values[0] for v in values)
        if differs or show_all:
            label = settings()[name].label if name in settings() else name.replace("_", " ").capitalize()
            rows.append(ConfigRow(field=name, label=label, values=values, differs=differs))
    return rows


@dataclass(frozen=True)
class BestSubmission:
    run: Run
    attempt: Attempt | None
    diff_html: str
    """An HTML side-by-side diff of this best program against the first run's (empty for the first)."""


def best_submissions(runs: list[Run]) -> list[BestSubmission]:
    attempts = [run.best_attempt for run in runs]
    reference = attempts[0] if attempts else None
    return [
        BestSubmission(run=run, attempt=attempt, diff_html=code_diff_html(reference, attempt) if i else "")
        for i, (run, attempt) in enumerate(zip(runs, attempts, strict=True))
    ]


def code_diff_html(old: Attempt | None, new: Attempt | None) -> str:
    """A side-by-side HTML table (difflib.HtmlDiff, which escapes the code) of two programs, with context."""
    if old is None or new is None:
        return ""
    differ = difflib.HtmlDiff(tabsize=4, wrapcolumn=72)
    return differ.make_table(
        old.program.splitlines(), new.program.splitlines(),
        fromdesc=f"run #{old.run_id}, attempt {old.number}",
        todesc=f"run #{new.run_id}, attempt {new.number}",
        context=True, numlines=3,
    )  # fmt: skip
