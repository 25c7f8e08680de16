"""`manage.py import_competition PATH [--owner USERNAME] [--public]` → {"slug": ...}

PATH is a bundle folder, a .zip bundle, or an MLE-bench competition folder.
"""

from pathlib import Path

from django.contrib.auth import get_user_model

from webapp.cli import BadInput, JsonCommand
from webapp.competitions import services
from webapp.competitions.importing.bundles import BundleError


class Command(JsonCommand):
    help = "Validate and import a competition bundle (folder, .zip or MLE-bench folder)."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--owner", help="username of the owner (default: no owner)")
        parser.add_argument("--public", action="store_true", help="visible to everyone")

    def run(self, *, path: Path, owner: str | None, public: bool, **_):
        user = None
        if owner:
            user = get_user_model().objects.filter(username=owner).first()
            if user is None:
                raise BadInput(f"--owner: no user called {owner!r}.")
        try:
            competition = services.competition_import(path=path, owner=user, is_public=public)
        except BundleError as error:
            raise BadInput(str(error)) from None
        self.progress(f"Imported {competition.slug} ({competition.metric}).")
        return {"slug": competition.slug}
