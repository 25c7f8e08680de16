"""What MLE-bench's grade.py of each paper competition computes, rewritten from its source for the tests.

``GRADERS[id](submission, answers)`` takes both tables as MLE-bench reads them (pandas, round-trip
floats) and returns the score before MLE-bench's rounding to 5 decimals, or raises `Refused` where the
grader raises InvalidSubmissionError or fails (which its Grader also turns into "no score"). The formulas
are scikit-learn's, SciPy's and numpy's, called as each grade.py calls them; nothing here calls Practicum.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from paper12_files import LEAF_CLASSES, PLANT_CLASSES  # type: ignore[import-not-found]
from scipy.stats import pearsonr
from sklearn.metrics import accuracy_score, cohen_kappa_score, log_loss, roc_auc_score


class Refused(Exception):
    """The grader gives no score for this submission."""


def aligned(
    submission: pd.DataFrame, answers: pd.DataFrame, id_col: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables sorted by id, refused unless they hold the same ids (the graders' common check)."""
    if id_col not in submission.columns or len(submission) != len(answers):
        raise Refused(f"Submission should have an {id_col} column and as many rows as the answers")
    sub, ans = submission.sort_values(id_col), answers.sort_values(id_col)
    if (sub[id_col].values != ans[id_col].values).any():
        raise Refused(f"Submission and answers should have the same {id_col} values")
    return sub.reset_index(drop=True), ans.reset_index(drop=True)


def auroc(id_col: str, target: str):
    """prepare_for_auroc_metric + roc_auc_score (insults, pizza, tabular May 2022)."""

    def grade(submission: pd.DataFrame, answers: pd.DataFrame) -> float:
        if target not in submission.columns:
            raise Refused(f"Submission should have a {target} column")
        scores = pd.to_numeric(submission[target], errors="coerce")
        if scores.isna().any() or scores.min() < 0 or scores.max() > 1:
            raise Refused(f"Submission {target} column should contain probabilities between 0 and 1")
        sub, ans = aligned(submission.assign(**{target: scores}), answers, id_col)
        return float(roc_auc_score(ans[target], sub[target]))

    return grade


def labels(id_col: str, target: str, score):
    """accuracy (Dec 2021) and quadratic weighted kappa (essays): scikit-learn refuses non-whole labels."""

    def grade(submission: pd.DataFrame, answers: pd.DataFrame) -> float:
        if target not in submission.columns:
            raise Refused(f"Submission must have a `{target}` column")
        sub, ans = aligned(submission, answers, id_col)
        predicted = pd.to_numeric(sub[target], errors="coerce").to_numpy(dtype=float)
        if np.isnan(predicted).any() or (predicted != np.round(predicted)).any():
            raise Refused("Classification metrics can't handle a mix of multiclass and continuous targets")
        return float(score(ans[target].to_numpy(), predicted))

    return grade


def tweet_jaccard(submission: pd.DataFrame, answers: pd.DataFrame) -> float:
    def jaccard(str1: str, str2: str) -> float:
        a, b = set(str1.lower().split()), set(str2.lower().split())
        c = a & b
        return len(c) / (len(a) + len(b) - len(c))

    if "selected_text" not in submission.columns:
        raise Refused("Submission DataFrame must have a 'selected_text' column.")
    sub, ans = aligned(submission, answers, "textID")
    predictions = sub["selected_text"].astype(object).fillna("").astype(str)  # empty cells read as NaN
    truths = ans["selected_text"].astype(object).fillna("").astype(str)
    return float(np.mean([jaccard(p, t) for p, t in zip(predictions, truths, strict=True)]))


def patent_pearson(submission: pd.DataFrame, answers: pd.DataFrame) -> float:
    sub, ans = aligned(submission, answers, "id")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SciPy warns of the constant input it returns NaN for
        score = pearsonr(ans["score"].to_numpy(), sub["score"].to_numpy())[0]
    if np.isnan(score):
        raise Refused("the correlation of a constant prediction is undefined (NaN)")
    return float(score)


