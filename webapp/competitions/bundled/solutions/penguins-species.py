"""penguins-species: impute, one-hot encode island and sex, then a balanced logistic regression."""

import pandas as pd
from sklearn.compose import make_column_transformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")
categorical = ["island", "sex"]
numeric = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]

preprocess = make_column_transformer(
    (make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
    (
        make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
        categorical,
    ),
)
model = make_pipeline(preprocess, LogisticRegression(class_weight="balanced", max_iter=2000))
model.fit(train[numeric + categorical], train["species"])

submission = pd.DataFrame({"id": test["id"], "species": model.predict(test[numeric + categorical])})
submission.to_csv("submission/submission.csv", index=False)
