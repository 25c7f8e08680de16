"""Reads for competitions. Visibility lives here, once: pages, API, files and websockets all ask it.

The public files are listed from what the import recorded (`Competition.public_files`), folder by folder,
never by walking the disk: a competition may hold tens of thousands of files.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import pandas as pd
from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

from rl_core.grading import GradingSpec
from rl_core.leaderboard import MedalThresholds, medal_thresholds
from rl_core.metrics import Metric, get_metric
from webapp.competitions import storage
from webapp.competitions.models import Competition

if TYPE_CHECKING:
    from rl_core.validation import ValidationSettings


def competitions_visible_to(*, user: User | AnonymousUser) -> QuerySet[Competition]:
    """Public competitions, plus the user's own; staff see everything."""
    if user.is_authenticated and user.is_staff:
        return Competition.objects.all()
    if user.is_authenticated:
        return Competition.objects.filter(Q(is_public=True) | Q(owner=user))
    return Competition.objects.filter(is_public=True)


def competition_get_visible(*, slug: str, user: User | AnonymousUser) -> Competition | None:
    return competitions_visible_to(user=user).filter(slug=slug).first()


def competition_get(*, slug: str) -> Competition | None:
    return Competition.objects.filter(slug=slug).first()


def competition_metric(*, competition: Competition) -> Metric:
    return get_metric(competition.metric)


def competition_public_file(*, competition: Competition, name: str) -> Path | None:
    return storage.public_file(competition.slug, name)


def competition_preview(
    *, competition: Competition, name: str = "train.csv", rows: int = 8
) -> pd.DataFrame | None:
    """The first rows of a public CSV, for the detail page."""
    path = storage.public_file(competition.slug, name)
    if path is None:
        return None
    return pd.read_csv(path, nrows=rows)


def competition_medals(*, competition: Competition) -> MedalThresholds | None:
    if not competition.leaderboard_scores:
        return None
    metric = get_metric(competition.metric)
    return medal_thresholds(competition.leaderboard_scores, higher_is_better=metric.higher_is_better)


def competition_grading_spec(*, competition: Competition) -> GradingSpec:
    return GradingSpec(
        metric=competition.metric,
        id_column=competition.id_column,
        target_columns=tuple(competition.target_columns),
    )


def competition_validation_refusal(
    *, competition: Competition, settings: ValidationSettings | None = None
) -> str | None:
    """Why no validation split of `competition` can be made (reward source "validation", issue 28), in one
    sentence; None when one can. Reads only its public files (rl_core.validation.validation_plan), and only
    where this machine holds them (a worker elsewhere says so when the run starts)."""
    public = storage.public_dir(competition.slug)
    if not public.is_dir():
        return None
    grading = competition_grading_spec(competition=competition)
    return _validation_refusal(public, public.stat().st_mtime_ns, grading, settings)


@functools.lru_cache(maxsize=256)
def _validation_refusal(
    public: Path, mtime_ns: int, grading: GradingSpec, settings: ValidationSettings | None
) -> str | None:
    """`validation_plan`'s refusal, once per folder as it stands (a 54,000-row table takes 0.2 s to check;
    competition pages ask on every view)."""
    from rl_core.validation import Refusal, validation_plan

    plan = validation_plan(public, grading, settings)
    return plan.reason if isinstance(plan, Refusal) else None


KINDS_SHOWN = 5  # extensions named in a folder's summary; the rest are counted
IMAGE_KINDS = frozenset({"png", "jpg", "jpeg", "gif", "webp"})
"""Extensions a browser shows itself: these files preview in the page and open inline."""


@dataclass(frozen=True)
class ListedFile:
    """One public file, as the import recorded it."""

    path: str  # inside public/, e.g. "images/train/1.png"
    size_bytes: int
    rows: int | None  # data rows of a CSV, records of JSON; None for other files
    is_folder = False

    @property
    def name(self) -> str:
        return PurePosixPath(self.path).name

    @property
    def kind(self) -> str:
        return file_kind(self.path)

    @property
    def is_image(self) -> bool:
        return self.kind in IMAGE_KINDS


