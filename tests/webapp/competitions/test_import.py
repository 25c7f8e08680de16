"""Importing bundles: what is stored, where, and that a rejected bundle stores nothing."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile, TemporaryUploadedFile

from webapp.competitions import services, storage
from webapp.competitions.importing.bundles import BundleError
from webapp.competitions.models import Competition

pytestmark = pytest.mark.django_db


def stored_files(data_dir):
    return sorted(p.relative_to(data_dir).as_posix() for p in data_dir.rglob("*") if p.is_file())


def test_it_imports_a_folder_into_the_data_dir(make_bundle, owner, data_dir):
    competition = services.competition_import(path=make_bundle(), owner=owner)
    assert competition.owner == owner and not competition.is_public
    assert competition.baseline_score == pytest.approx(0.5)
    assert stored_files(data_dir / "competitions") == [
        "tiny-churn/competition.yaml",
        "tiny-churn/description.md",
        "tiny-churn/private/answers.csv",
        "tiny-churn/public/sample_submission.csv",
        "tiny-churn/public/test.csv",
        "tiny-churn/public/train.csv",
    ]


def test_it_imports_a_zip_with_a_wrapping_folder(make_bundle, make_zip, tmp_path, owner):
    zip_path = make_zip(make_bundle(), tmp_path / "bundle.zip", prefix="tiny-churn/")
    assert services.competition_import(path=zip_path, owner=owner).slug == "tiny-churn"


def test_a_rejected_bundle_stores_neither_a_row_nor_a_file(make_bundle, owner, data_dir):
    bundle = make_bundle(files={"private/answers.csv": "id,churned\n10,0\n"})
    with pytest.raises(BundleError):
        services.competition_import(path=bundle, owner=owner)
    assert Competition.objects.count() == 0
    assert stored_files(data_dir) == []


def test_a_rejected_zip_stores_nothing(make_bundle, make_zip, tmp_path, owner, data_dir):
    zip_path = make_zip(make_bundle(spec={"metric": "vibes"}), tmp_path / "bundle.zip")
    with pytest.raises(BundleError):
        services.competition_import(path=zip_path, owner=owner)
    assert Competition.objects.count() == 0
    assert stored_files(data_dir) == []


def test_it_refuses_a_slug_that_is_taken(make_bundle, owner, stranger):
    services.competition_import(path=make_bundle(), owner=owner)
    with pytest.raises(BundleError, match="slug 'tiny-churn' is already taken"):
        services.competition_import(path=make_bundle(), owner=stranger)
    assert Competition.objects.get().owner == owner


def test_the_answers_are_stored_outside_the_public_folder(make_bundle, owner):
    services.competition_import(path=make_bundle(), owner=owner)
    assert not list(storage.public_dir("tiny-churn").rglob("answers*"))
    assert storage.answers_path("tiny-churn").is_file()


def mlebench_folder(bundle, root, *, grader="accuracy", leaderboard=None):
    """Rearrange a Practicum bundle into MLE-bench's layout."""
    folder = root / "tiny-churn-mle"
    (folder / "prepared").mkdir(parents=True)
    (bundle / "public").rename(folder / "prepared" / "public")
    (folder / "prepared" / "private").mkdir()
    (bundle / "private" / "answers.csv").rename(folder / "prepared" / "private" / "test.csv")
    (bundle / "description.md").rename(folder / "description.md")
    config = {
        "id": "tiny-churn-mle",
        "name": "Tiny Churn (MLE-bench)",
        "grader": {"name": grader, "grade_fn": "mlebench.competitions.x.grade:grade"},
        "dataset": {"answers": "tiny-churn-mle/prepared/private/test.csv"},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    if leaderboard:
        (folder / "leaderboard.csv").write_text(leaderboard)
    return folder


def test_it_imports_an_mlebench_folder_with_its_leaderboard(make_bundle, tmp_path, owner):
    board = "teamName,score,submissionDate\n" + "".join(f"t{i},{i / 200:.3f},2020\n" for i in range(200))
    competition = services.competition_import(
        path=mlebench_folder(make_bundle(), tmp_path, leaderboard=board), owner=owner
    )
    assert competition.source == Competition.Source.MLEBENCH
    assert (competition.metric, competition.id_column, competition.target_columns) == (
        "accuracy",
        "id",
        ["churned"],
    )
    assert len(competition.leaderboard_scores) == 200


def test_it_refuses_an_mlebench_grader_it_cannot_map(make_bundle, tmp_path, owner):
    with pytest.raises(BundleError, match="grader 'bleu-4' has no Practicum metric"):
        services.competition_import(
            path=mlebench_folder(make_bundle(), tmp_path, grader="bleu-4"), owner=owner
        )


def test_a_bundle_whose_answers_the_metric_cannot_score_stores_nothing(make_bundle, owner, data_dir):
    answers = "id,churned\n10,0\n11,0\n12,0\n13,0\n"
    bundle = make_bundle(spec={"metric": "roc_auc"}, files={"private/answers.csv": answers})
    with pytest.raises(BundleError, match=r"^private/answers.csv: .*single class\.$"):
        services.competition_import(path=bundle, owner=owner)
    assert Competition.objects.count() == 0
    assert stored_files(data_dir) == []


def test_the_stored_answers_are_readable_by_their_owner_only(make_bundle, owner):
    board = "teamName,score\n" + "".join(f"t{i},{i / 10}\n" for i in range(10))
    services.competition_import(path=make_bundle(files={"leaderboard.csv": board}), owner=owner)
    private = storage.answers_path("tiny-churn").parent
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in private.iterdir()} == {
        "answers.csv": 0o600,
        "leaderboard.csv": 0o600,
    }


