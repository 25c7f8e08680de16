"""The compare page's content for any number of runs: learning curves against three clocks, one best-score
chart per metric (scores on different metrics never share an axis) and one reward chart per reward scale,
the configuration fields that differ, and the best submissions side by side with a code diff."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rl_core import studies as stats
from rl_core.metrics import get_metric, is_better
from rl_core.run_spec import RunConfig, settings
from webapp.dashboards.code_diff import diff_table_html
from webapp.runs import selectors
from webapp.runs.models import Attempt, Run
from webapp.runs.study_reads import seed_arm

MAX_RUNS = 12
CURVE_POINTS = 1500
POLL_S = 3
"""How often the page asks for fresh curves while a compared run is queued or running."""
GROUP_SMOOTHING = 0.6
"""The exponential moving average each run's reward gets before a group's mean and band (as on a study's
page by default)."""
NOT_GROUPED = ("seed", "owner")
"""What may differ inside a group: runs that differ only in these repeat one configuration."""


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


def unseen_ids(asked: list[int], shown: list[int]) -> list[int]:
    """The ids asked for that the page does not show: no such run, or one the user may not see. The page
    names them without saying which of the two, so it does not reveal that a private run exists.

    >>> unseen_ids([4, 2, 9], shown=[2])
    [4, 9]
    """
    return [i for i in asked if i not in set(shown)]


def run_metrics(run: Run) -> list[str]:
    """The metrics of the run's competitions, without repeats (a run on several competitions may have
    several), in the order of their competitions' slugs."""
    competitions = sorted(run.competitions.all(), key=lambda c: c.slug)
    return list(dict.fromkeys(c.metric for c in competitions))


def run_curve(run: Run) -> dict[str, Any]:
    """One run's curve points in finishing order, downsampled, and whether the run is still active.

    Each point: finished (attempts finished so far: the x axis "attempts", so a line never runs backwards
    when attempts finish out of order), number (the attempt's own number), reward, best ({metric: best valid
    score so far on that metric's competitions}, each by its metric's direction), wall_s (since the run
    started), exec_s (executor-seconds used so far: the sum of Δt of the attempts finished up to then)."""
    metric_of = {c.id: c.metric for c in run.competitions.all()}
    rows = [
        a for a in selectors.run_attempt_rows(run=run) if a.finished_at and a.status != Attempt.Status.LOST
    ]
    rows.sort(key=lambda a: a.finished_at)
    t0 = run.started_at or (min(a.started_at for a in rows) if rows else None)
    points: list[dict[str, Any]] = []
    best: dict[str, float] = {}
    exec_s = 0.0
    for attempt in rows:
        exec_s += attempt.duration_s or 0.0
        if attempt.valid and attempt.score is not None:
            keep_best(best, metric_of.get(attempt.competition_id), attempt.score)
        wall_s = (attempt.finished_at - t0).total_seconds()
        points.append(
            {"finished": len(points) + 1, "number": attempt.number, "reward": attempt.reward,
             "best": dict(best), "wall_s": wall_s, "exec_s": exec_s}
        )  # fmt: skip
    return {"id": run.id, "label": f"#{run.id} {run.name}", "status": run.status, "active": run.is_active,
            "points": selectors.downsample(points, CURVE_POINTS)}  # fmt: skip


def keep_best(best: dict[str, float], metric: str | None, score: float) -> None:
    """Record `score` in `best` under its metric when it beats the best so far in that metric's direction."""
    if metric is None:
        return
    higher = get_metric(metric).higher_is_better
    if metric not in best or is_better(score, best[metric], higher_is_better=higher):
        best[metric] = score


@dataclass(frozen=True)
class ChartGroup:
    """One chart of the compare page and the runs drawn on it."""

    dom_id: str
    title: str
    axis: str
    """The y axis title."""
    note: str
    """A sentence under the title saying what the values mean."""
    run_ids: list[int]
    metric: str = ""
    """For a best-score chart: the metric whose best each run's line follows."""


def metric_axis(name: str) -> str:
    """The y axis title of a best-score chart: the metric and its direction.

    >>> metric_axis("rmsle")
    'rmsle (lower is better)'
    """
    return f"{name} ({direction(name)} is better)"


def direction(metric: str) -> str:
    """Which scores the metric prefers: "higher" or "lower"."""
    return "higher" if get_metric(metric).higher_is_better else "lower"


def best_score_groups(metrics_by_run: dict[int, list[str]]) -> list[ChartGroup]:
    """One best-score chart per metric, metrics in the order the runs bring them, each with the runs scored
    by it (a run on competitions with two metrics is on both charts).

    >>> [(g.metric, g.run_ids) for g in best_score_groups({1: ["r2"], 2: ["roc_auc"], 3: ["r2"]})]
    [('r2', [1, 3]), ('roc_auc', [2])]
    """
    metrics = list(dict.fromkeys(m for names in metrics_by_run.values() for m in names))
    return [
        best_score_group(metric, [i for i, names in metrics_by_run.items() if metric in names])
        for metric in metrics
    ]


def best_score_group(metric: str, run_ids: list[int]) -> ChartGroup:
    return ChartGroup(
        dom_id=f"chart-best-{metric}", title=f"Best score: {metric}", axis=metric_axis(metric),
        note=f"{direction(metric).capitalize()} is better; each line is a run's best valid score so far.",
        run_ids=run_ids, metric=metric,
    )  # fmt: skip


