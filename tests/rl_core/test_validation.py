"""rl_core.validation: a validation competition derived from a competition's public files alone.

Each test builds a tiny competition in tmp_path: public/train.csv, test.csv, sample_submission.csv and a
hidden private/answers.csv that derive_validation must never open (an audit hook records every open)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rl_core.environment import TaskFiles
from rl_core.grading import GradingSpec, grade_submission
from rl_core.metrics import get_metric
from rl_core.testing import opened_files
from rl_core.validation import (
    Plan,
    Refusal,
    ValidationSettings,
    derive_validation,
    validation_plan,
)


def customers(n: int = 40) -> pd.DataFrame:
    """n labelled rows: an id, features, a customer (4 rows each), a day and a 0/1 target, half ones."""
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "id": np.arange(101, 101 + n),
            "age": rng.integers(18, 80, n),
            "plan": rng.choice(["basic", "pro"], n),
            "customer": [f"c{i // 4}" for i in range(n)],
            "day": pd.date_range("2024-01-01", periods=n, freq="D").strftime("%Y-%m-%d")[rng.permutation(n)],
            "churned": np.arange(n) % 2,
        }
    )


def competition(
    root: Path,
    train: pd.DataFrame,
    *,
    metric: str = "accuracy",
    targets: tuple[str, ...] = ("churned",),
    test_columns: tuple[str, ...] = ("id", "age", "plan", "customer", "day"),
    sample: dict[str, object] | None = None,
    extra: dict[str, str] | None = None,
) -> TaskFiles:
    """A competition whose public folder holds `train`, a 3-row test.csv and a constant sample submission."""
    public, private = root / "public", root / "private"
    public.mkdir(parents=True)
    private.mkdir()
    test_ids = [9001, 9002, 9003]
    train.to_csv(public / "train.csv", index=False)
    pd.DataFrame({c: test_ids if c == "id" else ["x"] * 3 for c in test_columns}).to_csv(
        public / "test.csv", index=False
    )
    sample = sample or {c: 0 for c in targets}
    pd.DataFrame({"id": test_ids, **{c: [v] * 3 for c, v in sample.items()}}).to_csv(
        public / "sample_submission.csv", index=False
    )
    pd.DataFrame({"id": test_ids, **{c: [1] * 3 for c in targets}}).to_csv(
        private / "answers.csv", index=False
    )
    for name, text in (extra or {}).items():
        (public / name).parent.mkdir(parents=True, exist_ok=True)
        (public / name).write_text(text)
    grading = GradingSpec(metric, "id", targets)
    return TaskFiles("tiny", public, private / "answers.csv", grading, 60.0, 1024, 0.5, (0.9, 0.8))


@pytest.fixture
def task(tmp_path) -> TaskFiles:
    return competition(tmp_path / "real", customers())


def derived_files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def held_out(derived: TaskFiles) -> pd.DataFrame:
    return pd.read_csv(derived.answers_path)


# -- the split ---------------------------------------------------------------------------------------------


def test_the_same_seed_writes_the_same_bytes(task, tmp_path):
    first = derive_validation(task, tmp_path / "a", ValidationSettings(seed=3))
    second = derive_validation(task, tmp_path / "b", ValidationSettings(seed=3))
    assert derived_files(tmp_path / "a") == derived_files(tmp_path / "b")
    assert set(derived_files(tmp_path / "a")) == {
        "answers.csv",
        "public/sample_submission.csv",
        "public/test.csv",
        "public/train.csv",
    }
    assert first.baseline_score == second.baseline_score


def test_another_seed_holds_out_other_rows(task, tmp_path):
    first = derive_validation(task, tmp_path / "a", ValidationSettings(seed=0))
    second = derive_validation(task, tmp_path / "b", ValidationSettings(seed=1))
    assert set(held_out(first)["id"]) != set(held_out(second)["id"])


def test_validation_rows_are_the_fraction_and_keep_the_class_proportions(task, tmp_path):
    for seed in range(5):
        derived = derive_validation(task, tmp_path / f"v{seed}", ValidationSettings(seed=seed, fraction=0.25))
        answers = held_out(derived)
        kept = pd.read_csv(derived.public_dir / "train.csv")
        assert len(answers) == 10 and len(kept) == 30
        assert answers["churned"].sum() == 5  # stratified: half ones, as in the table, whatever the seed
        assert set(answers["id"]).isdisjoint(kept["id"]) and len(set(answers["id"]) | set(kept["id"])) == 40


def test_a_class_too_rare_to_stratify_falls_back_to_a_plain_shuffle(tmp_path):
    table = customers().assign(churned=[2] + [0, 1] * 19 + [0])  # class 2 has one row
    derived = derive_validation(
        competition(tmp_path / "real", table), tmp_path / "v", ValidationSettings(seed=0)
    )
    assert len(held_out(derived)) == 8


def test_a_group_split_keeps_each_group_on_one_side(task, tmp_path):
    derived = derive_validation(task, tmp_path / "v", ValidationSettings(seed=0, group_column="customer"))
    held = pd.read_csv(derived.public_dir / "test.csv")["customer"]
    kept = pd.read_csv(derived.public_dir / "train.csv")["customer"]
    assert set(held).isdisjoint(kept)
    assert held.value_counts().eq(4).all() and held.nunique() == 2  # 2 of the 10 customers, whole


@pytest.mark.parametrize("days", ["dates", "numbers"])
def test_a_time_split_validates_on_the_latest_rows(tmp_path, days):
    table = customers()
    if days == "numbers":  # as text "9" > "10": the split must compare numbers
        table["day"] = (pd.to_datetime(table["day"]) - pd.Timestamp("2024-01-01")).dt.days
    task = competition(tmp_path / "real", table)
    derived = derive_validation(task, tmp_path / "v", ValidationSettings(seed=0, time_column="day"))
    held = pd.read_csv(derived.public_dir / "test.csv")["day"]
    kept = pd.read_csv(derived.public_dir / "train.csv")["day"]
    if days == "dates":
        held, kept = pd.to_datetime(held), pd.to_datetime(kept)
    assert len(held) == 8 and held.min() > kept.max()


def test_rows_without_a_label_stay_in_train(tmp_path):
    table = customers().astype({"churned": object})
    table.loc[:9, "churned"] = ""
    derived = derive_validation(
        competition(tmp_path / "real", table), tmp_path / "v", ValidationSettings(seed=0)
    )
    kept = pd.read_csv(derived.public_dir / "train.csv", keep_default_na=False)
    assert set(table["id"][:10]) <= set(kept["id"])
    assert len(held_out(derived)) == 6  # 20% of the 30 labelled rows


def test_the_settings_refuse_a_group_and_a_time_column_together():
    with pytest.raises(ValueError, match="not both"):
        ValidationSettings(seed=0, group_column="customer", time_column="day")
    with pytest.raises(ValueError, match="between 0 and 1"):
        ValidationSettings(seed=0, fraction=1.0)


# -- the derived files -------------------------------------------------------------------------------------


def test_the_derived_test_table_has_the_real_test_columns_and_no_target(tmp_path):
    task = competition(tmp_path / "real", customers(), test_columns=("id", "plan", "age", "coupon"))
    plan = validation_plan(task.public_dir, task.grading)
    derived = derive_validation(task, tmp_path / "v", ValidationSettings(seed=0))
    test = pd.read_csv(derived.public_dir / "test.csv")
    assert list(test.columns) == ["id", "plan", "age"]
    assert isinstance(plan, Plan) and any("'coupon'" in note for note in plan.notes)
    assert list(pd.read_csv(derived.public_dir / "train.csv").columns) == list(customers().columns)


@pytest.mark.parametrize("prefix", ["churned_", ""])  # <label>_<class>, or <class> (spooky-author)
def test_a_label_column_becomes_one_hot_answers_under_a_probability_metric(tmp_path, prefix):
    table = customers().assign(churned=np.array(["stay", "leave", "pause", "stay"] * 10))
    targets = tuple(prefix + c for c in ("leave", "pause", "stay"))
    task = competition(
        tmp_path / "real", table, metric="log_loss", targets=targets, sample=dict.fromkeys(targets, 1 / 3)
    )
    plan = validation_plan(task.public_dir, task.grading)
    assert isinstance(plan, Plan) and (plan.label_column, plan.classes) == (
        "churned",
        ("leave", "pause", "stay"),
    )
    derived = derive_validation(task, tmp_path / "v", ValidationSettings(seed=0))
    answers = held_out(derived).set_index("id")
    labels = table.set_index("id")["churned"].loc[answers.index]
    assert list(answers.columns) == list(targets)
    assert (answers.idxmax(axis=1) == prefix + labels).all() and (answers.sum(axis=1) == 1).all()
    assert "churned" not in pd.read_csv(derived.public_dir / "test.csv").columns


def test_a_two_class_label_becomes_the_positive_class_column(tmp_path):
    table = customers().assign(churned=np.where(np.arange(40) % 2, "yes", "no"))
    task = competition(
        tmp_path / "real", table, metric="roc_auc", targets=("churned_yes",), sample={"churned_yes": 0.5}
    )
    derived = derive_validation(task, tmp_path / "v", ValidationSettings(seed=0))
    answers = held_out(derived).set_index("id")
    labels = table.set_index("id")["churned"].loc[answers.index]
    assert (answers["churned_yes"] == (labels == "yes").astype(int)).all()
    assert derived.baseline_score == 0.5


def test_a_training_table_without_ids_gives_validation_rows_generated_ids(tmp_path):
    task = competition(tmp_path / "real", customers().drop(columns="id"))
    plan = validation_plan(task.public_dir, task.grading)
    assert isinstance(plan, Plan) and plan.ids_generated and "ids 1..N" in plan.notes[0]
    derived = derive_validation(task, tmp_path / "v", ValidationSettings(seed=0))
    assert list(held_out(derived)["id"]) == list(range(1, 9))
    assert list(pd.read_csv(derived.public_dir / "test.csv")["id"]) == list(range(1, 9))
    assert "id" not in pd.read_csv(derived.public_dir / "train.csv").columns


def test_the_derived_competition_keeps_the_task_but_its_files_and_baseline(task, tmp_path):
    derived = derive_validation(task, tmp_path / "v", ValidationSettings(seed=0))
    assert (
        derived.public_dir == tmp_path / "v" / "public"
        and derived.answers_path == tmp_path / "v" / "answers.csv"
    )
    assert (derived.slug, derived.grading, derived.leaderboard) == (task.slug, task.grading, task.leaderboard)
    assert (derived.time_limit_s, derived.memory_mb) == (task.time_limit_s, task.memory_mb)


@pytest.mark.parametrize(
    ("metric", "sample"),
    [("accuracy", {"churned": 0}), ("roc_auc", {"churned": 0.5}), ("rmse", {"churned": 0.25})],
)
def test_the_derived_answers_score_perfect_and_the_sample_scores_the_baseline(tmp_path, metric, sample):
    task = competition(tmp_path / "real", customers(), metric=metric, sample=sample)
    derived = derive_validation(task, tmp_path / "v", ValidationSettings(seed=0))
    perfect = grade_submission(derived.answers_path, derived.answers_path, derived.grading)
    baseline = grade_submission(
        derived.public_dir / "sample_submission.csv", derived.answers_path, derived.grading
    )
    assert perfect.score == get_metric(metric).perfect
    assert baseline.valid and baseline.score == derived.baseline_score


def test_derive_never_opens_the_hidden_answers(task, tmp_path):
    with opened_files() as opened:
        derive_validation(task, tmp_path / "v", ValidationSettings(seed=0, group_column="customer"))
    assert task.public_dir.resolve() / "train.csv" in opened  # the hook records this process's opens
    assert task.answers_path.resolve() not in opened


def test_a_failed_write_leaves_no_folder_behind(task, tmp_path, monkeypatch):
    written = []

    def to_csv(frame, path, **options):
        written.append(path)
        if len(written) == 3:
            raise OSError("disk full")
        Path(path).write_text("partial")

    monkeypatch.setattr(pd.DataFrame, "to_csv", to_csv)
    with pytest.raises(OSError, match="disk full"):
        derive_validation(task, tmp_path / "out" / "v", ValidationSettings(seed=0))
    assert list((tmp_path / "out").iterdir()) == []


def test_an_existing_folder_is_not_overwritten(task, tmp_path):
    (tmp_path / "v").mkdir()
    with pytest.raises(FileExistsError):
        derive_validation(task, tmp_path / "v", ValidationSettings(seed=0))


# -- refusals ----------------------------------------------------------------------------------------------


def test_a_competition_without_a_labelled_table_is_refused_naming_the_target(tmp_path):
    task = competition(tmp_path / "real", customers().drop(columns="churned"))
    refusal = validation_plan(task.public_dir, task.grading)
    assert refusal == Refusal(
        "no labelled training table: no public CSV holds the target column(s) 'churned'"
    )


def test_public_files_besides_the_tables_are_refused_by_name(tmp_path):
    extra = {"images/101.png": "", "images/102.png": "", "extra.json": "[]"}
    task = competition(tmp_path / "real", customers(), extra=extra)
    refusal = validation_plan(task.public_dir, task.grading)
    assert isinstance(refusal, Refusal)
    assert refusal.reason.startswith(
        "public files besides the tables (extra.json, images/) may be keyed by row"
    )


def test_an_unknown_group_column_is_refused(task):
    refusal = validation_plan(
        task.public_dir, task.grading, ValidationSettings(seed=0, group_column="patient")
    )
    assert refusal == Refusal("the group column 'patient' is not in train.csv")


def test_a_missing_test_table_is_refused(tmp_path):
    task = competition(tmp_path / "real", customers())
    (task.public_dir / "test.csv").unlink()
    refusal = validation_plan(task.public_dir, task.grading)
    assert refusal == Refusal("no test table (a CSV named like test.csv) among the public files")


def test_derive_raises_the_refusal_and_writes_nothing(tmp_path):
    task = competition(tmp_path / "real", customers(), extra={"extra.json": "[]"})
    with pytest.raises(ValueError, match="No validation split of 'tiny' can be made: public files besides"):
        derive_validation(task, tmp_path / "v", ValidationSettings(seed=0))
    assert not (tmp_path / "v").exists()
