"""Writes for a competition made from one labelled table: the uploaded table's draft, and the competition.

`competition_from_table` checks the choices, writes the bundle into a staging folder (`tables.bundle`) and
hands it to the one import service (`services.competition_import`), which validates it again and stores
it: a rejected table or choice stores nothing.

The browser flow takes two requests (upload, then choose and create), so the uploaded table waits in
between as a draft: `<DATA_DIR>/table_drafts/<token>/`, holding the file and `draft.json` (its owner and
its name). A draft is removed once its competition is made; drafts older than `DRAFT_KEEP_S` are removed
whenever a new table is uploaded. A file that cannot be read as a table never becomes a draft.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import time
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile

from webapp.competitions import services
from webapp.competitions.importing.bundles import SLUG_RE
from webapp.competitions.models import Competition
from webapp.competitions.tables.bundle import SPLIT_SEED, Written, write_bundle
from webapp.competitions.tables.files import Table, TableError, read_table
from webapp.competitions.tables.proposal import Choices, Plan, check_choices

DRAFT_KEEP_S = 24 * 3600
TOKEN_RE = re.compile(r"^[0-9a-f]{32}$")
TABLE_SUFFIXES = (".csv", ".json", ".jsonl", ".ndjson")


def competition_from_table(
    *,
    table: Table,
    choices: Choices,
    slug: str,
    name: str,
    owner: AbstractBaseUser | None,
    is_public: bool = False,
    seed: int = SPLIT_SEED,
) -> tuple[Competition, Plan, Written]:
    """Make and store the competition; TableError (a BundleError) naming what is wrong stores nothing."""
    check_slug(slug)
    if not name.strip():
        raise TableError("The competition needs a name.")
    plan = check_choices(table, choices)
    with services.staging_dir() as staging:
        written = write_bundle(table, plan, staging / slug, slug=slug, name=name.strip(), seed=seed)
        competition = services.competition_import(path=staging / slug, owner=owner, is_public=is_public)
    return competition, plan, written


def check_slug(slug: str) -> None:
    if not SLUG_RE.match(slug) or len(slug) > 80:
        raise TableError(f"The slug {slug!r} must be lowercase letters, digits and dashes (at most 80).")
    if Competition.objects.filter(slug=slug).exists():
        raise TableError(f"The slug {slug!r} is already taken; choose another.")


def proposed_slug(file_name: str) -> str:
    """A slug made from the table's file name ("Penguins 2024.csv" -> "penguins-2024").

    >>> proposed_slug("Penguins 2024.csv"), proposed_slug("___.json")
    ('penguins-2024', 'table')
    """
    stem = PurePosixPath(file_name.replace("\\", "/")).stem.lower()
    return re.sub(r"[^a-z0-9]+", "-", stem).strip("-")[:80].strip("-") or "table"


# -- drafts ----------------------------------------------------------------------------------------------


def drafts_root() -> Path:
    return Path(settings.DATA_DIR) / "table_drafts"


def draft_create(*, upload: UploadedFile, owner: AbstractBaseUser) -> str:
    """Keep an uploaded table for the next request and return its token; TableError if it is no table."""
    drafts_expire()
    name = PurePosixPath((upload.name or "table.csv").replace("\\", "/")).name or "table.csv"
    suffix = PurePosixPath(name).suffix.lower()
    token = secrets.token_hex(16)
    folder = drafts_root() / token
    folder.mkdir(parents=True)
    try:
        services.save_upload(upload, folder / f"table{suffix if suffix in TABLE_SUFFIXES else ''}")
        read_table(draft_file(folder), name)  # refuse now what cannot be read later
        (folder / "draft.json").write_text(json.dumps({"owner": owner.pk, "name": name}), encoding="utf-8")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return token


def draft_table(*, token: str, owner: AbstractBaseUser) -> Table | None:
    """The draft's table, or None when there is no such draft of this owner."""
    folder = drafts_root() / token
    if not TOKEN_RE.match(token) or not (folder / "draft.json").is_file():
        return None
    meta = json.loads((folder / "draft.json").read_text(encoding="utf-8"))
    if meta.get("owner") != owner.pk:
        return None
    return read_table(draft_file(folder), meta["name"])


def draft_delete(*, token: str) -> None:
    if TOKEN_RE.match(token):
        shutil.rmtree(drafts_root() / token, ignore_errors=True)


def draft_file(folder: Path) -> Path:
    return next(p for p in folder.iterdir() if p.name.startswith("table"))


def drafts_expire(now: float | None = None) -> None:
    """Remove drafts nobody finished within DRAFT_KEEP_S."""
    root = drafts_root()
    if not root.is_dir():
        return
    cutoff = (now or time.time()) - DRAFT_KEEP_S
    for folder in root.iterdir():
        if folder.is_dir() and folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
