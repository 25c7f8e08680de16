"""dataset-docs-package: TF-IDF of words and word pairs in the page, then a linear classifier."""

import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")


def page(frame: pd.DataFrame) -> pd.Series:
    """One string per row: the dataset's name, the page title and the page text."""
    return frame[["dataset", "title", "text"]].fillna("").astype(str).agg(" ".join, axis=1)


model = make_pipeline(
    TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
    LinearSVC(C=1.0, class_weight="balanced"),
)
model.fit(page(train), train["package"])

submission = pd.DataFrame({"id": test["id"], "package": model.predict(page(test))})
submission.to_csv("submission/submission.csv", index=False)
