"""MLE-bench folders for the paper's tabular, image and geometry-file competitions (see paper12_text).

Sizes are scaled down (a few dozen rows, images and geometry files); tabular-playground-series-may-2022
holds out 10 rows where its prepare.py holds out 100,000. Otherwise each ``build_<id>`` follows that
competition's prepare.py: same split seeds, id renumbering, file layout and sample submission.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
from paper12_text import mlebench_folder, read_csv  # type: ignore[import-not-found]
from PIL import Image
from sklearn.model_selection import train_test_split

LEAF_GENERA = (
    "Acer_Capillipes Acer_Circinatum Acer_Mono Acer_Opalus Acer_Palmatum Acer_Pictum Acer_Platanoids "
    "Acer_Rubrum Acer_Rufinerve Acer_Saccharinum Alnus_Cordata Alnus_Maximowiczii Alnus_Rubra "
    "Alnus_Sieboldiana Alnus_Viridis Arundinaria_Simonii Betula_Austrosinensis Betula_Pendula "
    "Callicarpa_Bodinieri Castanea_Sativa Celtis_Koraiensis Cercis_Siliquastrum Cornus_Chinensis "
    "Cornus_Controversa Cornus_Macrophylla Cotinus_Coggygria Crataegus_Monogyna Cytisus_Battandieri "
    "Eucalyptus_Glaucescens Eucalyptus_Neglecta Eucalyptus_Urnigera Fagus_Sylvatica Ginkgo_Biloba "
    "Ilex_Aquifolium Ilex_Cornuta Liquidambar_Styraciflua Liriodendron_Tulipifera Lithocarpus_Cleistocarpus "
    "Lithocarpus_Edulis Magnolia_Heptapeta Magnolia_Salicifolia Morus_Nigra Olea_Europaea Phildelphus "
    "Populus_Adenopoda Populus_Grandidentata Populus_Nigra Prunus_Avium Prunus_X_Shmittii "
    "Pterocarya_Stenoptera Quercus_Afares Quercus_Agrifolia Quercus_Alnifolia Quercus_Brantii "
    "Quercus_Canariensis Quercus_Castaneifolia Quercus_Cerris Quercus_Chrysolepis Quercus_Coccifera "
    "Quercus_Coccinea Quercus_Crassifolia Quercus_Crassipes Quercus_Dolicholepis Quercus_Ellipsoidalis "
    "Quercus_Greggii Quercus_Hartwissiana Quercus_Ilex Quercus_Imbricaria Quercus_Infectoria_sub "
    "Quercus_Kewensis Quercus_Nigra Quercus_Palustris Quercus_Phellos Quercus_Phillyraeoides Quercus_Pontica "
    "Quercus_Pubescens Quercus_Pyrenaica Quercus_Rhysophylla Quercus_Rubra Quercus_Semecarpifolia "
    "Quercus_Shumardii Quercus_Suber Quercus_Texana Quercus_Trojana Quercus_Variabilis Quercus_Vulcanica "
    "Quercus_x_Hispanica Quercus_x_Turneri Rhododendron_x_Russellianum Salix_Fragilis Salix_Intergra "
    "Sorbus_Aria Tilia_Oliveri Tilia_Platyphyllos Tilia_Tomentosa Ulmus_Bergmanniana Viburnum_Tinus "
    "Viburnum_x_Rhytidophylloides Zelkova_Serrata"
)
LEAF_CLASSES = LEAF_GENERA.split()  # mlebench/competitions/leaf-classification/classes.py, 99 species
PLANT_CLASSES = ["healthy", "multiple_diseases", "rust", "scab"]


def write_jpeg(path: Path, rng: np.random.Generator, size: int = 16) -> None:
    Image.fromarray(rng.integers(0, 255, size=(size, size, 3), dtype=np.uint8)).save(path, "JPEG")


def test_positions(n: int, test_size: float) -> np.ndarray:
    """Which of n rows train_test_split(test_size, random_state=0) holds out, in its output order."""
    return train_test_split(np.arange(n), test_size=test_size, random_state=0)[1]


def build_tabular_may_2022(root: Path) -> Path:
    raw, public, private = mlebench_folder(
        root,
        "tabular-playground-series-may-2022",
        grader="auc-roc",
        answers="private/test.csv",
        sample="public/sample_submission.csv",
    )
    rng = np.random.default_rng(8)
    n = 60
    frame = pd.DataFrame({"id": np.arange(n)})
    for i in range(31):
        if i == 27:
            frame["f_27"] = ["".join(rng.choice(list("ABCDEFGHIJKLMNOPQRST"), size=10)) for _ in range(n)]
        elif 7 <= i <= 18 or i in (29, 30):
            frame[f"f_{i:02d}"] = rng.integers(0, 12, size=n)
        else:
            frame[f"f_{i:02d}"] = rng.normal(size=n).round(6)
    frame["target"] = np.arange(n) % 2
    frame.to_csv(raw / "train.csv", index=False)
    new_train, new_test = train_test_split(read_csv(raw / "train.csv"), test_size=10, random_state=0)
    new_train.id = np.arange(len(new_train))
    new_test.id = np.arange(len(new_train), len(new_train) + len(new_test))
    new_train.to_csv(public / "train.csv", index=False)
    new_test.to_csv(private / "test.csv", index=False)
    new_test.drop(columns=["target"]).to_csv(public / "test.csv", index=False)
    new_test[["id", "target"]].assign(target=0.5).to_csv(public / "sample_submission.csv", index=False)
    return root / "tabular-playground-series-may-2022"


def build_tabular_dec_2021(root: Path) -> Path:
    raw, public, private = mlebench_folder(
        root,
        "tabular-playground-series-dec-2021",
        grader="multi-class-classification-accuracy",
        answers="private/test.csv",
        sample="public/sample_submission.csv",
    )
    rng = np.random.default_rng(9)
    n = 70
    numeric = "Elevation Aspect Slope Horizontal_Distance_To_Hydrology Vertical_Distance_To_Hydrology "
    numeric += "Horizontal_Distance_To_Roadways Hillshade_9am Hillshade_Noon Hillshade_3pm "
    numeric += "Horizontal_Distance_To_Fire_Points"
    frame = pd.DataFrame({"Id": np.arange(n)})
    for column in numeric.split():
        frame[column] = rng.integers(0, 3000, size=n)
    for i in range(1, 5):
        frame[f"Wilderness_Area{i}"] = rng.integers(0, 2, size=n)
    for i in range(1, 41):
        frame[f"Soil_Type{i}"] = rng.integers(0, 2, size=n)
    frame["Cover_Type"] = rng.choice([1, 2, 3, 7], size=n)
    frame.to_csv(raw / "train.csv", index=False)
    new_train, new_test = train_test_split(read_csv(raw / "train.csv"), test_size=0.1, random_state=0)
    new_train.to_csv(public / "train.csv", index=False)
    new_test.to_csv(private / "test.csv", index=False)
    new_test.drop(columns=["Cover_Type"]).to_csv(public / "test.csv", index=False)
    pd.DataFrame({"Id": new_test["Id"].values, "Cover_Type": 2}).to_csv(
        public / "sample_submission.csv", index=False
    )
    return root / "tabular-playground-series-dec-2021"


def build_plant_pathology(root: Path) -> Path:
    raw, public, private = mlebench_folder(
        root,
        "plant-pathology-2020-fgvc7",
        grader="mean-column-wise-roc-auc",
        answers="private/test.csv",
        sample="public/sample_submission.csv",
    )
    rng = np.random.default_rng(10)
    n = 40
    labels = np.arange(n) % 4
    labels[test_positions(n, 0.1)] = np.arange(4)  # each class once among the 4 held out: AUC is defined
    (raw / "images").mkdir()
    frame = pd.DataFrame({"image_id": [f"Train_{i}" for i in range(n)]})
    for c, name in enumerate(PLANT_CLASSES):
        frame[name] = (labels == c).astype(int)
    for image_id in frame["image_id"]:
        write_jpeg(raw / "images" / f"{image_id}.jpg", rng)
    frame.to_csv(raw / "train.csv", index=False)
    old_train = read_csv(raw / "train.csv")
    new_train, answers = train_test_split(old_train, test_size=0.1, random_state=0)
    renamed = {
        **{old: f"Train_{i}" for i, old in enumerate(new_train["image_id"].unique())},
        **{old: f"Test_{i}" for i, old in enumerate(answers["image_id"].unique())},
    }
    new_train["image_id"] = new_train["image_id"].replace(renamed)
    answers["image_id"] = answers["image_id"].replace(renamed)
    sample = answers[["image_id"]].copy()
    sample[PLANT_CLASSES] = 0.25
    (public / "images").mkdir()
    for old in old_train["image_id"]:
        shutil.copyfile(raw / "images" / f"{old}.jpg", public / "images" / f"{renamed.get(old, old)}.jpg")
    answers.to_csv(private / "test.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)
    answers[["image_id"]].to_csv(public / "test.csv", index=False)
    new_train.to_csv(public / "train.csv", index=False)
    return root / "plant-pathology-2020-fgvc7"


def build_leaf_classification(root: Path) -> Path:
    raw, public, private = mlebench_folder(
        root,
        "leaf-classification",
        grader="multi-class-log-loss",
        answers="private/test.csv",
        sample="public/sample_submission.csv",
    )
    rng = np.random.default_rng(11)
    n = 40
    species = [LEAF_CLASSES[(7 * i) % 99] for i in range(n)]
    kinds = ("margin", "shape", "texture")
    features = {f"{kind}{i}": rng.random(n).round(6) for kind in kinds for i in range(1, 65)}
    frame = pd.DataFrame({"id": 1 + 3 * np.arange(n), "species": species, **features})
    (raw / "images").mkdir()
    for file_id in frame["id"]:
        write_jpeg(raw / "images" / f"{file_id}.jpg", rng)
    frame.to_csv(raw / "train.csv", index=False)  # what prepare.py extracts from train.csv.zip
    new_train, new_test = train_test_split(read_csv(raw / "train.csv"), test_size=0.1, random_state=0)
    public_test = new_test.drop(columns=["species"])
    one_hot = pd.DataFrame(0, index=new_test.index, columns=["id", *LEAF_CLASSES])  # df_to_one_hot
    one_hot["id"] = new_test["id"]
    for i, row in new_test.iterrows():
        one_hot.loc[i, row["species"]] = 1
    (public / "images").mkdir()
    for file_id in [*new_train["id"], *public_test["id"]]:
        shutil.copyfile(raw / "images" / f"{file_id}.jpg", public / "images" / f"{file_id}.jpg")
    sample = one_hot.copy()
    sample[LEAF_CLASSES] = 1 / len(LEAF_CLASSES)
    new_train.to_csv(public / "train.csv", index=False)
    one_hot.to_csv(private / "test.csv", index=False)
    public_test.to_csv(public / "test.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)
    return root / "leaf-classification"


def geometry(rng: np.random.Generator) -> str:
    """A geometry.xyz as the competition ships them: lattice vectors, then atoms."""
    lines = [
        "#=======================================================",
        "#Created using the Atomic Simulation Environment (ASE)",
    ]
    lines += [f"lattice_vector {rng.uniform(3, 10):.8f} 0.0 0.0 " for _ in range(3)]
    lines += [
        f"atom {x:.8f} {y:.8f} {z:.8f} {el}"
        for (x, y, z), el in zip(
            rng.uniform(0, 9, size=(6, 3)), ["Al", "Ga", "In", "O", "O", "O"], strict=True
        )
    ]
    return "\n".join(lines) + "\n"


def build_nomad2018(root: Path) -> Path:
    raw, public, private = mlebench_folder(
        root,
        "nomad2018-predict-transparent-conductors",
        grader="mean-column-wise-rmsle",
        answers="private/test.csv",
        sample="public/sample_submission.csv",
    )
    rng = np.random.default_rng(12)
    n = 40
    frame = pd.DataFrame({"id": np.arange(1, n + 1), "spacegroup": rng.choice([12, 33, 194, 227], size=n)})
    frame["number_of_total_atoms"] = rng.choice([10.0, 40.0, 80.0], size=n)
    for element in ("al", "ga", "in"):
        frame[f"percent_atom_{element}"] = rng.random(n).round(4)
    for i in (1, 2, 3):
        frame[f"lattice_vector_{i}_ang"] = rng.uniform(3, 25, size=n).round(4)
    for angle in ("alpha", "beta", "gamma"):
        frame[f"lattice_angle_{angle}_degree"] = rng.uniform(85, 120, size=n).round(4)
    frame["formation_energy_ev_natom"] = rng.uniform(0, 0.6, size=n).round(4)
    frame["bandgap_energy_ev"] = rng.uniform(0.5, 5, size=n).round(4)
    (raw / "train.csv").mkdir()  # prepare.py extracts train.csv.zip into a folder named train.csv
    frame.to_csv(raw / "train.csv" / "train.csv", index=False)
    for i in frame["id"]:
        (raw / "train" / "train" / str(i)).mkdir(parents=True)
        (raw / "train" / "train" / str(i) / "geometry.xyz").write_text(geometry(rng))
    new_train, new_test = train_test_split(
        read_csv(raw / "train.csv" / "train.csv"), test_size=0.1, random_state=0
    )
    to_train = {old: new for new, old in enumerate(new_train["id"], start=1)}
    to_test = {old: new for new, old in enumerate(new_test["id"], start=1)}
    new_train["id"], new_test["id"] = new_train["id"].map(to_train), new_test["id"].map(to_test)
    new_train.to_csv(public / "train.csv", index=False)
    new_test.to_csv(private / "test.csv", index=False)
    new_test.drop(columns=["formation_energy_ev_natom", "bandgap_energy_ev"]).to_csv(
        public / "test.csv", index=False
    )
    for src in sorted((raw / "train" / "train").glob("*/*.xyz")):
        old = int(src.parts[-2])
        split, new = ("train", to_train[old]) if old in to_train else ("test", to_test[old])
        (public / split / str(new)).mkdir(parents=True)
        shutil.copy(src, public / split / str(new) / "geometry.xyz")
    sample = pd.DataFrame(
        {"id": new_test["id"], "formation_energy_ev_natom": 0.1779, "bandgap_energy_ev": 1.8892}
    )
    sample.to_csv(public / "sample_submission.csv", index=False)
    return root / "nomad2018-predict-transparent-conductors"
