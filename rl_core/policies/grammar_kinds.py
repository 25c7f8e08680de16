"""Program sections for competitions that are not two CSV tables (`rl_core.data_kinds`).

- JSON records: the tables are read with pandas and flattened like `rl_core.public_files.flatten_records`
  (nested objects become ``parent.child`` columns, lists space-joined text); the rest of the program is the
  table pipeline of `grammar_render`.
- Images: every image under ./input/ is indexed by its file name without suffix; each row's image (named by
  ``IMAGE``, the features' ``image_column``) is opened with Pillow, converted to grey or RGB, resized to
  ``image.size`` squared and flattened to pixels in [0, 1], optionally with the gradient magnitudes beside
  them (``image.features``); then the chosen family is fitted on that matrix (standardised first for the
  scale-sensitive families when ``scale`` says so).
- Text spans: the task is turned into one row per word of the text column. A word's features are its
  relative position, whether it starts or ends the text, its length, punctuation, its selection rate in
  the training spans (out of fold on train, so the model cannot learn to trust a rate that saw its own
  label), the same rate for ``span.neighbours`` words on each side, and the context columns one-hot. The
  family predicts P(word in span); the span is the text from the first to the last word at or above
  ``span.threshold``, and the whole text when no word is.

Each function returns Python source; `grammar_render.render_code` places it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rl_core.public_files import IMAGE_SUFFIXES

JSON_READER = '''def read_records(path):
    """JSON records (a list of objects, or one object a line) as a table: nested objects become
    parent.child columns, lists become space-joined text."""
    records = pd.read_json(path, lines=path.endswith(".jsonl"), dtype=False, convert_dates=False)
    frame = pd.json_normalize(records.to_dict("records"), sep=".")
    for column in frame.columns[frame.dtypes == object]:
        frame[column] = frame[column].map(
            lambda v: " ".join(json.dumps(x) if isinstance(x, (dict, list)) else str(x) for x in v)
            if isinstance(v, list) else v
        )
    return frame'''


def json_reads(features: Mapping[str, Any]) -> list[str]:
    """The two lines that read the training and test records."""
    return [
        f'train = read_records("./input/{features["train_file"]}")',
        f'test = read_records("./input/{features["test_file"]}")',
    ]


def image_constants(choices: Mapping[str, Any], features: Mapping[str, Any]) -> str:
    """The image settings a program starts from."""
    suffixes = ", ".join(f'"{suffix}"' for suffix in sorted(IMAGE_SUFFIXES))
    return (
        f'IMAGE = "{features["image_column"]}"  # the column naming each image file (without its suffix)\n'
        f"SIZE = {choices['image.size']}  # images are resized to SIZE x SIZE pixels\n"
        f'MODE = "{features["image_mode"]}"  # "L": grey, "RGB": colour\n'
        f"IMAGE_SUFFIXES = {{{suffixes}}}"
    )


def image_reading(choices: Mapping[str, Any]) -> str:
    """Define `pixel_matrix(frame)` -> (rows, features) array and build X_train, X_test."""
    gradients = choices["image.features"] == "pixels_and_gradients"
    extra = (
        "    rows, columns = np.gradient(pixels, axis=(0, 1))\n"
        "    return np.concatenate([pixels.ravel(), np.hypot(rows, columns).ravel()])\n"
        if gradients
        else "    return pixels.ravel()\n"
    )
    return (
        'PATHS = {path.stem: path for path in Path("./input").rglob("*") if path.suffix.lower() in '
        "IMAGE_SUFFIXES}\n\n\n"
        "def image_features(name):\n"
        "    with Image.open(PATHS[str(name)]) as image:\n"
        "        resized = image.convert(MODE).resize((SIZE, SIZE), Image.Resampling.BILINEAR)\n"
        "    pixels = np.asarray(resized, dtype=np.float32) / 255.0\n"
        f"{extra}\n\n"
        "def pixel_matrix(frame):\n"
        "    return np.stack([image_features(name) for name in frame[IMAGE]])\n\n\n"
        "started = time.time()\n"
        "X_train, X_test = pixel_matrix(train), pixel_matrix(test)\n"
        'print(f"Read {len(X_train) + len(X_test)} images as {X_train.shape[1]} features '
        'in {time.time() - started:.1f} s")'
    )


def image_model(choices: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(source that wraps `estimator` as `model`, import lines)."""
    if choices.get("scale", "none") == "none":
        return 'model = Pipeline([("model", estimator)])', []
    scaler = {"standard": "StandardScaler", "robust": "RobustScaler"}[choices["scale"]]
    return (
        f'model = Pipeline([("scale", {scaler}()), ("model", estimator)])',
        [f"from sklearn.preprocessing import {scaler}"],
    )


