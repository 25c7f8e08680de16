"""Shared shape of Practicum's management commands (DESIGN.md §7): one JSON object on stdout for
machines, human progress on stderr, exit 0 on success and 2 on bad input with a one-line reason."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError


class BadInput(CommandError):
    """Bad input: Django prints `CommandError: <reason>` on stderr and exits with status 2."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, returncode=2)


class JsonCommand(BaseCommand):
    """Subclasses implement `run(**options) -> dict` (taking the options they declare by keyword); this
    prints it as one JSON line."""

    run: Callable[..., dict[str, Any]]

    def handle(self, *args: Any, **options: Any) -> None:
        result = self.run(**options)
        self.stdout.write(json.dumps(result, default=str))

    def progress(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)
