"""computer-prices: gradient boosting with an absolute-error loss (the metric is MAE) on the specs."""

import pandas as pd
from sklearn.ensemble import HistGradientBoostingRegressor

train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")
features = [column for column in test.columns if column != "id"]


def encode(frame: pd.DataFrame) -> pd.DataFrame:
    """The features, with the yes/no columns as 1/0."""
    return frame[features].replace({"yes": 1, "no": 0}).astype(float)


model = HistGradientBoostingRegressor(loss="absolute_error", max_iter=300, learning_rate=0.1, random_state=0)
model.fit(encode(train), train["price"])

submission = pd.DataFrame({"id": test["id"], "price": model.predict(encode(test))})
submission.to_csv("submission/submission.csv", index=False)