SPAN_WORDS = '''def words_in_span(text, span):
    """0/1 per word of text: 1 where the word overlaps the span's characters (or, when the span is not
    found in the text, where the word is one of the span's words)."""
    words, flags, position = text.split(), [], 0
    start = text.find(span) if span else -1
    span_words = set(span.lower().split())
    for word in words:
        position = text.find(word, position)
        end = position + len(word)
        inside = start >= 0 and position < start + len(span) and end > start
        flags.append(int(inside or (start < 0 and word.lower() in span_words)))
        position = end
    return flags


def selection_rates(texts, spans):
    """word (lower case) -> (times in a span + 1) / (times seen + 2), smoothed towards one half."""
    seen, chosen = {}, {}
    for text, span in zip(texts, spans):
        for word, flag in zip(text.lower().split(), words_in_span(text, span)):
            seen[word] = seen.get(word, 0) + 1
            chosen[word] = chosen.get(word, 0) + flag
    return {word: (chosen[word] + 1) / (seen[word] + 2) for word in seen}


def word_rows(frame, rates_of_row):
    """One row of numbers per word of every text: position, shape, selection rates, context."""
    rows = []
    for index, text in enumerate(frame[TEXT]):
        words, rates = text.split(), rates_of_row(index)
        n = len(words)
        rate = [rates.get(word.lower(), 0.5) for word in words]
        context = [float(frame[column].iloc[index] == value) for column, value in CONTEXT_VALUES]
        for i, word in enumerate(words):
            around = [rate[j] if 0 <= j < n else -1.0 for j in range(i - NEIGHBOURS, i + NEIGHBOURS + 1)]
            shape = [i / max(1, n - 1), float(i == 0), float(i == n - 1), np.log1p(n), len(word) / 10]
            rows.append(shape + [float(not word.isalnum()), float(word[:1].isupper())] + around + context)
    return np.asarray(rows, dtype=np.float32)


def spans_of(frame, probabilities):
    """The text from the first to the last word at or above THRESHOLD; the whole text when none is."""
    spans, offset = [], 0
    for text in frame[TEXT]:
        words = text.split()
        chosen = [i for i in range(len(words)) if probabilities[offset + i] >= THRESHOLD]
        offset += len(words)
        spans.append(" ".join(words[chosen[0] : chosen[-1] + 1]) if chosen else text)
    return spans'''


def span_constants(choices: Mapping[str, Any], features: Mapping[str, Any], target: str) -> str:
    context = features["categorical_columns"]
    return (
        f'TEXT = "{features["text_columns"][0]}"  # the spans are taken from this column\n'
        f'TARGET = "{target}"\n'
        f"CONTEXT = {context!r}  # one-hot beside each word's features\n"
        f"THRESHOLD = {choices['span.threshold']}  # P(word in span) at which a word is kept\n"
        f"NEIGHBOURS = {choices['span.neighbours']}  # words on each side whose rates are features"
    )


SPAN_LOADING = """train = pd.read_csv("./input/train.csv")
test = pd.read_csv("./input/test.csv")
train = train.dropna(subset=[TARGET]).reset_index(drop=True)
for frame in (train, test):
    frame[TEXT] = frame[TEXT].fillna("").astype(str)
    frame[CONTEXT] = frame[CONTEXT].fillna("missing").astype(str)
train[TARGET] = train[TARGET].astype(str)
CONTEXT_VALUES = [(column, value) for column in CONTEXT for value in sorted(train[column].unique())]"""

SPAN_FEATURES = """# Out-of-fold rates on train (each half rated by the other); full-train rates on test.
half = np.arange(len(train)) % 2
rates = [selection_rates(train[TEXT][half != h], train[TARGET][half != h]) for h in (0, 1)]
all_rates = selection_rates(train[TEXT], train[TARGET])
X_train = word_rows(train, lambda i: rates[half[i]])
y = np.concatenate([words_in_span(t, s) for t, s in zip(train[TEXT], train[TARGET])])
X_test = word_rows(test, lambda i: all_rates)
if len(set(y)) < 2:  # every word in, or none: no classifier to fit, keep one fake row of each
    X_train, y = np.vstack([X_train, X_train[:1]]), np.append(y, 1 - y[0])
print(f"Built {len(X_train)} word rows from {len(train)} texts")"""

SPAN_FITTING = """started = time.time()
model.fit(X_train, y)
print(f"Fitted on {len(X_train)} words in {time.time() - started:.1f} s")

probabilities = model.predict_proba(X_test)[:, list(model.classes_).index(1)]
submission = pd.DataFrame({ID: test[ID], TARGET: spans_of(test, probabilities)})"""


def span_sections(choices: Mapping[str, Any], features: Mapping[str, Any], target: str) -> list[str]:
    """The sections of a text-span program between the imports and the model."""
    return [span_constants(choices, features, target), SPAN_WORDS, SPAN_LOADING, SPAN_FEATURES]
