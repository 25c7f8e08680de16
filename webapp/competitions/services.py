"""Writes for competitions: import a bundle (folder, .zip, MLE-bench folder or uploaded files).

Validate first, then store in one step: files are assembled in a staging folder on the same filesystem,
renamed into place inside the transaction that creates the row, and removed again if anything fails.
A rejected bundle leaves neither a row nor a file behind.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.db import IntegrityError, transaction

from webapp.competitions import storage
from webapp.competitions.importing.archives import extract_bundle_zip
from webapp.competitions.importing.bundles import BundleError, BundleLimits, ValidatedBundle, validate_bundle
from webapp.competitions.importing.mlebench import convert_mlebench, is_mlebench_folder
from webapp.competitions.models import Competition

ROOT_FILES = {"competition.yaml", "description.md", "leaderboard.csv"}
PRIVATE_FILES = {"answers.csv"}
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
STAGING_PARTS = r"(?:/(?:received|unpacked|converted|assembled))?/?"  # the folders staging makes


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
    with staging_dir() as staging, user_paths_only(staging):
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
    with staging_dir() as staging, user_paths_only(staging):
        received = staging / "received"
        received.mkdir()
        if len(files) == 1 and (files[0].name or "").lower().endswith(".zip"):
            zip_path = received / zip_name(files[0].name or "")  # rejections name the user's own file
            save_upload(files[0], zip_path)
            return competition_import(path=zip_path, owner=owner, is_public=is_public)
        for upload in files:
            save_upload(upload, received / placed_name(upload.name or ""))
        return competition_import(path=received, owner=owner, is_public=is_public)


def competition_import_received(
    *, path: Path, name: str, owner: AbstractBaseUser, is_public: bool = False
) -> Competition:
    """Import a .zip that arrived outside a form (a chunked upload): moved in, named as the user named it."""
    with staging_dir() as staging, user_paths_only(staging):
        zip_path = staging / "received" / zip_name(name)
        zip_path.parent.mkdir()
        shutil.move(path, zip_path)
        return competition_import(path=zip_path, owner=owner, is_public=is_public)


def zip_name(name: str) -> str:
    """The uploaded zip's own file name (no folders), to be saved under in staging."""
    base = PurePosixPath(name.replace("\\", "/")).name
    return base if base.lower().endswith(".zip") and not base.startswith(".") else "bundle.zip"


def placed_name(name: str) -> str:
    """Where a picked file goes in the bundle: answers in private/, the spec at the root, data in public/."""
    base = PurePosixPath(name.replace("\\", "/")).name
    if not base or base.startswith("."):
        raise BundleError(f"{name or '(unnamed)'}: not a usable file name.")
    if base in ROOT_FILES:
        return base
    return f"private/{base}" if base in PRIVATE_FILES else f"public/{base}"


def save_upload(upload: UploadedFile, target: Path) -> None:
    """Put an upload at `target`: Django's temporary file is moved (a rename on the data filesystem,
    see FILE_UPLOAD_TEMP_DIR), a small in-memory one is written out; neither is read whole into memory."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(upload, TemporaryUploadedFile):
        shutil.move(upload.temporary_file_path(), target)  # Django's clean-up ignores the missing file
        return
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


@contextmanager
def user_paths_only(staging: Path) -> Iterator[None]:
    """Rejections name files by their path inside the user's bundle, never by where staging put them.

    Messages from elsewhere (pandas, rl_core's leaderboard reader, the MLE-bench converter) may quote a
    full path; the staging folder and the subfolder it was unpacked into are cut out of them here.
    """
    try:
        yield
    except BundleError as error:
        message = re.sub(re.escape(str(staging)) + STAGING_PARTS, "", str(error))
        raise BundleError(message) from None


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
    assembled = assemble(bundle, staging / "assembled", staging)
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


def assemble(bundle: ValidatedBundle, target: Path, staging: Path) -> Path:
    """Put the validated files in `target`, laid out as `storage` expects.

    The public files, which may be many GB, are moved when they were unpacked into `staging` (a rename,
    no copy); a folder the user pointed at is copied, never changed.
    """
    public = bundle.root / "public"
    if public.is_relative_to(staging):
        target.mkdir()
        public.rename(target / "public")
    else:
        shutil.copytree(public, target / "public")
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
