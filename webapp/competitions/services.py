"""Writes for competitions: import a bundle (folder, .zip, MLE-bench folder or uploaded files).

Validate first, then store in one step: files are assembled in a staging folder on the same filesystem,
renamed into place inside the transaction that creates the row, and removed again if anything fails.
A rejected bundle leaves neither a row nor a file behind.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction

from webapp.competitions import storage
from webapp.competitions.archives import extract_bundle_zip
from webapp.competitions.bundles import BundleError, BundleLimits, ValidatedBundle, validate_bundle
from webapp.competitions.mlebench import convert_mlebench, is_mlebench_folder
from webapp.competitions.models import Competition

ROOT_FILES = {"competition.yaml", "description.md", "leaderboard.csv"}
PRIVATE_FILES = {"answers.csv"}
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def bundle_limits() -> BundleLimits:
    return BundleLimits(
        max_total_bytes=settings.PRACTICUM_BUNDLE_MAX_MB * 1024 * 1024,
        max_files=settings.PRACTICUM_BUNDLE_MAX_FILES,
        max_zip_ratio=float(settings.PRACTICUM_ZIP_MAX_RATIO),
    )


def competition_import(
    *, path: Path, owner: AbstractBaseUser | None, is_public: bool = False, source: str | None = None
) -> Competition:
    """Import the bundle at `path` (a folder, a .zip, or an MLE-bench folder). Raises BundleError."""
    if not path.exists():
        raise BundleError(f"{path}: no such file or folder.")
    with staging_dir() as staging:
        root, kind = unpack(path, staging)
        bundle = validate_bundle(root, bundle_limits())
        return store(bundle, staging=staging, owner=owner, is_public=is_public, source=source or kind)


def competition_import_upload(
    *, files: Iterable[UploadedFile], owner: AbstractBaseUser, is_public: bool = False
) -> Competition:
    """Import from the browser: one .zip, or the bundle's files picked one by one (placed by name)."""
    files = list(files)
    if not files:
        raise BundleError("Choose a .zip bundle or the bundle's files to upload.")
    with staging_dir() as staging:
        received = staging / "received"
        received.mkdir()
        if len(files) == 1 and (files[0].name or "").lower().endswith(".zip"):
            zip_path = received / "bundle.zip"
            save_upload(files[0], zip_path)
            return competition_import(path=zip_path, owner=owner, is_public=is_public)
        for upload in files:
            save_upload(upload, received / placed_name(upload.name or ""))
        return competition_import(path=received, owner=owner, is_public=is_public)


def placed_name(name: str) -> str:
    """Where a picked file goes in the bundle: answers in private/, the spec at the root, data in public/."""
    base = PurePosixPath(name.replace("\\", "/")).name
    if not base or base.startswith("."):
        raise BundleError(f"{name or '(unnamed)'}: not a usable file name.")
    if base in ROOT_FILES:
        return base
    return f"private/{base}" if base in PRIVATE_FILES else f"public/{base}"


def save_upload(upload: UploadedFile, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as sink:
        for chunk in upload.chunks():
            sink.write(chunk)


@contextmanager
def staging_dir():
    """A private folder on the data filesystem (so the final move is a rename), always removed."""
    root = Path(settings.DATA_DIR) / "staging"
    root.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(dir=root))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def unpack(path: Path, staging: Path) -> tuple[Path, str]:
    """The bundle folder to validate, and its source kind."""
    if path.is_file():
        if path.suffix.lower() != ".zip":
            raise BundleError(f"{path.name}: expected a folder or a .zip file.")
        unpacked = staging / "unpacked"
        unpacked.mkdir()
        path = extract_bundle_zip(path, unpacked, bundle_limits())
    if is_mlebench_folder(path):
        converted = staging / "converted"
        converted.mkdir()
        return convert_mlebench(path, converted), str(Competition.Source.MLEBENCH)
    return path, str(Competition.Source.BUNDLE)


def store(bundle: ValidatedBundle, *, staging: Path, owner, is_public: bool, source: str) -> Competition:
    spec = bundle.spec
    taken = BundleError(f"competition.yaml: the slug {spec.slug!r} is already taken.")
    if Competition.objects.filter(slug=spec.slug).exists() or storage.competition_dir(spec.slug).exists():
        raise taken
    assembled = assemble(bundle, staging / "assembled")
    final = storage.competition_dir(spec.slug)
    moved = False
    try:
        with transaction.atomic():
            competition = Competition.objects.create(
                slug=spec.slug,
                name=spec.name,
                owner=owner,
                is_public=is_public,
                source=source,
                description=bundle.description,
                metric=spec.metric,
                id_column=spec.id_column,
                target_columns=list(spec.target_columns),
                time_limit_s=spec.time_limit_s,
                memory_mb=spec.memory_mb,
                public_files=[vars(f) for f in bundle.public_files],
                baseline_score=bundle.baseline_score,
                leaderboard_scores=list(bundle.leaderboard_scores) if bundle.leaderboard_scores else None,
            )
            final.parent.mkdir(parents=True, exist_ok=True)
            assembled.rename(final)  # atomic on one filesystem; fails if another import got there first
            moved = True
    except IntegrityError:
        raise taken from None
    except BaseException:
        if moved:  # the row did not commit: take the files back out
            shutil.rmtree(final, ignore_errors=True)
        raise
    return competition


def assemble(bundle: ValidatedBundle, target: Path) -> Path:
    """Copy the validated files into `target`, laid out as `storage` expects."""
    shutil.copytree(bundle.root / "public", target / "public")
    (target / "private").mkdir()
    shutil.copyfile(bundle.answers_path, target / "private" / "answers.csv")
    if bundle.leaderboard_path:
        shutil.copyfile(bundle.leaderboard_path, target / "private" / "leaderboard.csv")
    shutil.copyfile(bundle.root / "competition.yaml", target / "competition.yaml")
    shutil.copyfile(bundle.root / "description.md", target / "description.md")
    restrict_to_owner(target / "private")
    return target


def restrict_to_owner(folder: Path) -> None:
    """Only the worker's own user may enter `folder` (0700) and read its files (0600).

    Without bubblewrap the sandbox runs programs under uids of their own on the host's filesystem
    (`rl_core.sandbox`'s "rlimits" level), so the answers must not be world-readable. The staging folder
    is already private (mkdtemp), so there is no moment at which the files are open to others.
    """
    for path in folder.iterdir():
        path.chmod(PRIVATE_FILE_MODE)
    folder.chmod(PRIVATE_DIR_MODE)
