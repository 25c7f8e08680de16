"""Where a competition's files live under PRACTICUM_DATA_DIR.

```
<data dir>/competitions/<slug>/
    competition.yaml  description.md
    public/           what programs see at ./input and users may download
    private/          answers.csv (and leaderboard.csv): read by the grader only, never served;
                      mode 0700 and its files 0600, so programs under other uids cannot read them
```
Workers on other machines see the same tree when PRACTICUM_DATA_DIR is a shared filesystem.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings


def competitions_root() -> Path:
    return Path(settings.DATA_DIR) / "competitions"


def competition_dir(slug: str) -> Path:
    return competitions_root() / slug


def public_dir(slug: str) -> Path:
    return competition_dir(slug) / "public"


def answers_path(slug: str) -> Path:
    return competition_dir(slug) / "private" / "answers.csv"


def public_file(slug: str, name: str) -> Path | None:
    """The public file called `name`, or None if there is none (names never escape public/)."""
    root = public_dir(slug).resolve()
    candidate = (root / name).resolve()
    if candidate.parent != root or not candidate.is_file():
        return None
    return candidate
