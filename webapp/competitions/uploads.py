"""Chunked uploads of large .zip bundles from the browser.

Daphne queues a whole request body in memory before Django reads it, so a multi-GB zip cannot come in one
request. The upload page sends it in parts of `CHUNK_BYTES` instead; each part is appended to a file under
`<data dir>/uploads/<id>/`, so no process holds more than one part, and the page shows the bytes sent.

```
POST upload/parts/                   name, size       → {"id", "chunk_bytes"}
POST upload/parts/<id>/?offset=N     the part's bytes → {"received": bytes so far}
POST upload/parts/<id>/finish        is_public        → {"url"} or 400 {"errors": [...]}
```
A part must start where the file ends (`offset`), so a part sent twice is refused rather than appended
twice. The finished file is imported like any uploaded .zip (`services.competition_import_received`), and
its folder is removed whatever the outcome; folders of uploads abandoned for `STALE_S` are removed when
the next upload starts.
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from webapp.competitions import services, storage
from webapp.competitions.importing.bundles import BundleError, human_bytes
from webapp.competitions.models import Competition

CHUNK_BYTES = 8 * 1024 * 1024
READ_BYTES = 64 * 1024
STALE_S = 24 * 3600
ID_ALPHABET = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


@dataclass(frozen=True)
class ChunkedUpload:
    id: str
    folder: Path
    name: str  # the user's file name, used in every message about it
    size: int  # bytes the browser announced
    owner_id: int

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def received(self) -> int:
        return self.data.stat().st_size


def upload_start(*, owner, name: str, size: int) -> ChunkedUpload:
    """Open an upload of `size` bytes of the .zip called `name`. Raises BundleError."""
    if not name.lower().endswith(".zip"):
        raise BundleError(f"{name or '(unnamed)'}: only a .zip bundle can be uploaded in parts.")
    limit = services.bundle_limits().max_total_bytes
    if not 0 < size <= limit:
        raise BundleError(
            f"{name}: the file is {human_bytes(size)}; at most {human_bytes(limit)} is allowed."
        )
    prune_stale_uploads()
    upload_id = secrets.token_urlsafe(24)
    folder = storage.uploads_dir() / upload_id
    folder.mkdir(parents=True, mode=0o700)
    (folder / "data").touch()
    (folder / "meta.json").write_text(json.dumps({"name": name, "size": size, "owner_id": owner.pk}))
    return ChunkedUpload(id=upload_id, folder=folder, name=name, size=size, owner_id=owner.pk)


def upload_get(*, upload_id: str, owner) -> ChunkedUpload | None:
    """The open upload `upload_id` of `owner`, or None (unknown, malformed or someone else's)."""
    if not upload_id or not set(upload_id) <= ID_ALPHABET:
        return None
    folder = storage.uploads_dir() / upload_id
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    if meta.get("owner_id") != owner.pk:
        return None
    return ChunkedUpload(id=upload_id, folder=folder, name=meta["name"], size=meta["size"], owner_id=owner.pk)


def upload_append(*, upload: ChunkedUpload, offset: int, stream: BinaryIO) -> int:
    """Append one part (at most CHUNK_BYTES, read from `stream` a little at a time); returns bytes so far."""
    received = upload.received
    if offset != received:
        raise BundleError(f"{upload.name}: expected the part at byte {received}, not at byte {offset}.")
    with open(upload.data, "ab") as sink:
        while chunk := stream.read(READ_BYTES):
            received += len(chunk)
            if received > upload.size or received - offset > CHUNK_BYTES:
                sink.truncate(offset)
                raise BundleError(f"{upload.name}: more bytes arrived than the upload announced.")
            sink.write(chunk)
    return received


def upload_finish(*, upload: ChunkedUpload, owner, is_public: bool) -> Competition:
    """Import the uploaded .zip (which must be complete), then remove the upload. Raises BundleError."""
    try:
        if upload.received != upload.size:
            raise BundleError(
                f"{upload.name}: only {human_bytes(upload.received)} of {human_bytes(upload.size)} "
                "arrived; upload it again."
            )
        return services.competition_import_received(
            path=upload.data, name=upload.name, owner=owner, is_public=is_public
        )
    finally:
        shutil.rmtree(upload.folder, ignore_errors=True)


def prune_stale_uploads(now: float | None = None) -> None:
    """Remove the folders of uploads nobody has added to for STALE_S."""
    root = storage.uploads_dir()
    now = time.time() if now is None else now
    for folder in root.iterdir() if root.is_dir() else ():
        data = folder / "data"
        if folder.is_dir() and data.exists() and now - data.stat().st_mtime > STALE_S:
            shutil.rmtree(folder, ignore_errors=True)
