"""A factory for small valid competition bundles that each test bends into the shape it needs."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import yaml

SPEC = {
    "name": "Tiny Churn",
    "slug": "tiny-churn",
    "metric": "accuracy",
    "id_column": "id",
    "target_columns": ["churned"],
    "time_limit_s": 60,
    "memory_mb": 1024,
}
TRAIN = "id,age,plan,churned\n1,34,basic,0\n2,51,pro,1\n3,29,basic,0\n4,62,pro,1\n5,45,basic,1\n6,38,pro,0\n"
TEST = "id,age,plan\n10,41,basic\n11,57,pro\n12,33,basic\n13,48,pro\n"
SAMPLE = "id,churned\n10,0\n11,0\n12,0\n13,0\n"
ANSWERS = "id,churned\n10,0\n11,1\n12,0\n13,1\n"
DESCRIPTION = "# Tiny Churn\n\nPredict whether a customer churns.\n"


def write_bundle(
    root: Path, *, spec: dict | None = None, files: dict[str, str | bytes | None] | None = None
) -> Path:
    """Write a valid bundle to `root`, then apply overrides: a file set to None is removed."""
    contents: dict[str, str | bytes | None] = {
        "competition.yaml": yaml.safe_dump({**SPEC, **(spec or {})}),
        "description.md": DESCRIPTION,
        "public/train.csv": TRAIN,
        "public/test.csv": TEST,
        "public/sample_submission.csv": SAMPLE,
        "private/answers.csv": ANSWERS,
    }
    contents.update(files or {})
    for name, content in contents.items():
        if content is None:
            continue
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def zip_folder(folder: Path, zip_path: Path, *, prefix: str = "") -> Path:
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, prefix + path.relative_to(folder).as_posix())
    return zip_path


@pytest.fixture
def make_bundle(tmp_path):
    counter = iter(range(1000))

    def make(**overrides) -> Path:
        return write_bundle(tmp_path / f"bundle-{next(counter)}", **overrides)

    return make


@pytest.fixture
def make_zip():
    return zip_folder


@pytest.fixture
def competition(make_bundle, owner):
    """The tiny churn competition, imported and owned by `owner`, private."""
    from webapp.competitions import services

    return services.competition_import(path=make_bundle(), owner=owner)


@pytest.fixture
def run(competition, owner):
    """A queued grammar run of `owner` on `competition`, private."""
    from rl_core.run_spec import RunConfig
    from webapp.runs import services

    return services.run_create(
        owner=owner, competitions=[competition], policy="grammar", config=RunConfig(attempts=4).to_dict()
    )
