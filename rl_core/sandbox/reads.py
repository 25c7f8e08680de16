"""Which public files an attempt read, observed from outside the program: Linux inotify on the attempt's
own view of the input folder.

The sandbox gives each attempt a private mirror of the competition's public files (hard links, so no data is
copied; `mirror_inputs`) and mounts that, read-only, as the program's ``./input``. The supervisor watches
the mirror with inotify (`ReadWatch`): the kernel reports each file opened or read through it, whatever
route the program takes (pandas, numpy, ``open``, a child process, C code), and the program can neither see
nor silence the watch. Being a private mirror, its events are this attempt's alone, while other attempts
read the same files through their own mirrors.

Stage credit uses it as evidence gathered where the program cannot write it: data_loaded is credited only if
the attempt read at least one public file (rl_core.environment.confirmed).

Not observed (`files_read` None, and credit rests on the program's markers alone): where the public files
cannot be hard-linked (another filesystem than the attempt's scratch folder), or inotify is unavailable.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import struct
from pathlib import Path

_IN_ACCESS, _IN_OPEN, _IN_ISDIR, _IN_Q_OVERFLOW = 0x1, 0x20, 0x40000000, 0x4000
_IN_NONBLOCK, _IN_CLOEXEC = 0o4000, 0o2000000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, name length
MAX_WATCHED_DIRS = 1000
"""Sub-folders watched at most; a competition with more (one folder per image class, say) is watched in its
first ones, which is enough to see that it was read."""


def mirror_inputs(source: Path, target: Path) -> bool:
    """`target` as a tree of hard links to `source`'s files; False (and no `target`) where a file cannot be
    linked (another filesystem), so the caller mounts `source` itself, unobserved."""
    try:
        shutil.copytree(source, target, copy_function=os.link)
    except (OSError, shutil.Error):
        shutil.rmtree(target, ignore_errors=True)
        return False
    return True


class ReadWatch:
    """Inotify on `folder` and its sub-folders, from construction to `files_read`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.names: dict[int, str] = {}
        self.fd = -1
        libc_name = ctypes.util.find_library("c")
        self.libc = ctypes.CDLL(libc_name, use_errno=True) if libc_name else None
        if self.libc is None or not hasattr(self.libc, "inotify_init1"):
            return
        self.fd = self.libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self.fd < 0:
            return
        folders = [folder, *sorted(p for p in folder.rglob("*") if p.is_dir())][:MAX_WATCHED_DIRS]
        for path in folders:
            wd = self.libc.inotify_add_watch(self.fd, os.fsencode(path), _IN_OPEN | _IN_ACCESS)
            if wd >= 0:
                self.names[wd] = str(path.relative_to(folder))

    @property
    def observing(self) -> bool:
        return self.fd >= 0 and bool(self.names)

    def files_read(self) -> tuple[str, ...] | None:
        """The files (relative to the folder) opened or read since the watch began, sorted; None when
        nothing could be observed. Closes the watch."""
        if not self.observing:
            self.close()
            return None
        found: set[str] = set()
        try:
            while chunk := self._read():
                found |= self._parse(chunk)
        finally:
            self.close()
        return tuple(sorted(found))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _read(self) -> bytes:
        try:
            return os.read(self.fd, 65536)
        except BlockingIOError:
            return b""

    def _parse(self, chunk: bytes) -> set[str]:
        found, offset = set(), 0
        while offset + _EVENT.size <= len(chunk):
            wd, mask, _, length = _EVENT.unpack_from(chunk, offset)
            name = (
                chunk[offset + _EVENT.size : offset + _EVENT.size + length]
                .rstrip(b"\0")
                .decode(errors="replace")
            )
            offset += _EVENT.size + length
            if mask & _IN_Q_OVERFLOW:
                found.add("(more than the kernel queued)")
            elif name and not mask & _IN_ISDIR and wd in self.names:
                found.add(os.path.normpath(os.path.join(self.names[wd], name)))
        return found
