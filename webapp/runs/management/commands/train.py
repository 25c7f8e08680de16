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
`--study-seeds N` and `--study-arm "static: updates=off"` (repeatable) make a study instead
(webapp.runs.studies): every arm on seeds 0..N-1, driven here one run after another; it prints {"study_id",
"runs": [{"run_id", "arm", "seed", "status", "attempts", "valid_rate"}], "tests"} (each arm against the first:
rl_core.studies.ArmTest.as_dict(), with its verdict in words).
Exit 2 with one line on stderr for bad input.
"""

from __future__ import annotations

import time
from pathlib import Path

from django.contrib.auth import get_user_model

from rl_core.declarations import Declared
from rl_core.run_spec import RunConfig, run_ids, settings
from webapp.cli import BadInput, JsonCommand
from webapp.competitions.models import Competition
from webapp.runs import selectors, services, studies, study_reads, warmstarts
from webapp.runs.dispatch import dispatcher
from webapp.runs.models import Run, Study
from webapp.runs.progress import ProgressObserver
from webapp.runs.selectors import EVAL_PREFIX
from webapp.runs.study_plan import parse_arms

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
        parser.add_argument("--study-seeds", type=int, metavar="N", help="a study: every arm on seeds 0..N-1")
        parser.add_argument(
            "--study-arm", action="append", default=[], metavar="'NAME: SETTING=VALUE, ...'",
            help="a study arm: a name and the settings it changes (repeatable; none: one arm, the options)",
        )  # fmt: skip

    def run(self, **options):
        if options["study_seeds"] is not None or options["study_arm"]:
            return self.run_study(create_study(options))
        run = resume_run(options["resume"]) if options["resume"] else create_run(options)
        started = time.monotonic()
        self.drive(run)
        run.refresh_from_db()
        attempts, valid_rate = training_counts(run)
        return {
            "run_id": run.id,
            "status": run.status,
            "attempts": attempts,
            "best_score": run.best_score,
            "best_attempt_id": run.best_attempt_id,
            "valid_rate": valid_rate,
            "wall_s": round(time.monotonic() - started, 3),
            "evaluation": selectors.run_evaluation(run=run),
            "reward_source": run.config.get("reward_source", "hidden"),
            "final_score": run.final_score,
            "final_valid": run.final_valid,
        }

    def drive(self, run: Run) -> None:
        """Drive the run to its end here, with a progress bar on stderr."""
        config = RunConfig.from_dict(run.config)
        self.progress(
            f"Run {run.id}: {config.policy} policy on {', '.join(c.slug for c in run.competitions.all())}"
        )
        total = config.attempts + (2 * run.competitions.count() if config.final_evaluation else 0)
        dispatcher().drive(run.id, observer_wrapper=lambda o: ProgressObserver(
            o, total=total, capacity=config.actors))  # fmt: skip

    def run_study(self, study: Study) -> dict:
        """Drive each of the study's runs here, one after another, then summarise them and the tests."""
        run: Run | None = study.runs.get()
        while run is not None:
            self.progress(f"Study {study.id}: arm {run.study_arm}, seed {run.config['seed']}")
            self.drive(run)
            study.refresh_from_db()
            run = None if study.cancelled else studies.study_next_run(study)
        rows = []
        for each in study_reads.study_runs(study):
            attempts, valid_rate = training_counts(each)
            rows.append({"run_id": each.id, "arm": each.study_arm, "seed": each.config["seed"],
                         "status": each.status, "attempts": attempts, "valid_rate": valid_rate})  # fmt: skip
        return {"study_id": study.id, "runs": rows, "tests": study_reads.study_statistics(study)["tests"]}


def training_counts(run: Run) -> tuple[int, float]:
    """The run's finished training attempts (no evaluation, no final grading) and their valid rate."""
    finished = (
        run.attempts.exclude(status="running")
        .exclude(prompt_kind__startswith=EVAL_PREFIX)
        .exclude(prompt_kind=selectors.FINAL_KIND)
    )
    count = finished.count()
    return count, finished.filter(valid=True).count() / count if count else 0.0


def create_study(options) -> Study:
    """The study the options describe, created with its first run (admitted once under the owner's quota);
    BadInput naming what is wrong otherwise."""
    if options["resume"]:
        raise BadInput("--resume: resumes one run; it does not go with --study-seeds or --study-arm.")
    competitions = check_competitions(options["slugs"])
    owner = check_owner(options["owner"])
    try:
        config = RunConfig.from_dict(config_fields(options))
        seeds = 1 if options["study_seeds"] is None else options["study_seeds"]
        return studies.study_admit_create(
            owner=owner, competitions=competitions, config=config.to_dict(), is_public=options["public"],
            arms=parse_arms("\n".join(options["study_arm"])), seeds=seeds,
        )  # fmt: skip
    except ValueError as error:  # a bad field or arm, a warm start that does not fit, or a quota refusal
        raise BadInput(study_option_message(str(error))) from None


def study_option_message(message: str) -> str:
    """A study's refusal in the options' words.

    >>> study_option_message("arms: arm 'x': unknown setting 'y'.")
    "--study-arm: arm 'x': unknown setting 'y'."
    """
    for field, flag in (("arms: ", "--study-arm: "), ("seeds: ", "--study-seeds: ")):
        if message.startswith(field):
            return flag + message.removeprefix(field)
    return option_message(message)


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
