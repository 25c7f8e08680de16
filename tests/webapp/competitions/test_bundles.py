"""Every validation rule of a competition bundle, each with a bundle that breaks it."""

from __future__ import annotations

import json
import os

import pytest

from webapp.competitions.importing.bundles import BundleError, BundleLimits, validate_bundle

DEFAULT_LIMITS = BundleLimits()


def rejection(root, limits=DEFAULT_LIMITS) -> str:
    with pytest.raises(BundleError) as caught:
        validate_bundle(root, limits)
    return str(caught.value)


def test_a_valid_bundle_is_accepted_with_its_baseline_score(make_bundle):
    bundle = validate_bundle(make_bundle())
    assert bundle.spec.slug == "tiny-churn"
    assert bundle.spec.target_columns == ("churned",)
    assert bundle.baseline_score == pytest.approx(0.5)  # all-zero sample vs two ones in four
    assert {f.name: f.rows for f in bundle.public_files}["train.csv"] == 6


def test_it_rejects_bad_yaml(make_bundle):
    message = rejection(make_bundle(files={"competition.yaml": "name: [unclosed\n"}))
    assert message.startswith("competition.yaml: not valid YAML")


def test_it_rejects_an_unknown_metric(make_bundle):
    message = rejection(make_bundle(spec={"metric": "vibes"}))
    assert "competition.yaml" in message and "vibes" in message


def test_it_rejects_a_missing_field(make_bundle):
    bundle = make_bundle(
        files={"competition.yaml": "name: x\nslug: x\nmetric: accuracy\ntarget_columns: [y]\n"}
    )
    assert "'id_column'" in rejection(bundle)


def test_it_rejects_a_slug_that_is_not_a_slug(make_bundle):
    assert "slug" in rejection(make_bundle(spec={"slug": "../etc"}))


def test_it_rejects_a_negative_time_limit(make_bundle):
    assert "'time_limit_s'" in rejection(make_bundle(spec={"time_limit_s": -5}))


def test_it_rejects_a_missing_answers_file(make_bundle):
    assert rejection(make_bundle(files={"private/answers.csv": None})).startswith("private/answers.csv")


def test_it_rejects_an_empty_file(make_bundle):
    assert rejection(make_bundle(files={"public/test.csv": ""})) == "public/test.csv: the file is empty."


def test_it_rejects_a_csv_with_only_a_header(make_bundle):
    assert "no rows" in rejection(make_bundle(files={"public/train.csv": "id,age,plan,churned\n"}))


def test_it_rejects_a_csv_that_does_not_parse(make_bundle):
    garbage = b'id,churned\n10,"0\n11,1\n' + bytes(range(200, 256))
    assert rejection(make_bundle(files={"private/answers.csv": garbage})).startswith("private/answers.csv")


def test_it_rejects_a_missing_id_column(make_bundle):
    message = rejection(make_bundle(files={"public/test.csv": "key,age,plan\n10,41,basic\n"}))
    assert message.startswith("public/test.csv: has no id column 'id'")


def test_it_rejects_duplicate_ids(make_bundle):
    message = rejection(make_bundle(files={"public/test.csv": "id,age,plan\n10,41,basic\n10,57,pro\n"}))
    assert message.startswith("public/test.csv: ids are not unique")


def test_it_rejects_answers_whose_ids_do_not_match_the_test_set(make_bundle):
    answers = "id,churned\n10,0\n11,1\n12,0\n99,1\n"
    message = rejection(make_bundle(files={"private/answers.csv": answers}))
    assert message.startswith("private/answers.csv: lacks 1 ids of public/test.csv (e.g. 13)")


def test_it_rejects_answers_with_extra_ids(make_bundle):
    answers = "id,churned\n10,0\n11,1\n12,0\n13,1\n14,0\n"
    assert "has 1 ids not in public/test.csv" in rejection(
        make_bundle(files={"private/answers.csv": answers})
    )


def test_it_rejects_nan_answers(make_bundle):
    answers = "id,churned\n10,0\n11,\n12,0\n13,1\n"
    message = rejection(make_bundle(files={"private/answers.csv": answers}))
    assert message == "private/answers.csv: 1 rows have missing targets (ids 11)."


def test_it_rejects_a_test_set_that_leaks_the_target(make_bundle):
    test = "id,age,plan,churned\n10,41,basic,0\n11,57,pro,1\n12,33,basic,0\n13,48,pro,1\n"
    assert rejection(make_bundle(files={"public/test.csv": test})).startswith("public/test.csv: contains")


def test_it_rejects_wrong_sample_submission_columns(make_bundle):
    sample = "id,prediction\n10,0\n11,0\n12,0\n13,0\n"
    message = rejection(make_bundle(files={"public/sample_submission.csv": sample}))
    assert message == "public/sample_submission.csv: columns must be id, churned, not id, prediction."


