"""Where a competition's files live under PRACTICUM_DATA_DIR.

```
<data dir>/competitions/<slug>/
    competition.yaml  description.md
    public/           what programs see at ./input and users may download
    private/          answers.csv (and leaderboard.csv): read by the grader only, never served;
                      mode 0700 and its files 0600, so programs under other uids cannot read them
```
<data dir>/uploads/   browser uploads in progress (`uploads_dir`); <data dir>/staging/: imports in progress
Workers on other machines see the same tree when PRACTICUM_DATA_DIR is a shared filesystem.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings


def uploads_dir() -> Path:
    """Browser uploads in progress: Django's temporary files and the parts of chunked uploads."""
    return Path(settings.DATA_DIR) / "uploads"


def competitions_root() -> Path:
    return Path(settings.DATA_DIR) / "competitions"


def competition_dir(slug: str) -> Path:
    return competitions_root() / slug


def public_dir(slug: str) -> Path:
    return competition_dir(slug) / "public"


def answers_path(slug: str) -> Path:
    return competition_dir(slug) / "private" / "answers.csv"


def public_file(slug: str, name: str) -> Path | None:
    """The public file at `name` (a path inside public/, e.g. "images/1.png"), or None if there is none.

    Names never escape public/: `..` and links are resolved first, and the result must lie inside it.
    """
    root = public_dir(slug).resolve()
    candidate = (root / name).resolve()
    if root not in candidate.parents or not candidate.is_file():
        return None
    return candidate
