"""Check the public files of a bundle that have a format we can parse: JSON and JSON Lines.

A `*.jsonl` / `*.ndjson` file must hold one JSON value per non-blank line; a `*.json` file one JSON value.
Both are read as a stream, so a multi-GB file is checked in bounded memory: JSON Lines a line at a time,
a JSON array an item at a time (`iter_json_array`). A top-level JSON object is parsed whole (real
competitions ship objects of metadata, not of data; an object of many GB would take that much memory).
Other files (text, images, anything) are accepted as they are. Every rejection becomes one `BundleError`
sentence naming the file by its path inside the bundle (`bundles` adds the name).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

JSON_SUFFIXES = (".json",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
CHUNK_CHARS = 1 << 20
WHITESPACE = re.compile(r"[ \t\n\r]*")
DECODER = json.JSONDecoder()


class FormatError(ValueError):
    """A file does not parse as its suffix says; the message follows "name: "."""


def count_records(path: Path) -> int | None:
    """Records in a JSON Lines file or items in a JSON array; None for any other file (or JSON object).

    Raises FormatError when a JSON or JSONL file does not parse.
    """
    suffix = path.suffix.lower()
    if suffix not in JSON_SUFFIXES + JSONL_SUFFIXES:
        return None
    try:
        with open(path, encoding="utf-8-sig") as text:
            return count_jsonl(text) if suffix in JSONL_SUFFIXES else count_json(text)
    except UnicodeDecodeError:
        raise FormatError("not UTF-8 text.") from None


def count_jsonl(text: TextIO) -> int:
    """Non-blank lines, each of which must be one JSON value."""
    records = 0
    for number, line in enumerate(text, start=1):
        if not line.strip():
            continue
        try:
            json.loads(line)
        except json.JSONDecodeError as error:
            raise FormatError(f"line {number} is not valid JSON ({error.msg}).") from None
        records += 1
    if not records:
        raise FormatError("the file is empty.")
    return records


def count_json(text: TextIO) -> int | None:
    """Items of a top-level JSON array, streamed; None for any other JSON value (parsed whole)."""
    stream = JsonStream(text)
    first = stream.peek()
    if not first:
        raise FormatError("the file is empty.")
    if first != "[":
        try:
            json.loads(stream.rest())
        except json.JSONDecodeError as error:
            raise FormatError(f"not valid JSON ({error.msg}, line {error.lineno}).") from None
        return None
    return sum(1 for _ in iter_json_array(stream))


def iter_json_array(stream: JsonStream) -> Iterator[Any]:
    """Each item of the JSON array that `stream` starts with; the array must be all there is."""
    stream.expect("[")
    if stream.peek() == "]":
        stream.expect("]")
    else:
        while True:
            yield stream.decode()
            after = stream.peek()
            if after == "]":
                stream.expect("]")
                break
            if after != ",":
                found = repr(after) if after else "the end of the file"
                raise FormatError(f"not valid JSON (expected ',' or ']' after an item, found {found}).")
            stream.expect(",")
    if stream.peek():
        raise FormatError("not valid JSON (more data after the closing ']').")


class JsonStream:
    """A text file read in growing chunks, from which JSON values are decoded one at a time."""

    def __init__(self, text: TextIO) -> None:
        self.text, self.buffer, self.pos, self.eof = text, "", 0, False

    def more(self) -> bool:
        """Read more text (as much again as is buffered, so one huge item costs O(n) re-decodes)."""
        chunk = self.text.read(max(CHUNK_CHARS, len(self.buffer) - self.pos))
        if not chunk:
            self.eof = True
            return False
        self.buffer, self.pos = self.buffer[self.pos :] + chunk, 0
        return True

    def peek(self) -> str:
        """The next character that is not whitespace, or "" at the end of the file."""
        while True:
            self.pos = WHITESPACE.match(self.buffer, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buffer):
                return self.buffer[self.pos]
            if not self.more():
                return ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise FormatError(f"not valid JSON (expected {char!r}).")
        self.pos += 1

    def decode(self) -> Any:
        """The JSON value at the current position (reading more while it is cut off)."""
        self.peek()
        while True:
            try:
                value, end = DECODER.raw_decode(self.buffer, self.pos)
            except json.JSONDecodeError as error:
                if self.more():
                    continue
                raise FormatError(f"not valid JSON ({error.msg}).") from None
            if end == len(self.buffer) and self.more():
                continue  # a number may go on in the next chunk
            self.pos = end
            return value

    def rest(self) -> str:
        return self.buffer[self.pos :] + self.text.read()
