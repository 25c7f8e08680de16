"""Competitions on scikit-learn's bundled datasets (`sklearn.datasets.load_*`, shipped in the wheel).

breast-cancer-diagnosis (binary, roc_auc), wine-cultivar (multiclass, log_loss), digits-recognition
(10 classes, accuracy), iris-species (multiclass, roc_auc_ovr), diabetes-progression (regression, r2).
"""

from __future__ import annotations

import pandas as pd

from webapp.competitions.bundled.sources import sklearn_frame
from webapp.competitions.bundled.spec import CompetitionSpec

SKLEARN_NOTE = "Shipped with scikit-learn as `sklearn.datasets.{call}`; no download is involved."

NUCLEUS_MEASURES = {
    "radius": "radius (mean distance from the centre to points on the perimeter)",
    "texture": "texture (standard deviation of grey-scale values)",
    "perimeter": "perimeter",
    "area": "area",
    "smoothness": "smoothness (local variation in radius lengths)",
    "compactness": "compactness (perimeter² / area − 1)",
    "concavity": "concavity (severity of concave portions of the contour)",
    "concave_points": "number of concave portions of the contour",
    "symmetry": "symmetry",
    "fractal_dimension": 'fractal dimension ("coastline approximation" − 1)',
}


def snake_case(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with column names in snake_case ("mean radius" -> "mean_radius", "a/b" -> "a_b")."""
    return frame.rename(columns=lambda c: c.replace(" (cm)", "_cm").replace(" ", "_").replace("/", "_"))


def one_hot(labels: pd.Series, names: list[str]) -> pd.DataFrame:
    """(N, C) 0/1 columns named `names`, column k set where `labels` == k."""
    return pd.DataFrame({name: (labels == k).astype(int) for k, name in enumerate(names)})


# -- breast-cancer-diagnosis -----------------------------------------------------------------------------


def load_breast_cancer() -> pd.DataFrame:
    """569 tumours: 30 nucleus measurements, then `malignant` (1 malignant, 0 benign)."""
    frame = snake_case(sklearn_frame("load_breast_cancer"))
    malignant = (frame.pop("target") == 0).astype(int)  # scikit-learn codes malignant as 0
    return frame.assign(malignant=malignant)


def breast_cancer_fields() -> dict[str, str]:
    """A description of each of the 30 measurements, and of the target."""
    statistics = {
        "mean_{}": "Mean",
        "{}_error": "Standard error",
        "worst_{}": "Worst (mean of the 3 largest)",
    }
    fields = {}
    for pattern, statistic in statistics.items():
        for key, measure in NUCLEUS_MEASURES.items():
            fields[pattern.format(key)] = f"{statistic} of the cell nuclei's {measure}."
    fields["malignant"] = "Target: 1 when the tumour is malignant, 0 when it is benign."
    return fields


BREAST_CANCER = CompetitionSpec(
    slug="breast-cancer-diagnosis",
    name="Breast Cancer Diagnosis",
    metric="roc_auc",
    target_columns=("malignant",),
    load=load_breast_cancer,
    fields=breast_cancer_fields(),
    overview="""
A fine-needle aspirate of a breast mass is digitised, and the cell nuclei in the image are measured:
ten characteristics, each summarised by its mean, its standard error and its worst value over the
nuclei. From these 30 numbers, predict the probability that the mass is **malignant**.

The classes are moderately imbalanced (about 37% malignant). Rank the tumours well: the metric only
looks at the order of your probabilities.
""",
    source="""
The Wisconsin Diagnostic Breast Cancer data: W. N. Street, W. H. Wolberg and O. L. Mangasarian,
"Nuclear feature extraction for breast tumor diagnosis", IS&T/SPIE 1993; UCI Machine Learning
Repository. """
    + SKLEARN_NOTE.format(call="load_breast_cancer()"),
    seed=101,
    stratify=True,
    evaluation_note="`malignant` holds P(malignant), the predicted probability that the label is 1.",
)


# -- wine-cultivar ---------------------------------------------------------------------------------------

WINE_CLASSES = ["class_0", "class_1", "class_2"]


def load_wine() -> pd.DataFrame:
    """178 wines: 13 chemical measurements, then one 0/1 column per cultivar."""
    frame = snake_case(sklearn_frame("load_wine"))
    labels = frame.pop("target")
    return pd.concat([frame, one_hot(labels, WINE_CLASSES)], axis=1)


WINE = CompetitionSpec(
    slug="wine-cultivar",
    name="Wine Cultivar",
    metric="log_loss",
    target_columns=tuple(WINE_CLASSES),
    load=load_wine,
    fields={
        "alcohol": "Alcohol content (% by volume).",
        "malic_acid": "Malic acid (g/l).",
        "ash": "Ash (g/l).",
        "alcalinity_of_ash": "Alcalinity of ash.",
        "magnesium": "Magnesium (mg/l).",
        "total_phenols": "Total phenols.",
        "flavanoids": "Flavanoids.",
        "nonflavanoid_phenols": "Non-flavanoid phenols.",
        "proanthocyanins": "Proanthocyanins.",
        "color_intensity": "Colour intensity.",
        "hue": "Hue.",
        "od280_od315_of_diluted_wines": "OD280/OD315 ratio of diluted wines (protein content).",
        "proline": "Proline (mg/l).",
        **{name: f"Target: 1 when the wine comes from cultivar {name[-1]}, else 0." for name in WINE_CLASSES},
    },
    overview="""
Wines grown in the same region of Italy come from three different cultivars. A chemical analysis
measures 13 constituents of each wine. Predict, for each wine in the test set, the probability that
it comes from each cultivar.

In `train.csv` the cultivar is one-hot encoded: exactly one of `class_0`, `class_1`, `class_2` is 1.
""",
    source="""
M. Forina et al., PARVUS: an extendible package for data exploration, classification and correlation
(1988); the UCI Machine Learning Repository's Wine data set. """
    + SKLEARN_NOTE.format(call="load_wine()"),
    seed=202,
    stratify=True,
    evaluation_note=(
        "Each of `class_0`, `class_1`, `class_2` holds the predicted probability of that cultivar. "
        "Probabilities are clipped to [1e-15, 1 − 1e-15] and each row is renormalised to sum to 1, "
        "so a confident wrong answer costs a lot but never an infinite amount."
    ),
)