@pytest.fixture
def traversable_data_dir(settings):
    """A data dir every user may walk into (pytest's own tmp dirs are closed to other users)."""
    path = Path(tempfile.mkdtemp(prefix="practicum-data-"))
    path.chmod(0o755)
    settings.DATA_DIR = path
    yield path
    shutil.rmtree(path)


def test_another_user_cannot_read_the_stored_answers(make_bundle, owner, traversable_data_dir):
    """What a sandboxed program under a uid of its own (the no-bubblewrap fallback) could try."""
    if os.geteuid() != 0:
        pytest.skip("reading as another user needs root")
    services.competition_import(path=make_bundle(), owner=owner)
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat"]
    public = subprocess.run(
        [*as_nobody, str(storage.public_dir("tiny-churn") / "test.csv")], capture_output=True
    )
    assert public.returncode == 0  # the competition's folder is reachable: the refusal below is the answers'
    hidden = subprocess.run(
        [*as_nobody, str(storage.answers_path("tiny-churn"))], capture_output=True, text=True
    )
    assert hidden.returncode != 0 and "Permission denied" in hidden.stderr
    assert "10,0" not in hidden.stdout


# -- any data, at real size; a failed import stores nothing; rejections name the user's files -----------

PNG = bytes.fromhex("89504e470d0a1a0a") + bytes(range(256)) * 4


def upload(path: Path, name: str | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name or path.name, path.read_bytes())


def test_it_imports_images_json_and_text_in_nested_folders_without_train_and_test_csv(
    make_bundle, make_zip, tmp_path, owner
):
    files = {"public/train.csv": None, "public/test.csv": None, "public/train/records.jsonl": '{"a": 1}\n'}
    files |= {f"public/images/{split}/{i}.png": PNG for split in ("train", "test") for i in range(3)}
    competition = services.competition_import(
        path=make_zip(make_bundle(files=files), tmp_path / "b.zip"), owner=owner
    )
    names = [f["name"] for f in competition.public_files]
    assert names[:2] == ["images/test/0.png", "images/test/1.png"] and "train/records.jsonl" in names
    assert (storage.public_dir("tiny-churn") / "images/train/2.png").read_bytes() == PNG
    assert storage.public_file("tiny-churn", "images/train/2.png") is not None


def test_a_zip_that_fails_halfway_through_extraction_stores_nothing(make_bundle, tmp_path, owner, data_dir):
    zip_path = tmp_path / "b.zip"
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(make_bundle().rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(tmp_path / "bundle-0").as_posix())
        archive.writestr("public/zz-last.bin", b"z" * 4000)
    data = bytearray(zip_path.read_bytes())
    central = data.rfind(b"PK\x01\x02")  # the last member claims 10 bytes and unpacks to 4000
    data[central + 24 : central + 28] = (10).to_bytes(4, "little")
    zip_path.write_bytes(bytes(data))
    with pytest.raises(BundleError, match=r"^public/zz-last\.bin: the zip is corrupt here\.$"):
        services.competition_import(path=zip_path, owner=owner)
    assert Competition.objects.count() == 0
    assert stored_files(data_dir) == []


def test_a_bundle_rejected_after_its_files_are_unpacked_stores_nothing(
    make_bundle, make_zip, tmp_path, owner, data_dir
):
    files = {f"public/images/{i}.png": PNG for i in range(50)} | {"public/meta/bad.json": "[1, 2"}
    zip_path = make_zip(make_bundle(files=files), tmp_path / "b.zip")
    with pytest.raises(BundleError, match=r"^public/meta/bad\.json: not valid JSON"):
        services.competition_import(path=zip_path, owner=owner)
    assert Competition.objects.count() == 0
    assert stored_files(data_dir) == []


def test_a_rejected_upload_names_the_users_zip_not_a_staging_file(owner, tmp_path, data_dir):
    garbage = tmp_path / "my-competition.zip"
    garbage.write_bytes(b"not a zip at all")
    with pytest.raises(BundleError) as caught:
        services.competition_import_upload(files=[upload(garbage)], owner=owner)
    assert str(caught.value) == "my-competition.zip: not a readable .zip file."


def test_a_rejected_leaderboard_is_named_without_the_staging_path(
    make_bundle, make_zip, tmp_path, owner, data_dir
):
    bundle = make_bundle(files={"leaderboard.csv": "team,points\na,1\n"})
    zip_path = make_zip(bundle, tmp_path / "with-board.zip", prefix="tiny/")
    with pytest.raises(BundleError) as caught:
        services.competition_import_upload(files=[upload(zip_path)], owner=owner)
    message = str(caught.value)
    assert message.startswith("leaderboard.csv: the leaderboard file has no 'score' column")
    assert "staging" not in message and str(data_dir) not in message and "/" not in message.split("(")[0]
    assert stored_files(data_dir) == []


def test_an_upload_spooled_to_a_temporary_file_is_moved_not_copied(make_bundle, make_zip, tmp_path, owner):
    zip_path = make_zip(make_bundle(), tmp_path / "b.zip")
    spooled = TemporaryUploadedFile("b.zip", "application/zip", zip_path.stat().st_size, None)
    spooled.write(zip_path.read_bytes())
    spooled.flush()
    temporary = Path(spooled.temporary_file_path())
    assert services.competition_import_upload(files=[spooled], owner=owner).slug == "tiny-churn"
    assert not temporary.exists()
    spooled.close()  # Django closes it after the request: the file it would delete is gone already
