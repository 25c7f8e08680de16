"""`manage.py warmstart SLUG [SLUG ...] [--name NAME] [--from-runs ID ...] [--demos N] [--epochs E] [--full]
[--model NAME_OR_PATH] [--pool P] [--lr LR] [--checkpointing] [--seed S] [--prompt-style compact|full]`

Warm-starts a language model by supervised fine-tuning before RL: on GrammarPolicy programs for the
competitions (solve and improve demonstrations, formatted exactly as the LM's responses) and on the best
valid attempts of earlier runs (`--from-runs`). Stores a LoRA adapter (or with `--full`, a merged model)
under PRACTICUM_DATA_DIR/adapters/NAME/ with a manifest of what it was trained on; a run uses it with
`manage.py train SLUG --policy lm --warm-start NAME`. Progress on stderr; on stdout:
{"adapter", "name", "demonstrations", "steps", "loss_first", "loss_last", "wall_s"}. Exit 2 on bad input.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tqdm import tqdm

from rl_core.policies.lm.weights import EMBEDDED_MODEL, in_hub_cache
from webapp import storage
from webapp.cli import BadInput, JsonCommand
from webapp.competitions.models import Competition
from webapp.runs import selectors
from webapp.runs.dispatch import dispatcher
from webapp.runs.models import Run
from webapp.runs.warmstarts import WarmStartRequest


class Command(JsonCommand):
    help = "Warm-start a language model on demonstrations (supervised fine-tuning) before RL."

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", metavar="SLUG")
        parser.add_argument("--name", help="under PRACTICUM_DATA_DIR/adapters (default: generated)")
        parser.add_argument("--from-runs", type=int, nargs="+", default=[], metavar="ID")
        parser.add_argument(
            "--demos", type=int, default=WarmStartRequest.demonstrations, help="grammar demos in all"
        )
        parser.add_argument("--epochs", type=int, default=WarmStartRequest.epochs)
        parser.add_argument("--full", action="store_true", help="fine-tune every weight, not a LoRA adapter")
        parser.add_argument("--model", default=EMBEDDED_MODEL, metavar="NAME_OR_PATH")
        parser.add_argument("--pool", type=int, default=WarmStartRequest.pool, help="programs run per slug")
        parser.add_argument("--lr", type=float, default=None)
        parser.add_argument("--checkpointing", action="store_true", help="half the memory, ~40%% more time")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--prompt-style", choices=["compact", "full"], default=WarmStartRequest.prompt_style
        )

    def run(self, **options):
        request = check_request(options)
        started = time.monotonic()
        bar = StepBar()
        try:
            summary = dispatcher().warm_start(request=request, say=self.progress, on_step=bar.advance)
        finally:
            bar.close()
        self.progress(f"Saved {summary['adapter']} in {time.monotonic() - started:.0f} s.")
        return summary


class StepBar:
    """A tqdm bar on stderr over the training steps, drawn from the first step on, with the latest loss."""

    def __init__(self) -> None:
        self.bar: tqdm | None = None

    def advance(self, step: int, total: int, loss: float) -> None:
        if self.bar is None:
            self.bar = tqdm(total=total, file=sys.stderr, unit="step", dynamic_ncols=True)
        self.bar.set_postfix_str(f"loss {loss:.3f}", refresh=False)
        self.bar.update(step - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def check_request(options) -> WarmStartRequest:
    """The request the options describe; BadInput naming the first option that is wrong."""
    competitions = check_competitions(options["slugs"])
    check_runs(options["from_runs"])
    for option in ("demos", "pool"):
        if options[option] < 0:
            raise BadInput(f"--{option}: must be 0 or more, not {options[option]}.")
    if options["epochs"] < 1:
        raise BadInput(f"--epochs: must be at least 1, not {options['epochs']}.")
    if options["demos"] == 0 and not options["from_runs"]:
        raise BadInput("--demos: 0 grammar demonstrations and no --from-runs leaves nothing to learn from.")
    if options["lr"] is not None and not options["lr"] > 0:
        raise BadInput(f"--lr: must be positive, not {options['lr']}.")
    return WarmStartRequest(
        name=check_name(options["name"] or default_name(options["slugs"])),
        competitions=competitions,
        run_ids=options["from_runs"],
        demonstrations=options["demos"],
        epochs=options["epochs"],
        full=options["full"],
        gradient_checkpointing=options["checkpointing"],
        model=check_model(options["model"]),
        pool=options["pool"],
        lr=options["lr"],
        seed=options["seed"],
        prompt_style=options["prompt_style"],
    )


def check_competitions(slugs: list[str]) -> list[Competition]:
    if not slugs:
        raise BadInput("SLUG: name at least one competition.")
    competitions = list(Competition.objects.filter(slug__in=slugs).order_by("slug"))
    missing = sorted(set(slugs) - {c.slug for c in competitions})
    if missing:
        raise BadInput(f"SLUG: no competition called {', '.join(missing)}.")
    return competitions


def check_runs(run_ids: list[int]) -> None:
    missing = sorted(set(run_ids) - set(Run.objects.filter(id__in=run_ids).values_list("id", flat=True)))
    if missing:
        raise BadInput(f"--from-runs: no run {', '.join(map(str, missing))}.")


def check_name(name: str) -> str:
    try:
        folder = selectors.warm_start_dir(name_or_path=storage.safe_name(name))
    except ValueError as error:
        raise BadInput(f"--name: {error}") from None
    if folder.exists():
        raise BadInput(f"--name: a warm start called {name!r} exists already; choose another name.")
    return name


def default_name(slugs: list[str]) -> str:
    """e.g. "iris-species-20250101-120000" (at most 128 characters, a safe folder name)."""
    return f"{'+'.join(slugs)[:100]}-{time.strftime('%Y%m%d-%H%M%S')}".replace("+", "_")


def check_model(model: str) -> str:
    """`model` if it names something loadable without a download; BadInput otherwise."""
    if model == EMBEDDED_MODEL or Path(model).expanduser().is_dir():
        return model
    if not in_hub_cache(model):
        raise BadInput(
            f"--model: {model!r} is not {EMBEDDED_MODEL!r}, a local folder, or a model in the Hugging Face "
            "cache (nothing is downloaded)."
        )
    return model
