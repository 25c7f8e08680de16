"""`manage.py competition_from_table PATH --slug SLUG [--name NAME] [--target COLUMN ...] [--id-column COLUMN]
[--metric METRIC] [--test-fraction F] [--seed S] [--owner USERNAME] [--public]`
→ {"slug", "metric", "id_column", "target_columns", "train_rows", "test_rows"}

PATH is one labelled table (CSV, a JSON list of records, or JSON lines). Whatever is not given is
proposed as on the browser page (`webapp.competitions.tables.proposal`); `target_columns` in the output are
the graded columns (one per class under a multiclass probability metric).
"""

from pathlib import Path

from django.contrib.auth import get_user_model

from webapp.cli import BadInput, JsonCommand
from webapp.competitions.importing.bundles import BundleError
from webapp.competitions.tables import services as tables
from webapp.competitions.tables.bundle import SPLIT_SEED
from webapp.competitions.tables.proposal import (
    Choices,
    propose,
    propose_id_column,
    propose_metric,
    read_table,
)


class Command(JsonCommand):
    help = "Make a competition from one labelled table: split it, write the bundle, import it."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--slug", required=True, help="the new competition's slug")
        parser.add_argument("--name", help="its title (default: from the slug)")
        parser.add_argument("--target", action="append", help="a target column (repeat for several)")
        parser.add_argument("--id-column", help="a column of unique ids (default: proposed, or generated)")
        parser.add_argument("--metric", help="a metric name (default: proposed for the targets)")
        parser.add_argument("--test-fraction", type=float, help="share of rows held out (default 0.2)")
        parser.add_argument("--seed", type=int, default=SPLIT_SEED, help="seed of the split")
        parser.add_argument("--owner", help="username of the owner (default: no owner)")
        parser.add_argument("--public", action="store_true", help="visible to everyone")

    def run(self, *, path: Path, slug: str, name: str | None, owner: str | None, public: bool, **options):
        user = None
        if owner:
            user = get_user_model().objects.filter(username=owner).first()
            if user is None:
                raise BadInput(f"--owner: no user called {owner!r}.")
        if not path.is_file():
            raise BadInput(f"{path}: no such file.")
        try:
            table = read_table(path)
            choices = chosen(table, options)
            competition, plan, written = tables.competition_from_table(
                table=table,
                choices=choices,
                slug=slug,
                name=name or slug.replace("-", " ").capitalize(),
                owner=user,
                is_public=public,
                seed=options["seed"],
            )
        except BundleError as error:
            raise BadInput(str(error)) from None
        self.progress(f"Made {competition.slug} ({competition.metric}) from {path.name}.")
        return {
            "slug": competition.slug,
            "metric": competition.metric,
            "id_column": plan.id_column,
            "target_columns": list(written.graded_columns),
            "train_rows": written.train_rows,
            "test_rows": written.test_rows,
        }


def chosen(table, options: dict) -> Choices:
    """The proposal, with whatever the options name in its place (a new target gets its own metric)."""
    proposal = propose(table)
    targets = tuple(options["target"] or proposal.target_columns)
    id_column = options["id_column"] or propose_id_column(table.frame, exclude=targets)
    return Choices(
        id_column=id_column,
        target_columns=targets,
        metric=options["metric"] or propose_metric(table.frame, targets),
        test_fraction=proposal.test_fraction
        if options["test_fraction"] is None
        else options["test_fraction"],
    )
