"""penguins-species: palmerpenguins' penguins (3 species; missing values, categorical features)."""

from __future__ import annotations

import pandas as pd

from webapp.competitions.bundled.sources import penguins_frame
from webapp.competitions.bundled.spec import CompetitionSpec


def load_penguins() -> pd.DataFrame:
    """344 penguins: island, 4 measurements, sex and year (some missing), then `species`."""
    frame = penguins_frame()
    return frame[[c for c in frame.columns if c != "species"] + ["species"]]


PENGUINS = CompetitionSpec(
    slug="penguins-species",
    name="Palmer Penguins Species",
    metric="balanced_accuracy",
    target_columns=("species",),
    load=load_penguins,
    fields={
        "island": "Island in the Palmer Archipelago, Antarctica: Biscoe, Dream or Torgersen.",
        "bill_length_mm": "Bill (culmen) length in millimetres; missing for 2 birds.",
        "bill_depth_mm": "Bill (culmen) depth in millimetres; missing for 2 birds.",
        "flipper_length_mm": "Flipper length in millimetres; missing for 2 birds.",
        "body_mass_g": "Body mass in grams; missing for 2 birds.",
        "sex": "Sex of the bird, female or male; missing for 11 birds.",
        "year": "Year of the study (2007, 2008 or 2009).",
        "species": "Target: the species, Adelie, Chinstrap or Gentoo.",
    },
    overview="""
Researchers at Palmer Station, Antarctica measured 344 penguins of three species nesting on three
islands. Predict each bird's **species** from where it was found, its bill, flipper and body
measurements and its sex.

The data is real field data: some measurements and some sexes are missing, and `island` and `sex`
are text categories. The species are not equally common (Chinstraps are the rarest), which is why the
metric is balanced accuracy.
""",
    source="""
K. B. Gorman, T. D. Williams and W. R. Fraser, "Ecological sexual dimorphism and environmental
variability within a community of Antarctic penguins (genus *Pygoscelis*)", PLoS ONE 9(3): e90081
(2014); Palmer Station Antarctica LTER. Packaged by A. M. Horst, A. P. Hill and K. B. Gorman,
palmerpenguins (2020), doi:10.5281/zenodo.3960218. Shipped with the PyPI package `palmerpenguins`
(`palmerpenguins.load_penguins()`).
""",
    seed=606,
    stratify=True,
    evaluation_note="`species` holds the predicted species name, spelt as in `train.csv`.",
)

SPECS = (PENGUINS,)
