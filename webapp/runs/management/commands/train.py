"""`manage.py train SLUG [SLUG ...] [--policy grammar|lm] [--model NAME_OR_PATH] [--attempts N] [--actors K]
[--batch B] [--sync] [--no-duration-aware] [--no-instrumentation] [--instrumenter ast|lm] [--evaluate]
[--seed S] [--owner NAME] ...`

Creates a run, drives it in the foreground with a progress bar on stderr, and prints its summary:
{"run_id", "status", "attempts", "best_score", "best_attempt_id", "valid_rate", "wall_s", "evaluation"}
("attempts" and "valid_rate" count the training attempts). `--evaluate` then evaluates the final policy on
each competition by the paper's protocol (solve, then improve, keep the better): "evaluation" maps each slug
to {"solve_score", "improve_score", "score", "attempt_id", "attempt_number"} (scores of invalid attempts are
null); without
it, "evaluation" is {}. Several slugs
train one policy on several competitions at once. `--resume RUN_ID` continues a run from its newest
checkpoint. Where the policy starts: `--warm-start run:ID` (an earlier run's final policy) or, for an LM, a
stored warm start (`manage.py warmstart`; a name under PRACTICUM_DATA_DIR/adapters or a folder; the model
defaults to the one it was trained from), or `--warm-start-demos N [--imitate-runs ID ...]` to fine-tune on
demonstrations first. `--seed-baseline [--baseline-program FILE]` seeds each competition's improve pool with
a baseline program (default: the simplest grammar program) when it is valid. `--instrumenter lm` (LM
policy only) has the frozen base model insert the progress markers, checked against the AST (the rules'
markers run where its version is refused). Every other RunConfig field has an option too (`--help`).
Exit 2 with one line on stderr for bad input.
"""

from __future__ import annotations

import time
from pathlib import Path

from django.contrib.auth import get_user_model

from webapp.cli import BadInput, JsonCommand
from webapp.competitions.models import Competition
from webapp.runs import selectors, services, warmstarts
from webapp.runs.config import RunConfig, run_ids
from webapp.runs.dispatch import dispatcher
from webapp.runs.models import Run
from webapp.runs.progress import ProgressObserver
from webapp.runs.selectors import EVAL_PREFIX

DEFAULTS = RunConfig()
CHOICES = {
    "reward_preset": ("normalized", "paper"), "reward_mode": ("score", "percentile"),
    "objective": ("ppo", "reinforce"), "advantage": ("running_mean", "group_mean", "batch_normalized"),
    "prompt_style": ("compact", "full"), "instrumenter": ("ast", "lm"),
    "lm_engine": ("auto", "transformers", "vllm"),
    "duration_weighting": ("lineage", "paper"), "improve_from": ("pool", "slots"),
}  # fmt: skip
NUMBERS = {
    "attempts": int, "actors": int, "batch": int, "warm_start_demos": int, "max_new_tokens": int,
    "checkpoint_every": int, "improve_prob": float, "entropy_coef": float, "kl_coef": float,
    "temperature": float, "credit_per_stage": float, "failure_reward": float, "sample_ahead": int,
    "max_staleness": int,
}  # fmt: skip
"""RunConfig fields given as options of the same name (dashes for underscores), with their types."""


