"""The competitions bundled with Practicum, built from datasets that ship inside installed PyPI packages.

`BUNDLED` lists them; `build_bundle(slug, dest)` writes one as a bundle folder (DESIGN.md §7) that
`manage.py seed_competitions` imports like any uploaded bundle. Building reads only local package
files (scikit-learn, statsmodels, palmerpenguins, pydataset; Pillow writes the images): no download,
ever. Builds are deterministic: the same slug always gives the same bytes.

Each competition also carries `solution`, the source text of a short, correct reference program (from
`solutions/<slug>.py`) that reads ./input/, fits a reasonable scikit-learn model and writes
./submission/submission.csv. It scores better than the sample submission; the tests check that.

| slug | data | task | metric |
|---|---|---|---|
| breast-cancer-diagnosis | scikit-learn | binary | roc_auc |
| wine-cultivar | scikit-learn | 3 classes, probabilities | log_loss |
| digits-recognition | scikit-learn | 10 classes | accuracy |
| iris-species | scikit-learn | 3 classes, probabilities | roc_auc_ovr |
| diabetes-progression | scikit-learn | regression | r2 |
| penguins-species | palmerpenguins | 3 classes; missing values, categoricals | balanced_accuracy |
| marital-affairs | statsmodels | binary | f1 |
| party-identification | statsmodels | 7 ordered classes | quadratic_weighted_kappa |
| doctor-visits | statsmodels | count regression | spearman |
| diamonds-price | pydataset (ggplot2) | regression, 53,940 rows, categoricals | rmsle |
| movie-genres | pydataset (ggplot2) | 7 labels, 58,788 rows, missing, titles | mean_columnwise_roc_auc |
| fuel-economy | pydataset (ggplot2) | 2 regression targets, categoricals | mean_columnwise_rmsle |
| computer-prices | pydataset (Ecdat) | regression, yes/no categoricals | mae |
| dataset-docs-package | pydataset (R docs) | 11 classes from free text | f1_macro |
| digit-images | scikit-learn | 10 classes from 1,797 PNG images | accuracy |
| house-sale-records | pydataset (Ecdat) | regression from nested JSON records | rmsle |
| help-page-subjects | pydataset (R docs) | text spans | jaccard |
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from webapp.competitions.bundled import images, penguins, rdatasets, rdocs, records, spans, surveys, toys
from webapp.competitions.bundled.spec import CompetitionSpec
from webapp.competitions.bundled.writer import write_bundle

SOLUTIONS_DIR = Path(__file__).resolve().parent / "solutions"


@dataclass(frozen=True)
class BundledCompetition:
    """A bundled competition: how to build its bundle, and a reference solution.

    Attributes:
        slug: the competition's slug and folder name.
        build: writes the bundle into an empty folder, e.g. ``build(Path("var/tmp/penguins-species"))``.
        solution: the source text of a correct reference program for this competition.
    """

    slug: str
    build: Callable[[Path], None]
    solution: str


SPECS: tuple[CompetitionSpec, ...] = (
    *toys.SPECS,
    *penguins.SPECS,
    *surveys.SPECS,
    *rdatasets.SPECS,
    *rdocs.SPECS,
    *images.SPECS,
    *records.SPECS,
    *spans.SPECS,
)


def _bundled(spec: CompetitionSpec) -> BundledCompetition:
    """The registry entry of `spec`, with its solution read from solutions/<slug>.py."""
    solution = (SOLUTIONS_DIR / f"{spec.slug}.py").read_text(encoding="utf-8")
    return BundledCompetition(slug=spec.slug, build=functools.partial(write_bundle, spec), solution=solution)


BUNDLED: tuple[BundledCompetition, ...] = tuple(_bundled(spec) for spec in SPECS)


def bundled_get(slug: str) -> BundledCompetition:
    """The bundled competition named `slug`; KeyError naming the known slugs otherwise."""
    for competition in BUNDLED:
        if competition.slug == slug:
            return competition
    raise KeyError(f"No bundled competition {slug!r}; the bundled ones are {[c.slug for c in BUNDLED]}.")


def build_bundle(slug: str, dest: Path) -> Path:
    """Build the bundle of `slug` into dest/<slug> (which must not exist yet, or be empty); return it."""
    competition = bundled_get(slug)
    folder = Path(dest) / slug
    if folder.exists() and any(folder.iterdir()):
        raise FileExistsError(f"{folder} is not empty; build a bundle into an empty folder.")
    folder.mkdir(parents=True, exist_ok=True)
    competition.build(folder)
    return folder
