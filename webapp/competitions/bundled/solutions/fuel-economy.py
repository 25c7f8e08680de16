"""fuel-economy: one-hot categoricals and a ridge regression of log mileage, both targets at once."""

import numpy as np
import pandas as pd
from sklearn.compose import make_column_transformer
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

targets = ["cty", "hwy"]
train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")
categorical = ["manufacturer", "model", "trans", "drv", "fl", "class"]
numeric = ["displ", "year", "cyl"]

preprocess = make_column_transformer(
    (OneHotEncoder(handle_unknown="ignore"), categorical),
    (StandardScaler(), numeric),
)
model = make_pipeline(preprocess, Ridge(alpha=1.0))
model.fit(train[categorical + numeric], np.log1p(train[targets]))  # RMSLE is RMSE on log1p

predicted = np.expm1(model.predict(test[categorical + numeric]))
submission = pd.concat([test[["id"]], pd.DataFrame(predicted, columns=targets)], axis=1)
submission.to_csv("submission/submission.csv", index=False)
