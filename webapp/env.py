"""Strict, typed readers for environment variables.

Every setting Practicum reads from the environment goes through one of these helpers, so a malformed
value fails at start-up with a message that names the variable and what was expected.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str) -> str:
    """The variable's value, or `default` when it is unset or empty."""
    return os.environ.get(name) or default


def env_bool(name: str, default: bool) -> bool:
    """Accepts exactly `True`/`False` (any case) or `1`/`0`; anything else is an error."""
    raw = os.environ.get(name)
    if not raw:
        return default
    lowered = raw.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ImproperlyConfigured(f"{name} must be True or False, not {raw!r}.")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {raw!r}.") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {value}.")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list; blank items are dropped."""
    raw = os.environ.get(name)
    if not raw:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of `choices` (compared in upper case, as logging levels are), or `default` when unset."""
    raw = os.environ.get(name)
    if not raw:
        return default
    if raw.strip().upper() not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, not {raw!r}.")
    return raw.strip().upper()


def env_path(name: str, default: Path) -> Path:
    """An absolute directory path (it need not exist yet; if something else is there, that is an error)."""
    path = Path(os.environ.get(name) or default).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise ImproperlyConfigured(f"{name} must name a directory, but {str(path)!r} is not one.")
    return path


def env_database(name: str, default_sqlite: Path) -> dict:
    """A Django DATABASES entry from `postgres[ql]://user:pass@host:port/db`, `sqlite:///relative/path` or
    `sqlite:////absolute/path`."""
    raw = os.environ.get(name)
    if not raw:
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(default_sqlite)}
    parts = urlsplit(raw)
    if parts.scheme == "sqlite":
        path = unquote(parts.path)
        if not path or path == "/":
            raise ImproperlyConfigured(f"{name} must name a file, like sqlite:////abs/path.db, not {raw!r}.")
        # sqlite:///rel/path.db is relative to the working directory, sqlite:////abs/path.db absolute.
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(Path(path[1:]).resolve())}
    if parts.scheme in ("postgres", "postgresql"):
        db_name = unquote(parts.path.lstrip("/"))
        if not db_name:
            raise ImproperlyConfigured(
                f"{name} must name a database, like postgresql://host/db, not {raw!r}."
            )
        try:
            port = parts.port
        except ValueError:
            raise ImproperlyConfigured(f"{name} has a malformed port in {raw!r}.") from None
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": db_name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(port or ""),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    raise ImproperlyConfigured(
        f"{name} must start with postgresql:// or sqlite:///, not {parts.scheme or 'nothing'!r}."
    )


@dataclass(frozen=True)
class RedisConfig:
    url: str


def env_redis(name: str) -> RedisConfig | None:
    """`redis://host:port/db` (or `rediss://`), or None when unset (in-process broker and layer)."""
    raw = os.environ.get(name)
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        raise ImproperlyConfigured(f"{name} must look like redis://host:6379/0, not {raw!r}.")
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        raise ImproperlyConfigured(f"{name} has a malformed port in {raw!r}.") from None
    return RedisConfig(url=raw)


def stored_secret_key(path: Path) -> str:
    """The signing key kept in `path`, made once (random, readable by its owner only) when there is none:
    an installation gets its own key without setting one; a cluster sets SECRET_KEY on every machine, or
    shares the data folder. Processes starting together agree: the key is written to a temporary file and
    linked into place, which fails for all but the first."""
    if not path.exists():
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".secret-key-")  # mode 0600
        with os.fdopen(descriptor, "w") as stream:
            stream.write(secrets.token_urlsafe(50))
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process made it first: use theirs
        finally:
            os.unlink(temporary)
    key = path.read_text().strip()
    if not key:
        raise ImproperlyConfigured(f"{path} holds no secret key: delete it, or set SECRET_KEY.")
    return key
