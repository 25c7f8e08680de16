"""movie-genres: one logistic regression per genre on numbers, the MPAA rating and title words.

Budget and MPAA rating are mostly missing: the budget gets a "missing" indicator, the rating its own
"unrated" category. Titles become TF-IDF word features.
"""

import numpy as np
import pandas as pd
from sklearn.compose import make_column_transformer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

genres = ["Action", "Animation", "Comedy", "Drama", "Documentary", "Romance", "Short"]
train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")
numeric = ["year", "length", "budget", "rating", "votes"] + [f"r{i}" for i in range(1, 11)]

preprocess = make_column_transformer(
    (
        make_pipeline(
            FunctionTransformer(np.log1p),
            SimpleImputer(strategy="median", add_indicator=True),
            StandardScaler(),
        ),
        numeric,
    ),
    (make_pipeline(SimpleImputer(strategy="constant", fill_value="unrated"), OneHotEncoder()), ["mpaa"]),
    (TfidfVectorizer(min_df=3, sublinear_tf=True), "title"),
)
features = preprocess.fit_transform(train)
test_features = preprocess.transform(test)

submission = test[["id"]].copy()
for genre in genres:
    model = LogisticRegression(C=1.0, max_iter=300, tol=1e-3)
    model.fit(features, train[genre])
    submission[genre] = model.predict_proba(test_features)[:, 1]
submission.to_csv("submission/submission.csv", index=False)
