"""digit-images: each PNG shrunk to 16x16 grey pixels, then an RBF support vector machine."""

import numpy as np
import pandas as pd
from PIL import Image
from sklearn.svm import SVC

train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")


def pixels(ids):
    rows = []
    for identifier in ids:
        with Image.open(f"input/images/{identifier}.png") as image:
            rows.append(np.asarray(image.convert("L").resize((16, 16)), dtype=float).ravel() / 255.0)
    return np.stack(rows)


model = SVC(C=10.0, gamma="scale")
model.fit(pixels(train["id"]), train["digit"])

submission = pd.DataFrame({"id": test["id"], "digit": model.predict(pixels(test["id"]))})
submission.to_csv("submission/submission.csv", index=False)
