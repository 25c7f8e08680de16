"""The labelled table the tests of a competition from one table start from (test_from_table.py and
test_table_views.py load it; tests are imported with --import-mode=importlib)."""

from __future__ import annotations

import numpy as np
import pandas as pd

N_ROWS = 60


def penguins(n: int = N_ROWS, seed: int = 0) -> pd.DataFrame:
    """A small labelled table: an id, numbers, a category, a quantity, then three species (20 each)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "PassengerId": np.arange(100, 100 + n),
            "bill_mm": rng.normal(40, 5, n).round(1),
            "island": rng.choice(["Biscoe", "Dream"], n),
            "body_mass_g": rng.normal(4000, 300, n).round(2),
            "sex": rng.choice(["female", "male"], n),
            "species": np.repeat(["Adelie", "Chinstrap", "Gentoo"], n // 3),
        }
    )
