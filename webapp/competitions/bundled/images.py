"""digit-images: scikit-learn's handwritten digits as PNG files, laid out like an image competition.

Kaggle's image competitions (leaf-classification, plant-pathology) ship a folder of images and a CSV that
names each image and, for training, its label. So does this one: ``public/images/<id>.png`` (the 1,797
8x8 scans of `sklearn.datasets.load_digits`, 16 grey levels, scaled to 0-255 and enlarged to 32x32 pixels
with bilinear smoothing, so a program has to decide how far to shrink them), ``train.csv`` (id, digit)
and ``test.csv`` (id). Pillow writes the PNGs without timestamps, so two builds give the same bytes.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from webapp.competitions.bundled.spec import CompetitionSpec
from webapp.competitions.bundled.writer import write_csv

PIXELS = 32
"""Each 8x8 scan is written as a PIXELS x PIXELS image."""


def load_digit_images() -> pd.DataFrame:
    """1,797 digits: `image` (an 8x8 uint8 array, 0-255), then `digit` (0-9)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = [np.round(image * 255 / 16).astype(np.uint8) for image in digits.images]
    return pd.DataFrame({"image": images, "digit": digits.target})


def png_bytes(image: np.ndarray) -> bytes:
    """An 8-bit grey PNG of `image` enlarged to `PIXELS` square."""
    from PIL import Image

    buffer = io.BytesIO()
    picture = Image.fromarray(image, mode="L").resize((PIXELS, PIXELS), Image.Resampling.BILINEAR)
    picture.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def write_images(spec: CompetitionSpec, train: pd.DataFrame, test: pd.DataFrame, public: Path) -> None:
    """public/images/<id>.png for every row, train.csv (id, digit) and test.csv (id)."""
    folder = public / "images"
    folder.mkdir(parents=True, exist_ok=True)
    for frame in (train, test):
        for identifier, image in zip(frame[spec.id_column], frame["image"], strict=True):
            (folder / f"{identifier}.png").write_bytes(png_bytes(image))
    write_csv(train[[spec.id_column, *spec.target_columns]], public / "train.csv")
    write_csv(test[[spec.id_column]], public / "test.csv")


DIGIT_IMAGES = CompetitionSpec(
    slug="digit-images",
    name="Handwritten Digits as Images",
    metric="accuracy",
    target_columns=("digit",),
    load=load_digit_images,
    fields={
        "image": "Not a column: the image `images/<id>.png`, a 32x32 grey PNG of one handwritten digit.",
        "digit": "Target: the digit written, 0 to 9.",
    },
    overview="""
Each image is a scan of one handwritten digit, white on black. Predict the **digit** (0 to 9) shown
in each test image.

The images are files, as in Kaggle's image competitions: `train.csv` names the training images by id
and gives their digits, `test.csv` names the test images. Read the pixels, reduce them to features
(or learn from them directly) and classify.
""",
    source="""
The UCI "Optical Recognition of Handwritten Digits" test set (Alpaydin and Kaynak, 1998): 8x8 images
of 16 grey levels from 43 writers. Shipped with scikit-learn as `sklearn.datasets.load_digits()`;
Practicum writes each one as a PNG file, with no download.
""",
    seed=2718,
    stratify=True,
    evaluation_note="`digit` holds the predicted digit as an integer.",
    public_writer=write_images,
    data_files="""
- `images/`: one PNG per row of `train.csv` and `test.csv`, named `<id>.png` (32x32 pixels, grey).
- `train.csv`: {n_train} rows: the id of each training image and its `digit`.
- `test.csv`: {n_test} rows: the id of each test image; predict its digit.
""",
)

SPECS = (DIGIT_IMAGES,)
