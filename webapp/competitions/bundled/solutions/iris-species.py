"""iris-species: logistic regression on the four measurements; one probability per species."""

import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

species = ["setosa", "versicolor", "virginica"]
train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")
features = [column for column in test.columns if column != "id"]
label = train[species].idxmax(axis=1)  # train holds the species one-hot encoded

model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
model.fit(train[features], label)

probabilities = pd.DataFrame(model.predict_proba(test[features]), columns=model.classes_)
submission = pd.concat([test[["id"]], probabilities[species]], axis=1)
submission.to_csv("submission/submission.csv", index=False)
