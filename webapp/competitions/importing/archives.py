"""Unpack an uploaded .zip bundle safely into a private temporary folder.

Every member is checked before a byte is written: no absolute paths, no `..`, no symbolic links or device
files (only regular files and folders), at most `max_files` members, declared sizes within the limits and
no member (nor the whole zip) compressed more than `max_zip_ratio`:1. Members are then streamed to disk one
at a time, a MiB at a time (never a whole member in memory), and the bytes actually written are counted,
so a member that lies about its size in the header still cannot exceed the limits. Every rejection names
the member by its path inside the zip, or the zip by the name the user gave it.
"""

from __future__ import annotations

import shutil
import stat
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from webapp.competitions.importing.bundles import BundleError, BundleLimits, human_bytes

CHUNK_BYTES = 1 << 20


def extract_bundle_zip(zip_path: Path, dest: Path, limits: BundleLimits) -> Path:
    """Extract `zip_path` into the empty folder `dest`; return the bundle root inside it.

    A zip whose members all sit in one top-level folder has that folder as its root.
    """
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError):
        raise BundleError(f"{zip_path.name}: not a readable .zip file.") from None
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        check_members(members, zip_path.stat().st_size, limits)
        written = 0
        for member in members:
            written += extract_member(archive, member, dest, limits.max_total_bytes - written)
    return bundle_root(dest)


def check_members(members: list[zipfile.ZipInfo], archive_bytes: int, limits: BundleLimits) -> None:
    if len(members) > limits.max_files:
        raise BundleError(f"The zip has {len(members)} files; at most {limits.max_files} are allowed.")
    declared = 0
    for member in members:
        check_member_name(member)
        declared += member.file_size
        if member.compress_size and member.file_size / member.compress_size > limits.max_zip_ratio:
            raise BundleError(
                f"{member.filename}: compresses {member.file_size // max(member.compress_size, 1)}:1, "
                f"more than the {limits.max_zip_ratio:.0f}:1 allowed (a zip bomb?)."
            )
    if declared > limits.max_total_bytes:
        raise BundleError(
            f"The zip unpacks to {human_bytes(declared)}; "
            f"at most {human_bytes(limits.max_total_bytes)} is allowed."
        )
    if archive_bytes and declared / archive_bytes > limits.max_zip_ratio:
        raise BundleError(f"The zip unpacks to {declared // archive_bytes}:1 of its size (a zip bomb?).")


def check_member_name(member: zipfile.ZipInfo) -> None:
    name = member.filename
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or (len(name) > 1 and name[1] == ":"):
        raise BundleError(f"{name}: absolute paths are not allowed in a bundle.")
    if ".." in path.parts:
        raise BundleError(f"{name}: paths with '..' are not allowed in a bundle.")
    mode = member.external_attr >> 16
    if member.flag_bits & 0x1:
        raise BundleError(f"{name}: encrypted files are not allowed in a bundle.")
    if stat.S_ISLNK(mode):
        raise BundleError(f"{name}: symbolic links are not allowed in a bundle.")
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):  # 0: made where modes are not recorded
        raise BundleError(f"{name}: device files, pipes and sockets are not allowed in a bundle.")


def extract_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo, dest: Path, budget: int) -> int:
    """Stream one member to disk, stopping once more than `budget` bytes come out; returns bytes written."""
    target = dest / PurePosixPath(member.filename.replace("\\", "/"))
    written = 0
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with archive.open(member) as source, open(target, "xb") as sink:
            while chunk := source.read(CHUNK_BYTES):
                written += len(chunk)
                if written > budget or written > member.file_size:
                    raise BundleError(f"{member.filename}: unpacks to more bytes than its header declares.")
                sink.write(chunk)
    except (zipfile.BadZipFile, EOFError, zlib.error):
        raise BundleError(f"{member.filename}: the zip is corrupt here.") from None
    except NotImplementedError:
        raise BundleError(
            f"{member.filename}: compressed with a method that cannot be read (use deflate or store)."
        ) from None
    except FileExistsError:
        raise BundleError(f"{member.filename}: the zip holds this file twice.") from None
    except OSError as error:  # disk full, a file where a folder should be ...: no server path in the reason
        raise BundleError(f"{member.filename}: could not be unpacked ({error.strerror}).") from None
    return written


def bundle_root(dest: Path) -> Path:
    """`dest`, or its only child folder when the zip wrapped the bundle in one (ignoring macOS litter)."""
    shutil.rmtree(dest / "__MACOSX", ignore_errors=True)
    children = [p for p in dest.iterdir() if not p.name.startswith(".")]
    if len(children) == 1 and children[0].is_dir() and not (dest / "competition.yaml").exists():
        return children[0]
    return dest