@dataclass(frozen=True)
class ListedFolder:
    """A folder under public/, summarised over every file beneath it (in subfolders too)."""

    path: str  # inside public/, e.g. "images/train"; "" for public/ itself
    files: int
    size_bytes: int
    kinds: tuple[tuple[str, int], ...]  # (extension without the dot, or "", files), most files first
    is_folder = True

    @property
    def name(self) -> str:
        return PurePosixPath(self.path).name

    @property
    def kinds_label(self) -> str:
        """The kinds of files, most first, at most KINDS_SHOWN named: "jpg × 1800, csv × 2"."""
        named = ", ".join(f"{kind or 'no extension'} × {count}" for kind, count in self.kinds[:KINDS_SHOWN])
        hidden = len(self.kinds) - KINDS_SHOWN
        return f"{named}, and {hidden} more" if hidden > 0 else named


@dataclass(frozen=True)
class FolderListing:
    """What one folder holds: its own files (by name), then its subfolders (by name), each summarised."""

    folder: ListedFolder
    files: tuple[ListedFile, ...]
    subfolders: tuple[ListedFolder, ...]

    @property
    def entries(self) -> list[ListedFile | ListedFolder]:
        """The rows to show, files first: the top-level train.csv, test.csv ... lead the page."""
        return [*self.files, *self.subfolders]

    @property
    def crumbs(self) -> list[tuple[str, str]]:
        """(name, path) of each folder from public/ down to this one's parent, to link back up."""
        parts = PurePosixPath(self.folder.path).parts
        return [("public", "")] + [(parts[i - 1], "/".join(parts[:i])) for i in range(1, len(parts))]


def competition_folder_listing(*, competition: Competition, folder: str = "") -> FolderListing | None:
    """The files directly in `folder` (a path inside public/, "" for public/ itself) and a summary of each
    subfolder; None when no public file lies under `folder`.

    One pass over the recorded file list, with string operations only (50,000 files: about 60 ms here).
    """
    path = folder.strip("/")
    prefix = f"{path}/" if path else ""
    files: list[ListedFile] = []
    beneath: dict[str, Tally] = {}
    for record in competition.public_files:
        name = record["name"]
        if not name.startswith(prefix):
            continue
        slash = name.find("/", len(prefix))
        if slash < 0:
            files.append(ListedFile(path=name, size_bytes=record["size_bytes"], rows=record["rows"]))
        else:
            beneath.setdefault(name[:slash], Tally()).add(name, record["size_bytes"])
    if path and not files and not beneath:
        return None
    subfolders = tuple(beneath[sub].summary(sub) for sub in sorted(beneath, key=natural_key))
    files.sort(key=lambda f: natural_key(f.path))
    return FolderListing(
        folder=folder_summary(path, files, subfolders), files=tuple(files), subfolders=subfolders
    )


class Tally:
    """Files, bytes and extensions of a folder, counted as the file list is read."""

    def __init__(self) -> None:
        self.files = 0
        self.size_bytes = 0
        self.kinds: Counter[str] = Counter()

    def add(self, name: str, size_bytes: int) -> None:
        self.files += 1
        self.size_bytes += size_bytes
        self.kinds[file_kind(name)] += 1

    def summary(self, path: str) -> ListedFolder:
        kinds = tuple(sorted(self.kinds.items(), key=lambda kind: (-kind[1], kind[0])))
        return ListedFolder(path=path, files=self.files, size_bytes=self.size_bytes, kinds=kinds)


def folder_summary(path: str, files: list[ListedFile], subfolders: tuple[ListedFolder, ...]) -> ListedFolder:
    """The folder itself: its own files and everything its subfolders hold."""
    tally = Tally()
    for file in files:
        tally.add(file.path, file.size_bytes)
    for sub in subfolders:
        tally.files += sub.files
        tally.size_bytes += sub.size_bytes
        tally.kinds.update(dict(sub.kinds))
    return tally.summary(path)


DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders the numbers inside names by value, as a file manager does.

    >>> sorted(["10.png", "2.png", "1.png", "b.csv", "100.png"], key=natural_key)
    ['1.png', '2.png', '10.png', '100.png', 'b.csv']
    """
    parts = (part for part in DIGITS.split(name) if part)
    return tuple((0, int(part)) if part.isdigit() else (1, part.lower()) for part in parts)


def file_kind(name: str) -> str:
    """A file's extension without the dot, in lower case; "" for a name without one.

    >>> file_kind("images/train/1.PNG"), file_kind("README"), file_kind("config/.env")
    ('png', '', '')
    """
    stem, dot, extension = name.rpartition("/")[2].rpartition(".")
    return extension.lower() if dot and stem else ""
