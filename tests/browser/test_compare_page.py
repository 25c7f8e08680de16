"""The compare page in a real browser (issue 26, item 7): runs scored by different metrics get a best-score
chart each and a visible note, ids it cannot show are named, the code diff is a clean coloured side-by-side
table, and the curves of an active run grow without a reload. Runs and attempts are made in the database
(and, for the live update, through the services the workers use), so nothing really runs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BEST_CHARTS = "[...document.querySelectorAll('.chart-best')]"
FIRST_LINE_POINTS = "document.querySelector('.chart-best').data[0].x.length"
OLD_PROGRAM = "import pandas as pd\nmodel = 'knn'\nk = 5\nprint('fit')\n"
NEW_PROGRAM = "import pandas as pd\nmodel = 'forest'\nprint('fit')\nprint('done')\n"


def competition_on(owner, metric: str):
    """The public competition scored by `metric`, made on first use."""
    from webapp.competitions.models import Competition

    made = Competition.objects.filter(metric=metric).first()
    return made or Competition.objects.create(
        slug=f"scored-by-{metric.replace('_', '-')}", name=f"Scored by {metric}", owner=owner, is_public=True,
        metric=metric, id_column="id", target_columns=["y"], time_limit_s=60, memory_mb=512,
    )  # fmt: skip


def public_run(
    owner, competition, *, status: str = "finished", scores=(0.5, 0.4), program: str = OLD_PROGRAM
):
    """A public run on `competition` with one finished valid attempt per score (the last one its best)."""
    from django.utils import timezone

    from rl_core.run_spec import RunConfig
    from webapp.runs.models import Attempt, Run

    start = timezone.now() - timedelta(minutes=5)
    run = Run.objects.create(
        owner=owner, name=f"on {competition.metric}", is_public=True, status=status, policy="grammar",
        config=RunConfig(attempts=10).to_dict(), attempts_done=len(scores), started_at=start,
    )  # fmt: skip
    run.competitions.add(competition)
    for number, score in enumerate(scores, start=1):
        best = Attempt.objects.create(
            run=run, key=f"0-{number}", competition=competition, number=number, policy_version=0, status="ok",
            valid=True,
            score=score, stages=["imports_done"], reward=0.5, duration_s=1.0, started_at=start,
            finished_at=start + timedelta(seconds=10 * number), program=program,
        )  # fmt: skip
    Run.objects.filter(id=run.id).update(best_score=scores[-1], best_attempt=best)
    return run


@pytest.fixture
def rmsle_run(owner):
    return public_run(owner, competition_on(owner, "rmsle")).id


@pytest.fixture
def auc_run(owner):
    return public_run(owner, competition_on(owner, "roc_auc"), program=NEW_PROGRAM).id


@pytest.fixture
def private_run(stranger):
    """A run of someone else's that the anonymous browser may not see."""
    from webapp.runs.models import Run

    return Run.objects.create(owner=stranger, name="secret", config={}).id


def open_compare(page, *ids) -> None:
    page.goto("/compare/?runs=" + ",".join(str(i) for i in ids))
    page.wait_for_function("window.practicum && window.practicum.charts >= 1")


def test_runs_on_two_metrics_get_a_best_score_chart_each_and_a_visible_note(
    rmsle_run, auc_run, page, screenshot
):
    open_compare(page, rmsle_run, auc_run)
    screenshot("compare-two-metrics")
    axes = page.evaluate(f"{BEST_CHARTS}.map((chart) => chart.layout.yaxis.title.text)")
    lines = page.evaluate(f"{BEST_CHARTS}.map((chart) => chart.data.map((line) => line.name))")
    assert axes == ["rmsle (lower is better)", "roc_auc (higher is better)"]
    assert lines == [[f"#{rmsle_run} on rmsle"], [f"#{auc_run} on roc_auc"]]
    note = page.locator("#compare-metric-note")
    assert note.is_visible() and "scored by 2 metrics (rmsle, roc_auc)" in note.inner_text()
    reward_note = page.locator(".chart-reward").first.locator("xpath=..").inner_text()
    assert "the same scale on every competition" in reward_note, "the shared reward chart says why it may"
    page.select_option("#x-axis", "exec_s")
    x_titles = page.evaluate("[...document.querySelectorAll('.chart')].map((c) => c.layout.xaxis.title.text)")
    assert x_titles == ["cumulative executor-seconds"] * 3, "every chart follows the x axis selector"


def test_ids_it_cannot_show_are_named_without_saying_why(rmsle_run, private_run, page):
    open_compare(page, rmsle_run, 999999, private_run)
    notice = page.locator("#compare-unseen")
    assert notice.is_visible()
    assert notice.inner_text() == f"Runs #999999, #{private_run} do not exist or are not visible to you."
    assert "secret" not in page.locator("main").inner_text()


@pytest.fixture
def diffed_runs(owner):
    competition = competition_on(owner, "rmsle")
    return public_run(owner, competition).id, public_run(owner, competition, program=NEW_PROGRAM).id


