"""Importing MLE-bench competition folders laid out as MLE-bench lays them out: real config keys, grader
names and file names."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from webapp.competitions import services, storage
from webapp.competitions.importing.bundles import BundleError
from webapp.competitions.importing.mlebench import map_grader
from webapp.competitions.models import Competition

pytestmark = pytest.mark.django_db

NOMAD = "nomad2018-predict-transparent-conductors"
NOMAD_CONFIG = f"""\
id: {NOMAD}
name: Nomad2018 Predicting Transparent Conductors
competition_type: simple
awards_medals: false
prizes:
  - position: 1
    value: 2496
  - position: 2
    value: 1872
description: mlebench/competitions/{NOMAD}/description.md

dataset:
  answers: {NOMAD}/prepared/private/test.csv
  sample_submission: {NOMAD}/prepared/public/sample_submission.csv

grader:
  name: mean-column-wise-rmsle
  grade_fn: mlebench.competitions.{NOMAD}.grade:grade

preparer: mlebench.competitions.{NOMAD}.prepare:prepare
"""
FEATURES = "spacegroup,number_of_total_atoms,percent_atom_al,percent_atom_ga,percent_atom_in"
TARGETS = "formation_energy_ev_natom,bandgap_energy_ev"
NOMAD_FILES = {
    "config.yaml": NOMAD_CONFIG,
    "description.md": "# Nomad2018 Predicting Transparent Conductors\n\nPredict two properties.\n",
    "prepared/public/train.csv": f"id,{FEATURES},{TARGETS}\n"
    "1,33,80.0,0.625,0.375,0.0,0.068,3.4387\n2,194,80.0,0.625,0.375,0.0,0.249,2.921\n"
    "3,227,40.0,0.8125,0.1875,0.0,0.1821,2.7438\n",
    "prepared/public/test.csv": f"id,{FEATURES}\n1,227,40.0,0.5,0.0,0.5\n2,12,80.0,0.1,0.9,0.0\n"
    "3,33,40.0,0.0,0.5,0.5\n",
    "prepared/public/sample_submission.csv": f"id,{TARGETS}\n1,0.1779,1.8892\n2,0.1779,1.8892\n"
    "3,0.1779,1.8892\n",
    "prepared/public/train/1/geometry.xyz": "#=====\nlattice_vector 9.95 0.0 0.0\n",
    "prepared/private/test.csv": f"id,{FEATURES},{TARGETS}\n1,227,40.0,0.5,0.0,0.5,0.2,1.5\n"
    "2,12,80.0,0.1,0.9,0.0,0.1,3.2\n3,33,40.0,0.0,0.5,0.5,0.15,2.1\n",
}


def write_files(root: Path, files: dict[str, str | None]) -> Path:
    for name, content in files.items():
        if content is not None:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(content)
    return root


def churn_folder(root: Path, *, dataset: dict, files: dict[str, str | None] | None = None) -> Path:
    """A small binary-classification MLE-bench folder whose config names its dataset files as given."""
    config = {
        "id": "churn-mle",
        "name": "Churn",
        "competition_type": "simple",
        "awards_medals": False,
        "prizes": None,
        "description": "mlebench/competitions/churn-mle/description.md",
        "dataset": dataset,
        "grader": {"name": "auc-roc", "grade_fn": "mlebench.competitions.churn-mle.grade:grade"},
        "preparer": "mlebench.competitions.churn-mle.prepare:prepare",
    }
    base = {
        "config.yaml": yaml.safe_dump(config, sort_keys=False),
        "description.md": "# Churn\n",
        "prepared/public/train.csv": "id,age,churned\n1,30,0\n2,60,1\n",
        "prepared/public/test.csv": "id,age\n10,41\n11,57\n",
        "prepared/private/test.csv": "id,churned\n10,0\n11,1\n",
    }
    return write_files(root / "churn-mle", {**base, **(files or {})})


def test_it_imports_a_folder_shaped_like_mlebench_nomad2018(tmp_path, owner):
    competition = services.competition_import(path=write_files(tmp_path / NOMAD, NOMAD_FILES), owner=owner)
    assert (competition.slug, competition.source) == (NOMAD, Competition.Source.MLEBENCH)
    assert (competition.metric, competition.id_column, competition.target_columns) == (
        "mean_columnwise_rmsle",
        "id",
        ["formation_energy_ev_natom", "bandgap_energy_ev"],
    )
    assert math.isfinite(competition.baseline_score) and competition.baseline_score > 0
    assert (storage.public_dir(NOMAD) / "train" / "1" / "geometry.xyz").is_file()


@pytest.mark.parametrize(
    ("grader", "n_targets", "metric"),
    [
        ("mean-column-wise-rmsle", 2, "mean_columnwise_rmsle"),  # nomad2018
        ("mean-column-wise-roc-auc", 4, "mean_columnwise_roc_auc"),  # plant-pathology-2020-fgvc7
        ("column-wise ROC AUC", 6, "mean_columnwise_roc_auc"),  # jigsaw-toxic-comment-classification
        ("pearson-correlation-coefficient", 1, "pearson"),  # us-patent-phrase-to-phrase-matching
        ("root-mean-squared-error", 1, "rmse"),  # new-york-city-taxi-fare-prediction
        ("root_mean_squared_error", 1, "rmse"),  # denoising-dirty-documents
        ("multi-class-classification-accuracy", 1, "accuracy"),  # tabular-playground-series-dec-2021
        ("mean-absolute-error", 1, "mae"),  # predict-volcanic-eruptions-ingv-oe
        ("macro-f1-score", 1, "f1_macro"),  # herbarium-2020-fgvc7
        ("multi-class-log-loss", 3, "log_loss"),  # spooky-author-identification
        ("quadratic-weighted-kappa", 1, "quadratic_weighted_kappa"),  # aptos2019-blindness-detection
        ("auc-roc", 1, "roc_auc"),  # aerial-cactus-identification
        ("auc-roc", 11, "mean_columnwise_roc_auc"),  # ranzcr-clip-catheter-line-classification
    ],
)
def test_it_maps_the_grader_names_of_real_mlebench_configs(grader, n_targets, metric):
    assert map_grader({"grader": {"name": grader}}, n_targets=n_targets) == metric


@pytest.mark.parametrize(
    ("sample", "shown_as"),
    [
        ("prepared/public/sampleSubmission.csv", {"sampleSubmission.csv"}),  # random-acts-of-pizza
        ("prepared/public/sample_submission_null.csv", {"sample_submission_null.csv"}),  # detecting-insults
        ("prepared/private/sample_submission.csv", set()),  # statoil-iceberg-classifier-challenge
    ],
)
def test_it_reads_the_sample_submission_the_config_names(tmp_path, owner, sample, shown_as):
    folder = churn_folder(
        tmp_path,
        dataset={
            "answers": "churn-mle/prepared/private/test.csv",
            "sample_submission": f"churn-mle/{sample}",
        },
        files={sample: "id,churned\n10,0.5\n11,0.5\n"},
    )
    competition = services.competition_import(path=folder, owner=owner)
    assert competition.baseline_score == 0.5
    stored = {f["name"] for f in competition.public_files}
    assert stored == {"train.csv", "test.csv", "sample_submission.csv", *shown_as}


def test_it_reads_the_answers_file_the_config_names(tmp_path, owner):
    folder = churn_folder(
        tmp_path,
        dataset={
            "answers": "churn-mle/prepared/private/answers.csv",
            "sample_submission": "churn-mle/prepared/public/sample_submission.csv",
        },
        files={
            "prepared/public/sample_submission.csv": "id,churned\n10,0.2\n11,0.8\n",
            "prepared/private/answers.csv": "id,churned\n10,1\n11,0\n",
        },
    )
    assert services.competition_import(path=folder, owner=owner).baseline_score == 0.0


def test_it_refuses_a_dataset_path_that_leaves_the_prepared_folder(tmp_path, owner):
    folder = churn_folder(tmp_path, dataset={"answers": "churn-mle/prepared/private/../../config.yaml"})
    with pytest.raises(BundleError, match=r"^config.yaml: dataset.answers .* must name a file in prepared/"):
        services.competition_import(path=folder, owner=owner)


def test_a_competition_without_a_test_csv_takes_the_samples_first_column_as_the_id(tmp_path, owner):
    folder = churn_folder(
        tmp_path,
        dataset={"answers": "churn-mle/prepared/private/test.csv"},
        files={"prepared/public/sample_submission.csv": "id,churned\n10,0.5\n11,0.5\n"},
    )
    (folder / "prepared" / "public" / "test.csv").unlink()
    competition = services.competition_import(path=folder, owner=owner)
    assert (competition.id_column, competition.target_columns) == ("id", ["churned"])


def test_it_refuses_a_grader_without_a_practicum_metric_naming_the_grader(tmp_path, owner, data_dir):
    folder = churn_folder(tmp_path, dataset={"answers": "churn-mle/prepared/private/test.csv"})
    (folder / "prepared" / "public" / "sample_submission.csv").write_text("id,churned\n10,0.5\n11,0.5\n")
    config = yaml.safe_load((folder / "config.yaml").read_text())
    config["grader"]["name"] = "column-wise-spearman"
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(
        BundleError, match=r"^config.yaml: grader 'column-wise-spearman' has no Practicum metric"
    ):
        services.competition_import(path=folder, owner=owner)
    assert Competition.objects.count() == 0 and not [p for p in data_dir.rglob("*") if p.is_file()]


@pytest.mark.parametrize(
    ("competition", "grader", "n_targets", "metric"),
    [
        ("tweet-sentiment-extraction", "jaccard-similarity", 1, "jaccard"),
        ("plant-pathology-2020-fgvc7", "mean-column-wise-roc-auc", 4, "mean_columnwise_roc_auc_exact"),
        ("lmsys-chatbot-arena", "multi-class-log-loss", 3, "log_loss_6dp"),
        ("spooky-author-identification", "multi-class-log-loss", 3, "log_loss"),
    ],
)
def test_a_competition_whose_grader_checks_differently_gets_the_metric_that_checks_the_same(
    competition, grader, n_targets, metric
):
    assert map_grader({"id": competition, "grader": {"name": grader}}, n_targets=n_targets) == metric


def test_it_makes_a_slug_of_an_id_with_capitals_and_spaces(tmp_path, owner):
    folder = churn_folder(
        tmp_path,
        dataset={"answers": "AI4Code/prepared/private/test.csv"},
        files={"prepared/public/sample_submission.csv": "id,churned\n10,0.5\n11,0.5\n"},
    )
    config = yaml.safe_load((folder / "config.yaml").read_text())
    (folder / "config.yaml").write_text(yaml.safe_dump({**config, "id": "AI4Code "}))
    assert services.competition_import(path=folder, owner=owner).slug == "ai4code"
