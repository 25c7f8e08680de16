"""What a competition's public folder holds, read without the answers: files, JSON records, images.

Real competitions ship more than two CSV tables: JSON records (random-acts-of-pizza), folders of images
(plant-pathology, leaf-classification), thousands of small files. This module reads them for the
features (`rl_core.features`) and describes them for prompts:

- `list_files`: every file under the folder with its size, in name order;
- `file_listing`: that list as text within a line budget, folders of many files collapsed to one line;
- `read_records` and `flatten_records`: JSON (a list of objects) or JSON Lines, flattened to a table
  whose nested objects become ``parent.child`` columns and whose lists become space-joined text;
- `image_files`, `image_summary`: image files found by suffix, and per folder their count, formats,
  pixel sizes and colour modes (from the first `IMAGE_PROBE` images of each folder, opened with Pillow);
- `describe_public_files`: all of that as one text for an LM prompt, cut to a character budget.

Not done: archives inside the folder are listed, not opened; audio and video are listed as plain files.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"})
RECORD_SUFFIXES = (".json", ".jsonl")
IMAGE_PROBE = 20
"""Images opened per folder to report sizes and modes; the others are counted, not opened."""
LISTED_PER_FOLDER = 5
"""A folder with more files than this is listed as one line (count, suffixes, total size)."""
RECORDS_SHOWN = 2
RECORD_CHARS = 600
"""The first `RECORDS_SHOWN` records of each JSON file are shown, each cut to this many characters."""


def list_files(public_dir: Path) -> list[tuple[str, int]]:
    """[(path relative to `public_dir` with / separators, size in bytes), ...] of every file, sorted."""
    root = Path(public_dir)
    return sorted((p.relative_to(root).as_posix(), p.stat().st_size) for p in root.rglob("*") if p.is_file())


def human_size(n_bytes: float) -> str:
    """A byte count for people.

    >>> human_size(512), human_size(2048), human_size(3.5 * 1024**3)
    ('512 B', '2.0 KB', '3.5 GB')
    """
    for unit in ("B", "KB", "MB", "GB"):
        if n_bytes < 1024 or unit == "GB":
            return f"{n_bytes:.0f} {unit}" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    raise AssertionError("unreachable")


def _folder(name: str) -> str:
    return name.rsplit("/", 1)[0] + "/" if "/" in name else ""


def file_listing(files: Iterable[tuple[str, int]], max_lines: int = 40) -> str:
    """Files as lines "name (size)"; a folder holding more than `LISTED_PER_FOLDER` files becomes one line
    "folder/ (N files: .png; total size)", and past `max_lines` lines the rest is counted.

    >>> print(file_listing([("train.csv", 2048), ("img/1.png", 10), ("img/2.png", 10)]))
    train.csv (2.0 KB)
    img/1.png (10 B)
    img/2.png (10 B)
    """
    by_folder: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for name, size in files:
        by_folder[_folder(name)].append((name, size))
    lines = []
    for folder in sorted(by_folder):
        entries = by_folder[folder]
        if folder and len(entries) > LISTED_PER_FOLDER:
            suffixes = Counter(Path(name).suffix.lower() or "(none)" for name, _ in entries)
            kinds = ", ".join(f"{suffix} x {count}" for suffix, count in suffixes.most_common(4))
            total = human_size(sum(size for _, size in entries))
            lines.append(f"{folder} ({len(entries)} files: {kinds}; {total} in all)")
        else:
            lines += [f"{name} ({human_size(size)})" for name, size in entries]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"... and {len(lines) - max_lines} more entries"]
    return "\n".join(lines)


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON file holding a list of objects, or of a JSON Lines file (one object a line).

    Raises:
        ValueError: naming the file, when it holds something else.
    """
    text = Path(path).read_text(encoding="utf-8")
    if Path(path).suffix.lower() == ".jsonl":
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        records = json.loads(text)
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ValueError(f"{Path(path).name}: expected a list of JSON objects (records).")
    return records


def _plain_cell(value: Any) -> Any:
    """A list as space-joined text (its objects as JSON), anything else unchanged."""
    if isinstance(value, list):
        return " ".join(json.dumps(v) if isinstance(v, dict | list) else str(v) for v in value)
    return value


def flatten_records(records: list[dict[str, Any]]) -> pd.DataFrame:
    """A table of `records`: nested objects become ``parent.child`` columns, lists space-joined text.

    >>> flatten_records([{"id": 1, "user": {"age": 30}, "tags": ["a", "b"]}]).to_dict("records")
    [{'id': 1, 'tags': 'a b', 'user.age': 30}]
    """
    frame = pd.json_normalize(records, sep=".")
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].map(_plain_cell)
    return frame[sorted(frame.columns)]


