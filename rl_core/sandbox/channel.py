"""The attempt's private marker channel: a socket pair whose one end the program inherits, on which the
sandbox first hands over the attempt's nonce and then receives the stage markers (rl_core.instrument).

The program's stdout and stderr never carry markers, so nothing it prints counts. The marker function reads
the nonce from the channel before the program's first statement runs, so the nonce is in neither the
program's text, its environment nor its arguments; what the program itself writes to the channel counts
only if it carries the nonce.
Not covered: a program that finds the nonce in its own memory (see rl_core.instrument's guard and
`credited_stages`, which bound what that can earn).
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass


@dataclass
class MarkerChannel:
    """One attempt's channel: `ours` is read by the supervisor, `theirs` is inherited by the program."""

    ours: socket.socket
    theirs: socket.socket

    @classmethod
    def open(cls, nonce: str) -> MarkerChannel:
        """A fresh channel with `nonce` (letters, digits, underscores) already waiting for the program."""
        if not re.fullmatch(r"\w{1,60}", nonce):
            raise ValueError(f"A marker nonce must be 1-60 letters, digits or underscores, got {nonce!r}.")
        ours, theirs = socket.socketpair()
        ours.sendall(nonce.encode() + b"\n")
        ours.setblocking(False)
        return cls(ours, theirs)

    @property
    def child_fd(self) -> int:
        """The descriptor the program inherits (pass it in `pass_fds`)."""
        return self.theirs.fileno()

    def spawned(self) -> None:
        """Call this once the program is spawned: only the program holds its end now (so the end of the
        program is the end of the channel)."""
        self.theirs.close()

    def close(self) -> None:
        self.theirs.close()
        self.ours.close()