# -- digits-recognition ----------------------------------------------------------------------------------


def load_digits() -> pd.DataFrame:
    """1797 8×8 images of handwritten digits: 64 pixel intensities, then `digit` (0–9)."""
    frame = sklearn_frame("load_digits")
    return frame.rename(columns={"target": "digit"})


DIGITS = CompetitionSpec(
    slug="digits-recognition",
    name="Handwritten Digits Recognition",
    metric="accuracy",
    target_columns=("digit",),
    load=load_digits,
    fields={
        **{
            f"pixel_{row}_{col}": f"Ink in the pixel at row {row}, column {col} of the 8×8 image (0–16)."
            for row in range(8)
            for col in range(8)
        },
        "digit": "Target: the digit written in the image, an integer from 0 to 9.",
    },
    overview="""
Each row is a handwritten digit, scanned and reduced to an 8×8 grid: each cell counts the ink in a
4×4 block of the original 32×32 bitmap, from 0 to 16. Predict which digit (0–9) was written.
""",
    source="""
E. Alpaydin and C. Kaynak, Optical Recognition of Handwritten Digits (1998), UCI Machine Learning
Repository: the 8×8 test set of 1797 digits written by 43 people. """
    + SKLEARN_NOTE.format(call="load_digits()"),
    seed=303,
    stratify=True,
    evaluation_note="`digit` holds the predicted digit, an integer from 0 to 9.",
)


# -- iris-species ----------------------------------------------------------------------------------------

IRIS_CLASSES = ["setosa", "versicolor", "virginica"]


def load_iris() -> pd.DataFrame:
    """150 irises: 4 measurements in cm, then one 0/1 column per species."""
    frame = snake_case(sklearn_frame("load_iris"))
    labels = frame.pop("target")
    return pd.concat([frame, one_hot(labels, IRIS_CLASSES)], axis=1)


IRIS = CompetitionSpec(
    slug="iris-species",
    name="Iris Species",
    metric="roc_auc_ovr",
    target_columns=tuple(IRIS_CLASSES),
    load=load_iris,
    fields={
        "sepal_length_cm": "Sepal length (cm).",
        "sepal_width_cm": "Sepal width (cm).",
        "petal_length_cm": "Petal length (cm).",
        "petal_width_cm": "Petal width (cm).",
        **{name: f"Target: 1 when the flower is an Iris {name}, else 0." for name in IRIS_CLASSES},
    },
    overview="""
The classic: three species of iris, 50 flowers each, four measurements per flower. Predict, for each
flower in the test set, the probability that it belongs to each species. The test set is small
(30 flowers), so every flower counts.
""",
    source="""
R. A. Fisher, "The use of multiple measurements in taxonomic problems", Annals of Eugenics 7 (1936);
measurements by Edgar Anderson. """
    + SKLEARN_NOTE.format(call="load_iris()"),
    seed=404,
    stratify=True,
    evaluation_note=(
        "Each species column holds a score for that species (a probability); the metric is the ROC AUC "
        "of each species against the other two, averaged over the three species."
    ),
)


# -- diabetes-progression --------------------------------------------------------------------------------


def load_diabetes() -> pd.DataFrame:
    """442 patients: 10 baseline measurements (unscaled), then `progression` one year later."""
    frame = sklearn_frame("load_diabetes", scaled=False)
    return frame.rename(columns={"target": "progression"})


DIABETES = CompetitionSpec(
    slug="diabetes-progression",
    name="Diabetes Progression",
    metric="r2",
    target_columns=("progression",),
    load=load_diabetes,
    fields={
        "age": "Age in years.",
        "sex": "Sex, coded 1 or 2.",
        "bmi": "Body mass index (kg/m²).",
        "bp": "Average blood pressure (mm Hg).",
        "s1": "Total serum cholesterol (tc).",
        "s2": "Low-density lipoproteins (ldl).",
        "s3": "High-density lipoproteins (hdl).",
        "s4": "Total cholesterol / HDL (tch).",
        "s5": "Log of the serum triglycerides level (ltg).",
        "s6": "Blood sugar level (glu).",
        "progression": "Target: a quantitative measure of disease progression one year after baseline.",
    },
    overview="""
Ten baseline variables were measured for 442 diabetes patients: age, sex, body mass index, blood
pressure and six blood serum measurements. A year later, a quantitative measure of the disease's
progression was taken. Predict that measure for the patients in the test set.
""",
    source="""
B. Efron, T. Hastie, I. Johnstone and R. Tibshirani, "Least Angle Regression", Annals of Statistics
32 (2004). """
    + SKLEARN_NOTE.format(call="load_diabetes(scaled=False)"),
    seed=505,
)

SPECS = (BREAST_CANCER, WINE, DIGITS, IRIS, DIABETES)
