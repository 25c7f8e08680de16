"""digits-recognition: an RBF support vector machine on the 64 pixel intensities."""

import pandas as pd
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler
from sklearn.svm import SVC

train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")
features = [column for column in test.columns if column != "id"]

model = make_pipeline(MinMaxScaler(), SVC(C=10.0, gamma="scale"))
model.fit(train[features], train["digit"])

submission = pd.DataFrame({"id": test["id"], "digit": model.predict(test[features])})
submission.to_csv("submission/submission.csv", index=False)