def plant_auc(submission: pd.DataFrame, answers: pd.DataFrame) -> float:
    if set(submission.columns) != {"image_id", *PLANT_CLASSES}:
        raise Refused(f"Expected submission to have columns {['image_id', *PLANT_CLASSES]}")
    sub, ans = aligned(submission, answers, "image_id")
    return float(np.mean([roc_auc_score(ans[c], sub[c]) for c in PLANT_CLASSES]))


def one_hot_log_loss(id_col: str, classes: list[str], *, exact: bool, rows_ok):
    """leaf-classification, spooky-author-identification (exact columns, isclose) and lmsys (round(6))."""

    def grade(submission: pd.DataFrame, answers: pd.DataFrame) -> float:
        if exact and set(submission.columns) != {id_col, *classes}:
            raise Refused("Submission must have an id column and a column for each class, and no other")
        if not set(classes) <= set(submission.columns):
            raise Refused("Submission DataFrame is missing required columns")
        probabilities = submission[classes]
        if not ((probabilities >= 0) & (probabilities <= 1)).all().all():
            raise Refused("All probabilities in submission DataFrame must be between 0 and 1.")
        if not rows_ok(probabilities.sum(axis=1)).all():
            raise Refused("Each row in submission should sum to one, as probabilities.")
        sub, ans = aligned(submission[[id_col, *classes]], answers[[id_col, *classes]], id_col)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # rows within the tolerance but not exactly 1: sklearn warns
            return float(log_loss(ans[classes].to_numpy(), sub[classes].to_numpy()))

    return grade


def nomad_rmsle(submission: pd.DataFrame, answers: pd.DataFrame) -> float:
    """The mean of both columns' RMSLE; rows taken in file order, as grade.py takes them."""
    targets = ["formation_energy_ev_natom", "bandgap_energy_ev"]
    if not set(targets) <= set(submission.columns) or len(submission) != len(answers):
        raise Refused("Expected 'formation_energy_ev_natom' and 'bandgap_energy_ev' columns")
    values = submission[targets].to_numpy(dtype=float)
    if (values < 0).any():  # scikit-learn 1.5's root_mean_squared_log_error refuses negative values
        raise Refused(
            "Root Mean Squared Logarithmic Error cannot be used when targets contain negative values."
        )
    truth = answers[targets].to_numpy(dtype=float)
    return float(np.mean(np.sqrt(np.mean((np.log1p(values) - np.log1p(truth)) ** 2, axis=0))))


GRADERS = {
    "detecting-insults-in-social-commentary": auroc("Comment", "Insult"),
    "learning-agency-lab-automated-essay-scoring-2": labels(
        "essay_id", "score", lambda t, p: cohen_kappa_score(p, t, weights="quadratic")
    ),
    "random-acts-of-pizza": auroc("request_id", "requester_received_pizza"),
    "tweet-sentiment-extraction": tweet_jaccard,
    "tabular-playground-series-may-2022": auroc("id", "target"),
    "tabular-playground-series-dec-2021": labels("Id", "Cover_Type", accuracy_score),
    "us-patent-phrase-to-phrase-matching": patent_pearson,
    "plant-pathology-2020-fgvc7": plant_auc,
    "leaf-classification": one_hot_log_loss(
        "id", LEAF_CLASSES, exact=True, rows_ok=lambda s: np.isclose(s, 1, atol=1e-6)
    ),
    "nomad2018-predict-transparent-conductors": nomad_rmsle,
    "spooky-author-identification": one_hot_log_loss(
        "id", ["EAP", "HPL", "MWS"], exact=True, rows_ok=lambda s: np.isclose(s, 1, atol=1e-6)
    ),
    "lmsys-chatbot-arena": one_hot_log_loss(
        "id",
        ["winner_model_a", "winner_model_b", "winner_tie"],
        exact=False,
        rows_ok=lambda s: s.round(6).eq(1),
    ),
}