def test_it_rejects_a_symlink_inside_the_folder(make_bundle):
    root = make_bundle()
    os.symlink("/etc/passwd", root / "public" / "passwd.csv")
    assert rejection(root) == "public/passwd.csv: symbolic links are not allowed in a bundle."


def test_it_rejects_too_many_files(make_bundle):
    root = make_bundle()
    for i in range(5):
        (root / "public" / f"extra-{i}.txt").write_text("x")
    assert "11 files" in rejection(root, BundleLimits(max_files=10))


def test_it_rejects_a_bundle_over_the_size_limit(make_bundle):
    message = rejection(make_bundle(), BundleLimits(max_total_bytes=100))
    assert message.startswith("The bundle is 383 B; at most 100 B is allowed.")


# -- answers the metric cannot score ---------------------------------------------------------------------


def test_it_rejects_text_answers_for_a_value_metric(make_bundle):
    answers = "id,churned\n10,low\n11,high\n12,0\n13,1\n"
    message = rejection(make_bundle(spec={"metric": "rmse"}, files={"private/answers.csv": answers}))
    assert message == (
        "private/answers.csv: column 'churned' of the answers file must hold numbers, "
        "which ids '10' ('low'), '11' ('high') do not."
    )


def test_it_rejects_answers_with_a_single_class_for_roc_auc(make_bundle):
    answers = "id,churned\n10,0\n11,0\n12,0\n13,0\n"
    message = rejection(make_bundle(spec={"metric": "roc_auc"}, files={"private/answers.csv": answers}))
    assert message.startswith("private/answers.csv: the metric 'roc_auc' cannot score these answers")
    assert message.endswith("ROC AUC needs answers with both labels 0 and 1, not a single class.")


def test_it_rejects_text_labels_for_quadratic_weighted_kappa(make_bundle):
    files = {
        "private/answers.csv": "id,churned\n10,low\n11,high\n12,low\n13,high\n",
        "public/sample_submission.csv": "id,churned\n10,low\n11,low\n12,low\n13,low\n",
    }
    message = rejection(make_bundle(spec={"metric": "quadratic_weighted_kappa"}, files=files))
    assert message.startswith("private/answers.csv: ")
    assert "needs numeric (ordinal) labels" in message


@pytest.mark.parametrize("spelling", ["NaN", "nan", "<NA>", " nan "])
def test_it_reads_every_missing_value_spelling_of_the_grader_as_a_missing_answer(make_bundle, spelling):
    answers = f"id,churned\n10,0\n11,{spelling}\n12,0\n13,1\n"
    message = rejection(make_bundle(files={"private/answers.csv": answers}))
    assert message == "private/answers.csv: 1 rows have missing targets (ids 11)."


def test_it_rejects_na_answers_for_a_value_metric(make_bundle):
    answers = "id,churned\n10,0\n11,NA\n12,0\n13,1\n"
    message = rejection(make_bundle(spec={"metric": "rmse"}, files={"private/answers.csv": answers}))
    assert message.startswith("private/answers.csv: column 'churned' of the answers file must hold numbers")
    assert "'11' ('NA')" in message


def test_it_rejects_an_id_spelled_as_a_missing_value(make_bundle):
    test = "id,age,plan\n10,41,basic\nnan,57,pro\n12,33,basic\n13,48,pro\n"
    message = rejection(make_bundle(files={"public/test.csv": test}))
    assert message == "public/test.csv: the id column 'id' has empty values."


@pytest.mark.parametrize(
    ("labels", "shown"), [(("yes", "no", "yes", "no"), "'no', 'yes'"), ((1, 2, 1, 2), "2")]
)
def test_it_rejects_f1_answers_that_are_not_the_labels_0_and_1(make_bundle, labels, shown):
    answers = "id,churned\n" + "".join(
        f"{i},{label}\n" for i, label in zip(range(10, 14), labels, strict=True)
    )
    sample = "id,churned\n" + "".join(f"{i},{labels[1]}\n" for i in range(10, 14))
    files = {"private/answers.csv": answers, "public/sample_submission.csv": sample}
    message = rejection(make_bundle(spec={"metric": "f1"}, files=files))
    assert message == (
        "private/answers.csv: the metric 'f1' cannot score these answers: "
        f"F1 needs the labels 0 and 1 (1 is the positive label), not {shown}."
    )


def test_it_rejects_f1_answers_without_the_positive_label(make_bundle):
    answers = "id,churned\n10,0\n11,0\n12,0\n13,0\n"
    message = rejection(make_bundle(spec={"metric": "f1"}, files={"private/answers.csv": answers}))
    assert message.endswith("F1 needs the positive label 1 among the answers, which hold only 0.")


def test_it_accepts_f1_answers_of_0_and_1(make_bundle):
    assert validate_bundle(make_bundle(spec={"metric": "f1"})).baseline_score == 0.0


