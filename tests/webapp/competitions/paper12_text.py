"""MLE-bench folders for the paper's text competitions, from small synthetic raw data of the real shape.

Each ``build_<id>(root)`` writes raw data with the real files and column names under ``<root>/<id>/raw``,
prepares it into ``prepared/public`` and ``prepared/private`` following that competition's
``mlebench/competitions/<id>/prepare.py`` (same splits, seeds, renames and sample submissions), writes a
``config.yaml`` like MLE-bench's and returns the competition folder. Test helpers, loaded by the paper-12
tests; nothing here calls Practicum.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from sklearn.model_selection import train_test_split

WORDS = [
    "good",
    "bad",
    "day",
    "sad",
    "happy",
    "love",
    "hate",
    "tweet",
    "pizza",
    "thanks",
    "you",
    "are",
    "idiot",
    "great",
    "ok",
    "fun",
]


def mlebench_folder(
    root: Path, cid: str, *, grader: str, answers: str, sample: str
) -> tuple[Path, Path, Path]:
    """(raw, public, private) dirs of a new folder with a config.yaml as MLE-bench writes them."""
    config = {
        "id": cid,
        "name": cid.replace("-", " ").title(),
        "competition_type": "simple",
        "awards_medals": False,
        "prizes": None,
        "description": f"mlebench/competitions/{cid}/description.md",
        "dataset": {"answers": f"{cid}/prepared/{answers}", "sample_submission": f"{cid}/prepared/{sample}"},
        "grader": {"name": grader, "grade_fn": f"mlebench.competitions.{cid}.grade:grade"},
        "preparer": f"mlebench.competitions.{cid}.prepare:prepare",
    }
    folder = root / cid
    dirs = folder / "raw", folder / "prepared" / "public", folder / "prepared" / "private"
    for path in dirs:
        path.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (folder / "description.md").write_text(f"# {config['name']}\n\nSynthetic data of the real shape.\n")
    return dirs


def read_csv(path: Path) -> pd.DataFrame:
    """mlebench.utils.read_csv: pandas with float_precision="round_trip" (pandas 3's default precision)."""
    return pd.read_csv(path)


def sentences(rng: np.random.Generator, n: int, words: int = 6) -> list[str]:
    """n distinct sentences (each ends with its index, so none repeats)."""
    return [" ".join(rng.choice(WORDS, size=words)) + f" {i}" for i in range(n)]


def build_detecting_insults(root: Path) -> Path:
    raw, public, private = mlebench_folder(
        root,
        "detecting-insults-in-social-commentary",
        grader="auc-roc",
        answers="private/test.csv",
        sample="public/sample_submission_null.csv",
    )
    rng = np.random.default_rng(1)
    comments = [f'"{s}"' for s in sentences(rng, 60)]
    dates = [f"201206{10 + i % 9}1{i % 10}2155Z" if i % 3 else "" for i in range(60)]  # blank, repeated
    frame = pd.DataFrame({"Insult": [i % 2 for i in range(60)], "Date": dates, "Comment": comments})
    frame.iloc[:40].to_csv(raw / "train.csv", index=False)
    frame.iloc[40:].assign(Usage="PrivateTest").to_csv(raw / "test_with_solutions.csv", index=False)
    # prepare.py: the labelled test set becomes the answers; test and sample are made from it
    shutil.copy(raw / "train.csv", public / "train.csv")
    shutil.copy(raw / "test_with_solutions.csv", private / "test.csv")
    gold = read_csv(private / "test.csv")[["Insult", "Date", "Comment"]]
    gold.drop(columns=["Insult"]).to_csv(public / "test.csv", index=False)
    gold.assign(Insult=0).to_csv(public / "sample_submission_null.csv", index=False)
    return root / "detecting-insults-in-social-commentary"


def build_essay_scoring(root: Path) -> Path:
    cid = "learning-agency-lab-automated-essay-scoring-2"
    raw, public, private = mlebench_folder(
        root,
        cid,
        grader="quadratic-weighted-kappa",
        answers="private/answers.csv",
        sample="public/sample_submission.csv",
    )
    rng = np.random.default_rng(2)
    ids = [f"{i:03x}{'abcdef'[i % 6]}9e2" for i in range(70)]
    scores = rng.integers(1, 7, size=70)
    pd.DataFrame({"essay_id": ids, "full_text": sentences(rng, 70, 30), "score": scores}).to_csv(
        raw / "train.csv", index=False
    )
    old_train = read_csv(raw / "train.csv")
    new_train, answers = train_test_split(old_train, test_size=0.1, random_state=0)
    sample = answers[["essay_id"]].copy()
    sample["score"] = np.random.RandomState(42).randint(1, 7, size=len(sample))
    answers.to_csv(private / "answers.csv", index=False)
    new_train.to_csv(public / "train.csv", index=False)
    answers.drop(columns=["score"]).to_csv(public / "test.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)
    return root / cid


def pizza_request(i: int, rng: np.random.Generator, *, labelled: bool) -> dict:
    """One Random Acts of Pizza record with some of the real fields (test records lack the outcome)."""
    record = {
        "giver_username_if_known": "N/A",
        "request_id": f"t3_{i:05x}q",
        "request_text_edit_aware": " ".join(rng.choice(WORDS, size=12)),
        "request_title": f"[Request] {' '.join(rng.choice(WORDS, size=4))}",
        "requester_account_age_in_days_at_request": float(rng.uniform(0, 900)),
        "requester_subreddits_at_request": list(rng.choice(WORDS, size=2)),
        "requester_upvotes_minus_downvotes_at_request": int(rng.integers(-5, 500)),
        "requester_username": f"user{i}",
        "unix_timestamp_of_request": 1317852607.0 + i,
    }
    if labelled:
        record |= {"requester_received_pizza": bool(i % 3 == 0), "request_number_of_comments_at_retrieval": 3}
    return record


def build_random_acts_of_pizza(root: Path) -> Path:
    raw, public, private = mlebench_folder(
        root,
        "random-acts-of-pizza",
        grader="auc-roc",
        answers="private/test.csv",
        sample="public/sampleSubmission.csv",
    )
    rng = np.random.default_rng(3)
    (raw / "train.json").write_text(json.dumps([pizza_request(i, rng, labelled=True) for i in range(60)]))
    (raw / "test.json").write_text(json.dumps([pizza_request(i, rng, labelled=False) for i in range(60, 80)]))
    old_train = json.loads((raw / "train.json").read_text())
    old_test = json.loads((raw / "test.json").read_text())
    test_fields = list(old_test[0])
    new_train, new_test = train_test_split(
        old_train, test_size=len(old_test) / (len(old_train) + len(old_test)), random_state=0
    )
    (public / "train.json").write_text(json.dumps(new_train, indent=4))
    (public / "test.json").write_text(
        json.dumps([{k: s[k] for k in test_fields} for s in new_test], indent=4)
    )
    shutil.make_archive(str(public / "train"), "zip", public, "train.json")
    shutil.make_archive(str(public / "test"), "zip", public, "test.json")
    answers = pd.DataFrame(
        [
            {"request_id": s["request_id"], "requester_received_pizza": int(s["requester_received_pizza"])}
            for s in new_test
        ]
    )
    answers.to_csv(private / "test.csv", index=False)
    answers.assign(requester_received_pizza=0).to_csv(public / "sampleSubmission.csv", index=False)
    return root / "random-acts-of-pizza"


def build_tweet_sentiment(root: Path) -> Path:
    raw, public, private = mlebench_folder(
        root,
        "tweet-sentiment-extraction",
        grader="jaccard-similarity",
        answers="private/test.csv",
        sample="public/sample_submission.csv",
    )
    rng = np.random.default_rng(4)
    texts = [" ".join(rng.choice(WORDS, size=8)).capitalize() for _ in range(80)]
    selected = [" ".join(t.split()[2:5]) for t in texts]
    sentiment = rng.choice(["positive", "negative", "neutral"], size=80)
    ids = [f"{i:04x}b2c{i % 7}" for i in range(80)]
    frame = pd.DataFrame({"textID": ids, "text": texts, "selected_text": selected, "sentiment": sentiment})
    frame.to_csv(raw / "train.csv", index=False)
    new_train, new_test = train_test_split(read_csv(raw / "train.csv"), test_size=0.1, random_state=0)
    new_train.to_csv(public / "train.csv", index=False)
    new_test.to_csv(private / "test.csv", index=False)
    new_test.drop(columns=["selected_text"]).to_csv(public / "test.csv", index=False)
    sample = new_test.copy()[["textID", "selected_text"]]
    sample["selected_text"] = ""
    sample.to_csv(public / "sample_submission.csv", index=False)
    return root / "tweet-sentiment-extraction"


def build_us_patent(root: Path) -> Path:
    cid = "us-patent-phrase-to-phrase-matching"
    raw, public, private = mlebench_folder(
        root,
        cid,
        grader="pearson-correlation-coefficient",
        answers="private/test.csv",
        sample="public/sample_submission.csv",
    )
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {
            "id": [f"{i:016x}" for i in range(70)],
            "anchor": rng.choice(["abatement", "acid absorption", "adjust gas flow"], size=70),
            "target": sentences(rng, 70, 3),
            "context": rng.choice(["A47", "C01", "F23"], size=70),
            "score": rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=70),
        }
    )
    frame.to_csv(raw / "train.csv", index=False)
    new_train, new_test = train_test_split(read_csv(raw / "train.csv"), test_size=0.1, random_state=0)
    new_train.to_csv(public / "train.csv", index=False)
    new_test.to_csv(private / "test.csv", index=False)
    new_test.drop(columns=["score"]).to_csv(public / "test.csv", index=False)
    new_test.copy()[["id", "score"]].assign(score=0).to_csv(public / "sample_submission.csv", index=False)
    return root / cid


