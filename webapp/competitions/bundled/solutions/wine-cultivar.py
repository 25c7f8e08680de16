"""wine-cultivar: multinomial logistic regression on standardised chemistry; one probability per class."""

import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

classes = ["class_0", "class_1", "class_2"]
train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")
features = [column for column in test.columns if column != "id"]
label = train[classes].idxmax(axis=1)  # train holds the cultivar one-hot encoded

model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
model.fit(train[features], label)

probabilities = pd.DataFrame(model.predict_proba(test[features]), columns=model.classes_)
submission = pd.concat([test[["id"]], probabilities[classes]], axis=1)
submission.to_csv("submission/submission.csv", index=False)
