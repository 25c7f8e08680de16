"""`manage.py train SLUG [SLUG ...] [--policy grammar|lm] [--model NAME_OR_PATH] [--attempts N] [--actors K]
[--batch B] [--sync] [--no-duration-aware] [--no-instrumentation] [--seed S] [--owner USERNAME]`

Creates a run, drives it in the foreground with a progress bar on stderr, and prints its summary:
{"run_id", "attempts", "best_score", "best_attempt_id", "valid_rate", "wall_s"}. Several slugs train one
policy on several competitions at once. `--resume RUN_ID` continues a run from its newest checkpoint.
"""

from __future__ import annotations

import time

from django.contrib.auth import get_user_model

from webapp.cli import BadInput, JsonCommand
from webapp.competitions.models import Competition
from webapp.runs import services
from webapp.runs.config import RunConfig
from webapp.runs.models import Run


class Command(JsonCommand):
    help = "Train an agent on one or more competitions in the foreground."

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", metavar="SLUG")
        parser.add_argument("--policy", choices=["grammar", "lm"], default="grammar")
        parser.add_argument("--model", default=RunConfig.model)
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
        self.progress(f"Run {run.id}: {config.policy} policy on {', '.join(c.slug for c in run.competitions.all())}")
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
        "model": options["model"],
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
    return services.run_create(
        owner=owner, competitions=competitions, policy=config.policy, config=config.to_dict(), is_public=options["public"]
    )


def resume_run(run_id: int) -> Run:
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        raise BadInput(f"--resume: no run {run_id}.")
    if not run.is_active:
        raise BadInput(f"--resume: run {run_id} is {run.status}; only queued or running runs resume.")
    return run
