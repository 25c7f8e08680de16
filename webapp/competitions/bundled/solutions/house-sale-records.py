"""house-sale-records: the JSON records flattened, amenities one-hot, gradient boosting on log price."""

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingRegressor


def read(path):
    records = pd.read_json(path, dtype=False, convert_dates=False).to_dict("records")
    frame = pd.json_normalize(records, sep=".")
    amenities = frame.pop("amenities").str.join("|").str.get_dummies()
    return frame.join(amenities.add_prefix("has "))


train, test = read("input/train.json"), read("input/test.json")
features = [column for column in train.columns if column not in ("id", "price")]
test = test.reindex(columns=["id", *features], fill_value=0)

model = HistGradientBoostingRegressor(max_iter=200, learning_rate=0.05, random_state=0)
model.fit(train[features].astype(float), np.log1p(train["price"]))

price = np.expm1(model.predict(test[features].astype(float)))
submission = pd.DataFrame({"id": test["id"], "price": price})
submission.to_csv("submission/submission.csv", index=False)
