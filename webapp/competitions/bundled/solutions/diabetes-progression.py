"""diabetes-progression: ridge regression on the ten standardised baseline variables."""

import pandas as pd
from sklearn.linear_model import RidgeCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")
features = [column for column in test.columns if column != "id"]

model = make_pipeline(StandardScaler(), RidgeCV(alphas=[0.1, 1.0, 10.0, 100.0]))
model.fit(train[features], train["progression"])

submission = pd.DataFrame({"id": test["id"], "progression": model.predict(test[features])})
submission.to_csv("submission/submission.csv", index=False)