def metric_note(metrics: list[str]) -> str:
    """The page's sentence when the runs are scored by more than one metric, else "".

    >>> metric_note(["r2"]), metric_note(["r2", "roc_auc"])[:50]
    ('', 'These runs are scored by 2 metrics (r2, roc_auc): ')
    """
    if len(metrics) < 2:
        return ""
    return (
        f"These runs are scored by {len(metrics)} metrics ({', '.join(metrics)}): each has its own "
        "best-score chart, because scores on different metrics cannot share an axis."
    )


def reward_scale(config: dict[str, Any], metrics: list[str]) -> str:
    """What a run's rewards are measured on (rl_core.reward): "normalized" (0 the sample submission, 1 a
    perfect score, whatever the metric) or, for the paper's preset, the raw score of its metrics.

    >>> reward_scale({}, ["r2"]), reward_scale({"reward_preset": "paper"}, ["r2", "rmse"])
    ('normalized', 'paper: r2, rmse')
    """
    preset = config.get("reward_preset", RunConfig().reward_preset)
    return "normalized" if preset == "normalized" else f"paper: {', '.join(metrics)}"


def reward_groups(scales_by_run: dict[int, str]) -> list[ChartGroup]:
    """One reward chart per reward scale: every normalized run shares one, paper-preset runs share one only
    with runs on the same metrics.

    >>> [g.run_ids for g in reward_groups({1: "normalized", 2: "paper: r2", 3: "normalized"})]
    [[1, 3], [2]]
    """
    scales = list(dict.fromkeys(scales_by_run.values()))
    return [
        reward_group(i, scale, [run_id for run_id, s in scales_by_run.items() if s == scale])
        for i, scale in enumerate(scales, start=1)
    ]


def reward_group(index: int, scale: str, run_ids: list[int]) -> ChartGroup:
    return ChartGroup(
        dom_id=f"chart-reward-{index}", title="Reward (rolling mean of 10)",
        axis="reward" if scale == "normalized" else f"reward ({scale})",
        note=REWARD_NOTES[scale.split(":")[0]], run_ids=run_ids,
    )  # fmt: skip


REWARD_NOTES = {
    "normalized": "Normalized reward: 0 is the competition's sample submission, 1 a perfect score, -1 a "
    "failure, plus the credit for each stage reached; the same scale on every competition and metric.",
    "paper": "The paper's reward: the raw signed score, -10 for a failure, plus the stage credit; comparable "
    "only between runs scored by the same metric.",
}


def chart_groups(runs: list[Run]) -> dict[str, list[dict[str, Any]]]:
    """The page's charts: {"best": one per metric, "reward": one per reward scale}, as plain dicts."""
    metrics = {run.id: run_metrics(run) for run in runs}
    scales = {run.id: reward_scale(run.config, metrics[run.id]) for run in runs}
    return {
        "best": [asdict(g) for g in best_score_groups(metrics)],
        "reward": [asdict(g) for g in reward_groups(scales)],
    }


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
    """A side-by-side HTML table of two programs (webapp.dashboards.code_diff, which escapes the code)."""
    if old is None or new is None:
        return ""
    return diff_table_html(
        old.program, new.program,
        old_title=f"run #{old.run_id}, attempt {old.number}",
        new_title=f"run #{new.run_id}, attempt {new.number}",
    )  # fmt: skip


def best_numbers(run: Run) -> dict[str, Any]:
    """The numbers of a run's best submission the page refreshes live: attempt number, score, reward, Δt."""
    attempt = run.best_attempt
    if attempt is None:
        return {"id": run.id, "attempt": None}
    return {"id": run.id, "attempt": attempt.number, "score": attempt.score, "reward": attempt.reward,
            "duration_s": attempt.duration_s}  # fmt: skip


def live_payload(runs: list[Run], *, grouped: bool = False) -> dict[str, Any]:
    """What the page polls for while a run is active: every curve, and the best submissions' numbers; with
    `grouped`, each settings group's reward band too."""
    payload = {"curves": [run_curve(run) for run in runs], "best": [best_numbers(run) for run in runs]}
    return payload | ({"groups": settings_groups(runs)} if grouped else {})


def settings_groups(runs: list[Run]) -> list[dict[str, Any]]:
    """The runs grouped by the settings (and competitions) that differ between them, but the seed: each
    group's label, its runs, and its mean reward against attempts with a 95% band across its runs
    (rl_core.studies, as a study's page draws its arms), each run smoothed by GROUP_SMOOTHING first."""
    rows = [row for row in config_rows(runs, show_all=False) if row.field not in NOT_GROUPED]
    members: dict[str, list[Run]] = {}
    for i, run in enumerate(runs):
        label = ", ".join(f"{row.label}: {row.values[i]}" for row in rows) or "the same settings"
        members.setdefault(label, []).append(run)
    return [group_band(label, group) for label, group in members.items()]


def group_band(label: str, runs: list[Run]) -> dict[str, Any]:
    curves = stats.arm_curves([seed_arm(run, arm=label) for run in runs], GROUP_SMOOTHING)
    return {"label": label, "run_ids": [run.id for run in runs], "reward": curves["reward"]}