def test_it_rejects_a_metric_that_cannot_grade_that_many_target_columns(make_bundle):
    message = rejection(make_bundle(spec={"metric": "roc_auc_ovr"}))
    assert message == "competition.yaml: the metric 'roc_auc_ovr' cannot grade 1 target column(s)."


def test_it_rejects_an_id_column_that_is_also_a_target(make_bundle):
    message = rejection(make_bundle(spec={"target_columns": ["id"]}))
    assert message.startswith("competition.yaml: the grading spec's target columns ['id']")


# -- every public CSV ------------------------------------------------------------------------------------


def test_it_rejects_another_public_csv_that_does_not_parse(make_bundle):
    garbage = b'id,name\n1,"unclosed\n2,x\n' + bytes(range(200, 256))
    message = rejection(make_bundle(files={"public/extra/labels.csv": garbage}))
    assert message.startswith("public/extra/labels.csv: not a readable CSV")


def test_it_rejects_another_public_csv_that_is_empty(make_bundle):
    assert rejection(make_bundle(files={"public/stores.csv": ""})) == "public/stores.csv: the file is empty."


def test_it_counts_the_rows_of_every_public_csv(make_bundle):
    bundle = validate_bundle(make_bundle(files={"public/stores.csv": "store,city\n1,Oslo\n2,Rome\n"}))
    rows = {f.name: f.rows for f in bundle.public_files}
    assert (rows["stores.csv"], rows["train.csv"], rows["test.csv"]) == (2, 6, 4)


# -- any public data: JSON, text, images, nested folders; only the sample submission is required --------

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000") + b"\x00" * 16


def test_it_accepts_a_bundle_without_train_and_test_csv(make_bundle):
    files = {"public/train.csv": None, "public/test.csv": None, "public/images/train/1.png": PNG}
    bundle = validate_bundle(make_bundle(files=files))
    assert [f.name for f in bundle.public_files] == ["images/train/1.png", "sample_submission.csv"]
    assert bundle.baseline_score == pytest.approx(0.5)


def test_without_test_csv_the_answers_must_have_the_sample_submission_ids(make_bundle):
    files = {"public/test.csv": None, "private/answers.csv": "id,churned\n10,0\n11,1\n12,0\n99,1\n"}
    message = rejection(make_bundle(files=files))
    assert message == "private/answers.csv: lacks 1 ids of public/sample_submission.csv (e.g. 13)."


def test_it_still_requires_the_sample_submission(make_bundle):
    message = rejection(make_bundle(files={"public/sample_submission.csv": None}))
    assert message == "public/sample_submission.csv: the bundle has no such file."


def test_it_accepts_json_jsonl_text_and_images_in_nested_folders(make_bundle):
    files = {
        "public/train.json": '[{"id": 1, "text": "a"}, {"id": 2, "text": "b, c]"}, 3.5e2]',
        "public/meta.json": '{"classes": ["a", "b"]}',
        "public/extra/records.jsonl": '{"id": 1}\n\n{"id": 2}\n',
        "public/notes/readme.txt": "anything at all",
        "public/images/a/b/c.png": PNG,
    }
    rows = {f.name: f.rows for f in validate_bundle(make_bundle(files=files)).public_files}
    assert (rows["train.json"], rows["meta.json"], rows["extra/records.jsonl"]) == (3, None, 2)
    assert rows["notes/readme.txt"] is None and rows["images/a/b/c.png"] is None


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("public/train.json", '[{"id": 1}, {"id": 2]', "public/train.json: not valid JSON"),
        ("public/train.json", '[{"id": 1} {"id": 2}]', "public/train.json: not valid JSON (expected ','"),
        ("public/train.json", '[{"id": 1}] [2]', "public/train.json: not valid JSON (more data after"),
        ("public/meta.json", '{"a": 1,}', "public/meta.json: not valid JSON"),
        ("public/meta.json", "", "public/meta.json: the file is empty."),
        ("public/deep/x.jsonl", '{"id": 1}\n{"id": \n', "public/deep/x.jsonl: line 2 is not valid JSON"),
        ("public/x.jsonl", b'{"id": "\xff"}\n', "public/x.jsonl: not UTF-8 text."),
    ],
)
def test_it_rejects_json_that_does_not_parse_naming_the_file(make_bundle, name, content, expected):
    assert rejection(make_bundle(files={name: content})).startswith(expected)


def test_it_reads_a_json_array_larger_than_its_read_chunk(make_bundle, monkeypatch):
    from webapp.competitions.importing import public_formats

    monkeypatch.setattr(public_formats, "CHUNK_CHARS", 7)  # items and numbers cut across chunks
    items = [{"id": i, "text": "x" * (i % 13), "v": 12345.678} for i in range(200)]
    bundle = validate_bundle(make_bundle(files={"public/train.json": json.dumps(items)}))
    assert {f.name: f.rows for f in bundle.public_files}["train.json"] == 200
