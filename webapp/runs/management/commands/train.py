"""`manage.py train SLUG [SLUG ...] [--policy grammar|lm] [--model NAME_OR_PATH]
[--warm-start NAME_OR_PATH] [--seed-baseline] [--attempts N] [--actors K] [--batch B] [--sync]
[--no-duration-aware] [--no-instrumentation] [--seed S] [--owner USERNAME]`

Creates a run, drives it in the foreground with a progress bar on stderr, and prints its summary:
{"run_id", "attempts", "best_score", "best_attempt_id", "valid_rate", "wall_s"}. Several slugs train one
policy on several competitions at once. `--resume RUN_ID` continues a run from its newest checkpoint.
`--warm-start` starts an LM from a warm start of `manage.py warmstart` (a name under
PRACTICUM_DATA_DIR/adapters, or a folder; the model defaults to the one it was trained from);
`--seed-baseline` seeds each competition's improve pool with the simplest grammar program when it is valid.
"""

from __future__ import annotations

import time

from django.contrib.auth import get_user_model

from rl_core.adapters import read_manifest, warm_start_source
from webapp.cli import BadInput, JsonCommand
from webapp.competitions.models import Competition
from webapp.runs import selectors, services
from webapp.runs.config import RunConfig
from webapp.runs.models import Run


class Command(JsonCommand):
    help = "Train an agent on one or more competitions in the foreground."

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", metavar="SLUG")
        parser.add_argument("--policy", choices=["grammar", "lm"], default="grammar")
        parser.add_argument("--model", default=None, help=f"default: {RunConfig.model}, or the warm start's")
        parser.add_argument("--warm-start", default="", metavar="NAME_OR_PATH", help="LM: start from it")
        parser.add_argument("--seed-baseline", action="store_true", help="seed improve pools with a baseline")
        parser.add_argument("--attempts", type=int, default=RunConfig.attempts)
        parser.add_argument("--actors", type=int, default=RunConfig.actors)
        parser.add_argument("--batch", type=int, default=RunConfig.batch)
        parser.add_argument("--sync", action="store_true")
        parser.add_argument("--no-duration-aware", action="store_true")
        parser.add_argument("--no-instrumentation", action="store_true")
        parser.add_argument("--reward-preset", choices=["normalized", "paper"], default="normalized")
        parser.add_argument("--lr", type=float, default=None)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--owner", help="username owning the run (default: none)")
        parser.add_argument("--public", action="store_true")
        parser.add_argument("--resume", type=int, metavar="RUN_ID", help="continue this run")

    def run(self, **options):
        from webapp.runs.progress import ProgressObserver
        from webapp.runs.supervisor import run_supervise

        run = resume_run(options["resume"]) if options["resume"] else create_run(options)
        config = RunConfig.from_dict(run.config)
        started = time.monotonic()
        self.progress(
            f"Run {run.id}: {config.policy} policy on {', '.join(c.slug for c in run.competitions.all())}"
        )
        run_supervise(run_id=run.id, observer_wrapper=lambda o: ProgressObserver(
            o, total=config.attempts, capacity=config.actors))  # fmt: skip
        run.refresh_from_db()
        finished = run.attempts.exclude(status="running")
        valid = finished.filter(valid=True).count()
        return {
            "run_id": run.id,
            "status": run.status,
            "attempts": finished.count(),
            "best_score": run.best_score,
            "best_attempt_id": run.best_attempt_id,
            "valid_rate": valid / finished.count() if finished.count() else 0.0,
            "wall_s": round(time.monotonic() - started, 3),
        }


def create_run(options) -> Run:
    if not options["slugs"]:
        raise BadInput("SLUG: name at least one competition.")
    competitions = list(Competition.objects.filter(slug__in=options["slugs"]))
    missing = sorted(set(options["slugs"]) - {c.slug for c in competitions})
    if missing:
        raise BadInput(f"SLUG: no competition called {', '.join(missing)}.")
    owner = None
    if options["owner"]:
        owner = get_user_model().objects.filter(username=options["owner"]).first()
        if owner is None:
            raise BadInput(f"--owner: no user called {options['owner']!r}.")
    raw = {
        "policy": options["policy"],
        "model": options["model"] or warm_start_model(options["warm_start"]) or RunConfig.model,
        "warm_start": options["warm_start"],
        "seed_baseline": options["seed_baseline"],
        "attempts": options["attempts"],
        "actors": options["actors"],
        "batch": options["batch"],
        "sync": options["sync"],
        "duration_aware": not options["no_duration_aware"],
        "instrument": not options["no_instrumentation"],
        "reward_preset": options["reward_preset"],
        "seed": options["seed"],
    }
    if options["lr"] is not None:
        raw["lr"] = options["lr"]
    elif options["policy"] == "lm":
        raw["lr"] = 1e-5
    try:
        config = RunConfig.from_dict(raw)
    except ValueError as error:
        raise BadInput(str(error)) from None
    check_warm_start(config)
    try:
        return services.run_admit_create(
            owner=owner, competitions=competitions, config=config.to_dict(), is_public=options["public"]
        )
    except ValueError as error:  # a quota refusal
        raise BadInput(str(error)) from None


def resume_run(run_id: int) -> Run:
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        raise BadInput(f"--resume: no run {run_id}.")
    if not run.is_active:
        raise BadInput(f"--resume: run {run_id} is {run.status}; only queued or running runs resume.")
    return run


def warm_start_model(name_or_path: str) -> str | None:
    """The model a warm start was trained from, per its manifest (None when there is none to read)."""
    if not name_or_path:
        return None
    try:
        manifest = read_manifest(selectors.warm_start_dir(name_or_path=name_or_path))
    except ValueError:
        return None  # a bad name; check_warm_start says so
    return (manifest or {}).get("base_model")


def check_warm_start(config: RunConfig) -> None:
    """BadInput unless the config's warm start exists and, for an adapter, was trained on its model."""
    if not config.warm_start:
        return
    try:
        folder = selectors.warm_start_dir(name_or_path=config.warm_start)
        source = warm_start_source(folder)
    except (ValueError, FileNotFoundError) as error:
        raise BadInput(f"--warm-start: {error}") from None
    if source.adapter_path and source.base_model and source.base_model != config.model:
        raise BadInput(
            f"--warm-start: {config.warm_start!r} adapts {source.base_model!r}, "
            f"not the run's model {config.model!r}."
        )