class Command(JsonCommand):
    help = "Train an agent on one or more competitions in the foreground."

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", metavar="SLUG")
        parser.add_argument("--policy", choices=["grammar", "lm"], default="grammar")
        parser.add_argument("--model", default=None, help=f"default: {DEFAULTS.model}, or the warm start's")
        parser.add_argument("--warm-start", default="", metavar="run:ID|NAME|PATH", help="where to start")
        parser.add_argument("--imitate-runs", type=int, nargs="+", default=[], metavar="ID")
        parser.add_argument("--seed-baseline", action="store_true", help="seed improve pools with a baseline")
        parser.add_argument("--baseline-program", type=Path, metavar="FILE", help="the baseline to seed with")
        for name, kind in NUMBERS.items():
            default = getattr(DEFAULTS, name)
            parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=default)
        for name, options in CHOICES.items():
            parser.add_argument(
                f"--{name.replace('_', '-')}", choices=options, default=getattr(DEFAULTS, name)
            )
        parser.add_argument("--sync", action="store_true")
        parser.add_argument("--no-duration-aware", action="store_true")
        parser.add_argument("--no-instrumentation", action="store_true")
        parser.add_argument(
            "--no-credit-valid", action="store_true", help="a valid submission earns its score alone"
        )
        parser.add_argument("--evaluate", action="store_true", help="then solve, improve, keep the better")
        parser.add_argument("--lr", type=float, default=None, help="default: 0.05 grammar, 1e-4 lm")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--owner", help="username owning the run (default: none)")
        parser.add_argument("--public", action="store_true")
        parser.add_argument("--resume", type=int, metavar="RUN_ID", help="continue this run")

    def run(self, **options):
        run = resume_run(options["resume"]) if options["resume"] else create_run(options)
        config = RunConfig.from_dict(run.config)
        started = time.monotonic()
        self.progress(
            f"Run {run.id}: {config.policy} policy on {', '.join(c.slug for c in run.competitions.all())}"
        )
        total = config.attempts + (2 * run.competitions.count() if config.final_evaluation else 0)
        dispatcher().drive(run.id, observer_wrapper=lambda o: ProgressObserver(
            o, total=total, capacity=config.actors))  # fmt: skip
        run.refresh_from_db()
        finished = run.attempts.exclude(status="running").exclude(prompt_kind__startswith=EVAL_PREFIX)
        valid = finished.filter(valid=True).count()
        return {
            "run_id": run.id,
            "status": run.status,
            "attempts": finished.count(),
            "best_score": run.best_score,
            "best_attempt_id": run.best_attempt_id,
            "valid_rate": valid / finished.count() if finished.count() else 0.0,
            "wall_s": round(time.monotonic() - started, 3),
            "evaluation": selectors.run_evaluation(run=run),
        }


def create_run(options) -> Run:
    """The run the options describe, created (admitted under the owner's quotas); BadInput naming what
    is wrong otherwise."""
    competitions = check_competitions(options["slugs"])
    owner = check_owner(options["owner"])
    try:
        config = RunConfig.from_dict(config_fields(options))
        return services.run_admit_create(
            owner=owner, competitions=competitions, config=config.to_dict(), is_public=options["public"]
        )
    except ValueError as error:  # a bad field, a warm start that does not fit, or a quota refusal
        raise BadInput(option_message(str(error))) from None


def option_message(message: str) -> str:
    """A RunConfig error in the options' words.

    >>> option_message("config: warm_start: x holds no warm start."), option_message("quota")
    ('--warm-start: x holds no warm start.', 'quota')
    """
    if not message.startswith("config: "):
        return message
    rest = message.removeprefix("config: ")
    field = rest.split(" ", 1)[0].rstrip(":")
    return f"--{field.replace('_', '-')}: {rest.removeprefix(field + ':').strip()}"


def config_fields(options) -> dict:
    """The RunConfig fields the options set."""
    raw = {name: options[name] for name in (*NUMBERS, *CHOICES)}
    raw |= {
        "policy": options["policy"],
        "model": options["model"] or warmstarts.warm_start_model(options["warm_start"]) or DEFAULTS.model,
        "warm_start": options["warm_start"],
        "imitate_runs": run_ids(options["imitate_runs"]),
        "seed_baseline": options["seed_baseline"],
        "baseline_program": read_program(options["baseline_program"]),
        "sync": options["sync"],
        "duration_aware": not options["no_duration_aware"],
        "instrument": not options["no_instrumentation"],
        "credit_valid": not options["no_credit_valid"],
        "final_evaluation": options["evaluate"],
        "seed": options["seed"],
        "lr": options["lr"],
    }
    return raw


def check_competitions(slugs: list[str]) -> list[Competition]:
    if not slugs:
        raise BadInput("SLUG: name at least one competition.")
    competitions = list(Competition.objects.filter(slug__in=slugs))
    missing = sorted(set(slugs) - {c.slug for c in competitions})
    if missing:
        raise BadInput(f"SLUG: no competition called {', '.join(missing)}.")
    return competitions


def check_owner(username: str | None):
    if not username:
        return None
    owner = get_user_model().objects.filter(username=username).first()
    if owner is None:
        raise BadInput(f"--owner: no user called {username!r}.")
    return owner


def read_program(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise BadInput(f"--baseline-program: cannot read {path} ({error}).") from None


def resume_run(run_id: int) -> Run:
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        raise BadInput(f"--resume: no run {run_id}.")
    if not run.is_active:
        raise BadInput(f"--resume: run {run_id} is {run.status}; only queued or running runs resume.")
    return run
