"""`manage.py train SLUG [SLUG ...] [--policy grammar|lm] [--model NAME_OR_PATH] [--attempts N] [--actors K]
[--batch B] [--sync] [--no-duration-aware] [--no-instrumentation] [--instrumenter ast|lm] [--evaluate]
[--seed S] [--owner NAME] ...`

Creates a run, drives it in the foreground with a progress bar on stderr, and prints its summary:
{"run_id", "status", "attempts", "best_score", "best_attempt_id", "valid_rate", "wall_s", "evaluation",
"reward_source", "final_score", "final_valid"} ("attempts" and "valid_rate" count the training attempts).
`--reward-source validation` scores every attempt on a validation split of each competition's labelled
training table; "best_score" is then a validation score, and "final_score" the chosen program's one grade on
the hidden answers (for a run on one competition; with `--reward-source hidden`, the best score).
`--evaluate` then evaluates the final policy on each competition by the paper's protocol (solve, then improve,
keep the better): "evaluation" maps each slug to {"solve_score", "improve_score", "score", "attempt_id",
"attempt_number"} (scores of invalid attempts are null); without it, "evaluation" is {}. Several slugs train
one policy on several competitions at once. `--resume RUN_ID` continues a run from its newest checkpoint.
Where the policy starts: `--warm-start run:ID` (an earlier run's final policy) or, for an LM, a stored warm
start (`manage.py warmstart`; a name under PRACTICUM_DATA_DIR/adapters or a folder; the model defaults to the
one it was trained from), or `--warm-start-demos N [--imitate-runs ID ...]` to fine-tune on demonstrations
first. `--seed-baseline [--baseline-program FILE]` seeds each competition's improve pool with a baseline
program (default: the simplest grammar program) when it is valid. `--instrumenter lm` (LM policy only) has the
frozen base model insert the progress markers, checked against the AST (the rules' markers run where its
version is refused). Every run setting has an option (`--help`), derived from rl_core.run_spec.
Exit 2 with one line on stderr for bad input.
"""

from __future__ import annotations

import time
from pathlib import Path

from django.contrib.auth import get_user_model

from rl_core.run_spec import Declared, RunConfig, run_ids, settings
from webapp.cli import BadInput, JsonCommand
from webapp.competitions.models import Competition
from webapp.runs import selectors, services, warmstarts
from webapp.runs.dispatch import dispatcher
from webapp.runs.models import Run
from webapp.runs.progress import ProgressObserver
from webapp.runs.selectors import EVAL_PREFIX

DEFAULTS = RunConfig()
FILE_SETTINGS = ("baseline_program",)
"""Settings given as a file's path whose text is the value."""


class Command(JsonCommand):
    help = "Train an agent on one or more competitions in the foreground."

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", metavar="SLUG")
        for declared in settings().values():
            add_setting(parser, declared)
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
        finished = (
            run.attempts.exclude(status="running")
            .exclude(prompt_kind__startswith=EVAL_PREFIX)
            .exclude(prompt_kind=selectors.FINAL_KIND)
        )
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
            "reward_source": config.reward_source,
            "final_score": run.final_score,
            "final_valid": run.final_valid,
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


def add_setting(parser, declared: Declared) -> None:
    """`declared`'s option: a flag for a boolean (--NAME, or --no-NAME where it is on by default), choices
    for a choice, a type for a number, several ids for a list of runs, a path for a program."""
    named = {"dest": declared.name, "help": f"{declared.label}: {declared.help}".replace("%", "%%")}
    if declared.kind == "bool":
        action = "store_false" if declared.default else "store_true"
        parser.add_argument(declared.flag, action=action, **named)
    elif declared.kind == "choice":
        parser.add_argument(declared.flag, choices=declared.choices, default=declared.default, **named)
    elif declared.kind == "ids":
        parser.add_argument(declared.flag, type=int, nargs="+", default=[], metavar="ID", **named)
    elif declared.name in FILE_SETTINGS:
        parser.add_argument(declared.flag, type=Path, metavar="FILE", **named)
    elif declared.name == "model":
        named["help"] += f" Default: {declared.default}, or the warm start's model."
        parser.add_argument(declared.flag, default=None, **named)
    else:
        kinds = {"int": int, "float": float, "text": str}
        parser.add_argument(declared.flag, type=kinds[declared.kind], default=declared.default, **named)


def config_fields(options) -> dict:
    """The RunConfig fields the options set."""
    raw = {name: options[name] for name in settings()}
    raw["imitate_runs"] = run_ids(options["imitate_runs"])
    raw["model"] = options["model"] or warmstarts.warm_start_model(options["warm_start"]) or DEFAULTS.model
    for name in FILE_SETTINGS:
        raw[name] = read_program(options[name], flag=settings()[name].flag)
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


def read_program(path: Path | None, *, flag: str) -> str:
    if path is None:
        return ""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise BadInput(f"{flag}: cannot read {path} ({error}).") from None


def resume_run(run_id: int) -> Run:
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        raise BadInput(f"--resume: no run {run_id}.")
    if not run.is_active:
        raise BadInput(f"--resume: run {run_id} is {run.status}; only queued or running runs resume.")
    return run
