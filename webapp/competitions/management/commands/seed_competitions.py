"""`manage.py seed_competitions [SLUG ...]` → {"created": [...], "existing": [...]}

Builds the bundled competitions from datasets inside installed packages and imports each one like an
uploaded bundle (public, no owner). Idempotent: competitions that exist already are left alone.
"""

import tempfile
from pathlib import Path

from django.conf import settings

from webapp.cli import BadInput, JsonCommand
from webapp.competitions import services
from webapp.competitions.bundled import BUNDLED, build_bundle
from webapp.competitions.models import Competition


class Command(JsonCommand):
    help = "Install the bundled competitions (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", help="only these (default: all)")

    def run(self, *, slugs: list[str], **_):
        known = {c.slug for c in BUNDLED}
        unknown = sorted(set(slugs) - known)
        if unknown:
            raise BadInput(
                f"SLUG: no bundled competition called {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}."
            )
        created, existing = [], []
        for slug in slugs or [c.slug for c in BUNDLED]:
            if Competition.objects.filter(slug=slug).exists():
                existing.append(slug)
                continue
            self.progress(f"Building {slug} ...")
            seed_one(slug)
            created.append(slug)
        return {"created": created, "existing": existing}


def seed_one(slug: str) -> Competition:
    root = Path(settings.DATA_DIR) / "staging"
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        bundle = build_bundle(slug, Path(tmp))
        return services.competition_import(
            path=bundle, owner=None, is_public=True, source=str(Competition.Source.BUNDLED)
        )
