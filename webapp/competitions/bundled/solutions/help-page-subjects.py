"""help-page-subjects: a logistic regression on each word (how often it fell inside training spans, its
position), then the text from the first word it keeps to the last (the whole text when it keeps none)."""

from collections import Counter

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

train = pd.read_csv("input/train.csv")
test = pd.read_csv("input/test.csv")


def flags(text, span):
    """1 for each word of text that lies inside the span."""
    start, position, out = text.find(span), 0, []
    for word in text.split():
        position = text.find(word, position)
        out.append(int(start <= position < start + len(span)))
        position += len(word)
    return out


seen: Counter[str] = Counter()
inside: Counter[str] = Counter()
for text, span in zip(train["text"], train["selected_text"].fillna(""), strict=True):
    for word, flag in zip(text.split(), flags(text, span), strict=True):
        seen[word.lower()] += 1
        inside[word.lower()] += flag


def word_features(texts):
    rows = []
    for text in texts:
        words = text.split()
        for i, word in enumerate(words):
            rate = (inside[word.lower()] + 1) / (seen[word.lower()] + 2)
            rows.append([rate, i / max(1, len(words) - 1), float(word[:1].isupper())])
    return np.array(rows)


y = np.concatenate(
    [flags(t, s) for t, s in zip(train["text"], train["selected_text"].fillna(""), strict=True)]
)
model = LogisticRegression(C=10.0, max_iter=1000)
model.fit(word_features(train["text"]), y)
probabilities = model.predict_proba(word_features(test["text"]))[:, 1]

spans, offset = [], 0
for text in test["text"]:
    words = text.split()
    kept = [i for i in range(len(words)) if probabilities[offset + i] >= 0.4]
    offset += len(words)
    spans.append(" ".join(words[kept[0] : kept[-1] + 1]) if kept else text)

submission = pd.DataFrame({"id": test["id"], "selected_text": spans})
submission.to_csv("submission/submission.csv", index=False)