def build_spooky_author(root: Path) -> Path:
    raw, public, private = mlebench_folder(
        root,
        "spooky-author-identification",
        grader="multi-class-log-loss",
        answers="private/test.csv",
        sample="public/sample_submission.csv",
    )
    rng = np.random.default_rng(6)
    authors = ["EAP", "HPL", "MWS"]
    frame = pd.DataFrame(
        {
            "id": [f"id{26305 + 7 * i}" for i in range(60)],
            "text": sentences(rng, 60, 10),
            "author": [authors[i % 3] for i in range(60)],
        }
    )
    frame.to_csv(raw / "train.csv", index=False)
    new_train, new_test = train_test_split(read_csv(raw / "train.csv"), test_size=0.1, random_state=0)
    one_hot = pd.DataFrame(0, index=new_test.index, columns=["id", *authors])  # mlebench's df_to_one_hot
    one_hot["id"] = new_test["id"]
    for i, row in new_test.iterrows():
        one_hot.loc[i, row["author"]] = 1
    sample = one_hot.copy()
    sample["EAP"], sample["HPL"], sample["MWS"] = 0.403493538995863, 0.287808366106543, 0.308698094897594
    new_train.to_csv(public / "train.csv", index=False)
    new_test.drop(columns=["author"]).to_csv(public / "test.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)
    one_hot.to_csv(private / "test.csv", index=False)
    return root / "spooky-author-identification"


def build_lmsys_arena(root: Path) -> Path:
    raw, public, private = mlebench_folder(
        root,
        "lmsys-chatbot-arena",
        grader="multi-class-log-loss",
        answers="private/answers.csv",
        sample="public/sample_submission.csv",
    )
    rng = np.random.default_rng(7)
    winner = rng.integers(0, 3, size=60)
    frame = pd.DataFrame(
        {
            "id": 30192 + 997 * np.arange(60),
            "model_a": rng.choice(["gpt-4-1106-preview", "llama-2-70b-chat"], size=60),
            "model_b": rng.choice(["claude-2.1", "mistral-medium"], size=60),
            "prompt": [json.dumps([s]) for s in sentences(rng, 60)],
            "response_a": [json.dumps([s]) for s in sentences(rng, 60, 12)],
            "response_b": [json.dumps([s]) for s in sentences(rng, 60, 12)],
            "winner_model_a": (winner == 0).astype(int),
            "winner_model_b": (winner == 1).astype(int),
            "winner_tie": (winner == 2).astype(int),
        }
    )
    frame.to_csv(raw / "train.csv", index=False)
    new_train, answers = train_test_split(read_csv(raw / "train.csv"), test_size=0.1, random_state=0)
    sample = answers[["id"]].copy()
    for column in ("winner_model_a", "winner_model_b", "winner_tie"):
        sample[column] = 0.3333333333333333
    answers.to_csv(private / "answers.csv", index=False)
    new_train.to_csv(public / "train.csv", index=False)
    answers[["id", "prompt", "response_a", "response_b"]].to_csv(public / "test.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)
    return root / "lmsys-chatbot-arena"