def records_path(public_dir: Path, stem: str) -> Path | None:
    """public_dir/<stem>.json or <stem>.jsonl, whichever exists (None when neither does)."""
    for suffix in RECORD_SUFFIXES:
        path = Path(public_dir) / f"{stem}{suffix}"
        if path.is_file():
            return path
    return None


def image_files(public_dir: Path) -> list[Path]:
    """Every image file under `public_dir` (by suffix), sorted."""
    return sorted(
        p for p in Path(public_dir).rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()
    )


def _probe(paths: list[Path]) -> tuple[Counter[str], Counter[str]]:
    """(pixel sizes "WxH", colour modes) of the first `IMAGE_PROBE` readable images of `paths`."""
    from PIL import Image  # only where images are described

    sizes: Counter[str] = Counter()
    modes: Counter[str] = Counter()
    for path in paths[:IMAGE_PROBE]:
        try:
            with Image.open(path) as image:
                sizes[f"{image.width}x{image.height}"] += 1
                modes[image.mode] += 1
        except OSError:
            modes["unreadable"] += 1
    return sizes, modes


def image_summary(public_dir: Path) -> list[dict[str, Any]]:
    """Per folder holding images: ``folder`` (relative, "" for the top), ``count``, ``formats``
    ({suffix: count}), ``sizes`` and ``modes`` (of the probed images, most common first)."""
    root = Path(public_dir)
    by_folder: dict[str, list[Path]] = defaultdict(list)
    for path in image_files(root):
        by_folder[_folder(path.relative_to(root).as_posix())].append(path)
    summary = []
    for folder, paths in sorted(by_folder.items()):
        sizes, modes = _probe(paths)
        summary.append({
            "folder": folder,
            "count": len(paths),
            "formats": dict(Counter(p.suffix.lower() for p in paths).most_common()),
            "sizes": dict(sizes.most_common()),
            "modes": dict(modes.most_common()),
        })  # fmt: skip
    return summary


def _image_lines(public_dir: Path) -> list[str]:
    lines = []
    for entry in image_summary(public_dir):
        formats = ", ".join(f"{suffix} x {n}" for suffix, n in entry["formats"].items())
        sizes = ", ".join(entry["sizes"]) or "unreadable"
        modes = ", ".join(entry["modes"])
        where = entry["folder"] or "the top folder"
        lines.append(
            f"{where}: {entry['count']} images ({formats}); pixel sizes of the first "
            f"{min(entry['count'], IMAGE_PROBE)}: {sizes}; colour modes: {modes}"
        )
    return lines


def _record_lines(public_dir: Path, files: list[tuple[str, int]]) -> list[str]:
    lines = []
    for name, _ in files:
        if "/" in name or not name.lower().endswith(RECORD_SUFFIXES):
            continue
        try:
            records = read_records(Path(public_dir) / name)
        except (ValueError, UnicodeDecodeError) as error:
            lines.append(f"{name}: not a list of records ({str(error)[:80]})")
            continue
        keys = sorted({key for record in records for key in record})
        lines.append(f"{name}: {len(records)} records with keys {', '.join(keys)}. The first ones:")
        for record in records[:RECORDS_SHOWN]:
            shown = json.dumps(record, ensure_ascii=False)
            lines.append(shown if len(shown) <= RECORD_CHARS else shown[:RECORD_CHARS] + " ...")
    return lines


def describe_public_files(public_dir: Path, tables: str = "", budget_chars: int = 2500) -> str:
    """The public folder for a prompt: the file listing with sizes, `tables` (the head of the CSV tables,
    from `rl_core.features.data_preview`), the first records of each top-level JSON file, and the images
    per folder; each part is cut so the whole stays within `budget_chars` (the listing and images first,
    since they say what exists)."""
    files = list_files(public_dir)
    parts = [("Files under ./input/:", file_listing(files))]
    images = _image_lines(public_dir)
    if images:
        parts.append(("Images:", "\n".join(images)))
    records = _record_lines(public_dir, files)
    if records:
        parts.append(("JSON records:", "\n".join(records)))
    if tables:
        parts.append(("Tables (first rows):", tables))
    text, left = [], budget_chars
    for title, body in parts:
        block = f"{title}\n{body}"
        if len(block) > left:
            block = block[: max(0, left - 16)] + "\n[... truncated]"
        text.append(block)
        left -= len(block) + 2
        if left <= 40:
            break
    return "\n\n".join(text)