def test_the_code_diff_is_a_clean_coloured_side_by_side_table(diffed_runs, page, screenshot):
    open_compare(page, *diffed_runs)
    screenshot("compare-code-diff")
    diff = page.locator(".code-diff table.diff")
    cells = diff.locator("tbody td").all_inner_texts()
    assert "n" not in cells and "t" not in cells, "no next/top navigation cells"
    assert diff.locator("a").count() == 0
    row = diff.locator("tbody tr").first
    assert row.locator("td").count() == 4, "line number and code on each side"
    colour = "(selector) => getComputedStyle(document.querySelector(selector)).backgroundColor"
    removed = page.evaluate(colour, "tr.diff_sub td.code.old")
    added = page.evaluate(colour, "tr.diff_add td.code.new")
    changed = page.evaluate(colour, "tr.diff_chg td.code.new")
    assert (removed, added, changed) == ("rgb(254, 228, 226)", "rgb(220, 250, 230)", "rgb(254, 240, 199)")
    assert page.locator("tr.diff_sub td.code.old").inner_text() == "k = 5"
    assert page.locator("tr.diff_add td.code.new").inner_text() == "print('done')"
    widths = page.evaluate(
        "[...document.querySelector('.code-diff tbody tr').cells].map((c) => c.offsetWidth)"
    )
    assert widths[1] + widths[3] > 0.75 * sum(widths), f"the code columns are narrow: {widths}"


@pytest.fixture
def running_run(owner):
    """A running public run with one finished attempt and no supervisor. No worker runs here (the test is
    not marked `workers`): a `gpu` worker restarts the supervisor of every active run it finds when it
    starts, which would fail this made-up run."""
    return public_run(owner, competition_on(owner, "rmsle"), status="running", scores=(0.5,))


def record_attempt(run_id: int, score: float) -> None:
    """Start and finish one attempt through the services the workers call (in another thread: playwright's
    event loop in the test's thread forbids ORM calls)."""
    from rl_core.outcome import AttemptOutcome
    from webapp.runs import services
    from webapp.runs.models import Run

    competition = Run.objects.get(id=run_id).competitions.get()
    fields = {"prompt_kind": "solve", "family": "knn", "info": {}, "response": "```python\nprint(1)\n```"}
    services.attempt_start(run_id=run_id, key="live-1", competition=competition, sample_fields=fields,
                           policy_version=0)  # fmt: skip
    outcome = {"status": "ok", "exit_code": 0, "duration_s": 2.0, "stages": ["imports_done"], "valid": True,
               "score": score, "reward": 0.7, "program": "print(1)\n"}  # fmt: skip
    services.attempt_finish(
        run_id=run_id, key="live-1", outcome=AttemptOutcome.from_dict(outcome), staleness=0
    )


def in_another_thread(fn, *args) -> None:
    """Call fn(*args) in a thread of its own, closing that thread's database connection after."""
    from django.db import connections

    def call() -> None:
        try:
            fn(*args)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(call).result()


def finish_run(run_id: int) -> None:
    from webapp.runs import services

    services.run_set_status(run_id=run_id, status="finished")


def test_an_active_runs_curves_and_best_grow_without_a_reload(running_run, rmsle_run, page):
    polled: list[str] = []
    page.on("request", lambda r: polled.append(r.url) if "/compare/curves.json" in r.url else None)
    open_compare(page, running_run.id, rmsle_run)
    page.evaluate("window.sameDocument = 'still here'")
    assert page.evaluate(FIRST_LINE_POINTS) == 1
    assert "updating live" in page.inner_text("#compare-live")
    in_another_thread(record_attempt, running_run.id, 0.25)
    page.wait_for_function(f"{FIRST_LINE_POINTS} === 2", timeout=30_000)
    assert page.evaluate("window.sameDocument") == "still here", "the page was reloaded"
    assert page.evaluate("window.practicum.updates") >= 1
    best = page.locator(f'.best-submission[data-run="{running_run.id}"]')
    page.wait_for_function("document.querySelector('.best-numbers').textContent.includes('attempt 2')")
    assert "0.25000" in best.locator(".best-numbers").inner_text()
    assert best.locator(".best-stale").is_visible(), "a new best says its program is a reload away"
    in_another_thread(finish_run, running_run.id)
    page.wait_for_function("document.getElementById('compare-live').textContent === ''", timeout=30_000)
    updates = page.evaluate("window.practicum.updates")
    page.wait_for_timeout(4_000)
    assert page.evaluate("window.practicum.updates") == updates, "polling stops once no run is active"
    assert polled and all(url.endswith(f"?runs={running_run.id}") for url in polled), "only active runs"


@pytest.fixture
def seeded_runs(owner):
    """Three public runs: two seeds of batch 8 and one of batch 2, each with two valid attempts."""
    from rl_core.run_spec import RunConfig
    from webapp.runs.models import Run

    competition = competition_on(owner, "rmsle")
    runs = [public_run(owner, competition, scores=(0.5, 0.4)) for _ in range(3)]
    for run, (seed, batch) in zip(runs, [(0, 8), (1, 8), (0, 2)], strict=True):
        Run.objects.filter(id=run.id).update(config=RunConfig(attempts=10, seed=seed, batch=batch).to_dict())
    return [run.id for run in runs]


def test_runs_grouped_by_the_settings_that_differ_show_a_band_per_group(seeded_runs, page, screenshot):
    open_compare(page, *seeded_runs)
    assert page.locator("#chart-groups").count() == 0, "grouping is asked for"
    page.check("#group-runs")
    page.click("#compare-form button[type=submit]")
    page.wait_for_function(
        "window.practicum && window.practicum.charts >= 1 && document.getElementById('chart-groups')"
    )
    screenshot("compare-groups")
    names = page.evaluate(
        "document.getElementById('chart-groups').data.filter((t) => t.name).map((t) => t.name)"
    )
    assert [name.split(": mean")[0] for name in names] == [
        "Attempts per update (B): 8",
        "Attempts per update (B): 2",
    ]
    assert names[0].endswith("mean over 2 runs, band: 95% interval")
    bands = page.evaluate(
        "document.getElementById('chart-groups').data.filter((t) => t.fill === 'tonexty').length"
    )
    assert bands == 2
