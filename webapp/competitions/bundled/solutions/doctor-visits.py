"""doctor-visits: gradient boosting with a Poisson loss, the natural model for counts of visits."""

import pandas as pd
from sklearn.ensemble import HistGradientBoostingRegressor

train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")
features = [column for column in test.columns if column != "id"]

model = HistGradientBoostingRegressor(loss="poisson", max_iter=200, learning_rate=0.05, random_state=0)
model.fit(train[features], train["mdvis"])

submission = pd.DataFrame({"id": test["id"], "mdvis": model.predict(test[features])})
submission.to_csv("submission/submission.csv", index=False)
