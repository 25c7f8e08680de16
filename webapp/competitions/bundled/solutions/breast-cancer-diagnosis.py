"""breast-cancer-diagnosis: standardised logistic regression on the 30 nucleus measurements."""

import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")
features = [column for column in test.columns if column != "id"]

model = make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=2000))
model.fit(train[features], train["malignant"])

probability = model.predict_proba(test[features])[:, list(model.classes_).index(1)]
submission = pd.DataFrame({"id": test["id"], "malignant": probability})
submission.to_csv("submission/submission.csv", index=False)
