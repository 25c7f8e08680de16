"""Competition pages and files: who sees what, uploads with inline errors, sanitised descriptions."""

from __future__ import annotations

import html
import re
import shutil
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from webapp.competitions import services, storage
from webapp.competitions.models import Competition

pytestmark = pytest.mark.django_db


@pytest.fixture
def private_competition(make_bundle, owner):
    return services.competition_import(path=make_bundle(), owner=owner)


@pytest.fixture
def public_competition(make_bundle, owner):
    return services.competition_import(
        path=make_bundle(spec={"slug": "open-churn"}), owner=owner, is_public=True
    )


def client_for(client, user):
    if user is not None:
        client.force_login(user)
    return client


PAGES = [
    ("detail", lambda c: reverse("competitions:detail", args=[c.slug])),
    ("file", lambda c: reverse("competitions:file", args=[c.slug, "train.csv"])),
]


@pytest.mark.parametrize("page,url", PAGES)
@pytest.mark.parametrize("who,expected", [("owner", 200), ("stranger", 404), ("anonymous", 404)])
def test_a_private_competition_is_visible_to_its_owner_only(
    client, private_competition, owner, stranger, who, expected, page, url
):
    user = {"owner": owner, "stranger": stranger, "anonymous": None}[who]
    assert client_for(client, user).get(url(private_competition)).status_code == expected


@pytest.mark.parametrize("page,url", PAGES)
@pytest.mark.parametrize("who", ["owner", "stranger", "anonymous"])
def test_a_public_competition_is_visible_to_everyone(
    client, public_competition, owner, stranger, who, page, url
):
    user = {"owner": owner, "stranger": stranger, "anonymous": None}[who]
    assert client_for(client, user).get(url(public_competition)).status_code == 200


def test_staff_see_private_competitions(client, private_competition, django_user_model):
    staff = django_user_model.objects.create_user("staff", password="staff-password-1", is_staff=True)
    client.force_login(staff)
    assert client.get(reverse("competitions:detail", args=[private_competition.slug])).status_code == 200


def test_the_list_shows_only_what_the_user_may_see(client, private_competition, public_competition, stranger):
    client.force_login(stranger)
    body = client.get(reverse("competitions:list")).content.decode()
    assert "open-churn" in body and "tiny-churn" not in body


@pytest.mark.parametrize(
    "name", ["answers.csv", "../private/answers.csv", "../competition.yaml", "%2e%2e/private/answers.csv"]
)
def test_the_answers_cannot_be_downloaded_by_anyone(client, private_competition, owner, name):
    client.force_login(owner)
    url = reverse("competitions:file", args=[private_competition.slug, "x"])[:-1] + name
    response = client.get(url)
    assert response.status_code == 404
    assert b"10,0\n11,1" not in b"".join(getattr(response, "streaming_content", [response.content]))


def test_a_description_cannot_inject_script(client, make_bundle, owner):
    hostile = (
        "# Hi\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n[x](javascript:alert(3))\n"
    )
    competition = services.competition_import(
        path=make_bundle(files={"description.md": hostile}), owner=owner
    )
    client.force_login(owner)
    body = client.get(reverse("competitions:detail", args=[competition.slug])).content.decode()
    description = body.split('class="card description">')[1].split("</div>")[0]
    assert "<script" not in description and "onerror" not in description and "javascript:" not in description
    assert "<h1>Hi</h1>" in description


def test_the_detail_page_shows_metric_direction_and_a_preview(client, public_competition):
    body = client.get(reverse("competitions:detail", args=[public_competition.slug])).content.decode()
    assert "accuracy" in body and "higher is better" in body and "<td>basic</td>" in body


# -- the data of a competition with thousands of files: folder by folder, a page at a time ----------------

IMAGES = {f"public/images/{part}/{i:04d}.png": b"\x89PNG" + i.to_bytes(4, "big") for part, n in
          (("train", 2500), ("test", 500)) for i in range(n)}  # fmt: skip


@pytest.fixture
def thousands(make_bundle, owner):
    files = {**IMAGES, "public/images/test/README": "ids are file names\n"}
    return services.competition_import(path=make_bundle(files=files), owner=owner, is_public=True)


def detail(client, competition, query: str = ""):
    return client.get(reverse("competitions:detail", args=[competition.slug]) + query)


def test_thousands_of_files_are_summarised_by_folder_in_a_small_quick_page(client, thousands):
    started = time.perf_counter()
    response = detail(client, thousands)
    elapsed_s = time.perf_counter() - started
    body = response.content.decode()
    assert response.status_code == 200 and len(response.content) < 200_000 and elapsed_s < 2.0
    assert "3004 files" in body and "png × 3000, csv × 3, no extension × 1" in body
    assert '<a href="?folder=images#data">images/</a></td>\n          <td>3001 files</td>' in body
    for name in ("train.csv", "test.csv", "sample_submission.csv"):
        assert f'href="/competitions/tiny-churn/files/{name}">{name}</a>' in body
    assert ".png</a>" not in body, "single images are listed only inside their folder"


def test_a_folder_of_thousands_lists_a_hundred_files_a_page_and_each_downloads(client, thousands):
    body = detail(client, thousands, "?folder=images/train&page=3").content.decode()
    links = re.findall(r'href="(/competitions/tiny-churn/files/images/train/(\d{4})\.png)"', body)
    assert [int(number) for _, number in links] == list(range(200, 300))
    assert "rows 201–300 of 2500" in body and "?folder=images/train&amp;page=4#data" in body
    assert '<a href="?folder=#data">public</a> / <a href="?folder=images#data">images</a>' in body
    download = client.get(links[7][0])
    assert (
        download.status_code == 200
        and b"".join(download.streaming_content) == IMAGES["public/images/train/0207.png"]
    )


def test_a_folder_lists_its_subfolders_with_their_counts_sizes_and_kinds(client, thousands):
    body = detail(client, thousands, "?folder=images").content.decode()
    rows = re.findall(r'<tr class="folder"><td><a href="\?folder=([^#]+)#data">.*?</tr>', body, re.S)
    assert rows == ["images/test", "images/train"] and "first rows" not in body, "the preview is public/'s"
    assert "<td>501 files</td><td>3.9\xa0KB</td>\n          <td>png × 500, no extension × 1</td>" in body


def test_the_listing_comes_from_what_the_import_recorded_not_from_the_disk(client, make_bundle, owner):
    files = {"public/extra/a/1.txt": "one\n", "public/extra/b/2.txt": "two\n"}
    competition = services.competition_import(path=make_bundle(files=files), owner=owner, is_public=True)
    shutil.rmtree(storage.public_dir(competition.slug) / "extra")
    assert "2 files" in detail(client, competition, "?folder=extra").content.decode()


@pytest.mark.parametrize("folder", ["nowhere", "train.csv", "ext", "../private"])
def test_a_folder_that_holds_no_public_file_is_not_found(client, public_competition, folder):
    assert detail(client, public_competition, f"?folder={folder}").status_code == 404


def test_uploading_requires_a_login(client):
    response = client.get(reverse("competitions:upload"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_uploading_a_zip_creates_the_competition(client, owner, make_bundle, make_zip, tmp_path):
    data = make_zip(make_bundle(), tmp_path / "b.zip").read_bytes()
    client.force_login(owner)
    response = client.post(
        reverse("competitions:upload"), {"files": SimpleUploadedFile("b.zip", data), "is_public": "on"}
    )
    assert response.status_code == 302
    assert Competition.objects.get(slug="tiny-churn").is_public


def test_uploading_picked_files_places_them_by_name(client, owner, make_bundle):
    root = make_bundle()
    names = ["competition.yaml", "description.md", "public/train.csv", "public/test.csv",
             "public/sample_submission.csv", "private/answers.csv"]  # fmt: skip
    files = [SimpleUploadedFile(n.split("/")[-1], (root / n).read_bytes()) for n in names]
    client.force_login(owner)
    assert client.post(reverse("competitions:upload"), {"files": files}).status_code == 302
    assert Competition.objects.get(slug="tiny-churn").owner == owner


def test_a_rejected_upload_shows_the_reason_inline_and_stores_nothing(client, owner, make_bundle, data_dir):
    root = make_bundle(files={"public/sample_submission.csv": "id,prediction\n10,0\n"})
    names = ["competition.yaml", "description.md", "public/train.csv", "public/test.csv",
             "public/sample_submission.csv", "private/answers.csv"]  # fmt: skip
    files = [SimpleUploadedFile(n.split("/")[-1], (root / n).read_bytes()) for n in names]
    client.force_login(owner)
    response = client.post(reverse("competitions:upload"), {"files": files})
    assert response.status_code == 400
    assert (
        "public/sample_submission.csv: columns must be id, churned, not id, prediction."
        in response.content.decode()
    )
    assert Competition.objects.count() == 0
    assert not [p for p in data_dir.rglob("*") if p.is_file()]


def test_sign_up_logs_the_new_user_in(client):
    response = client.post(
        reverse("signup"),
        {"username": "carol", "password1": "a-long-passphrase-9", "password2": "a-long-passphrase-9"},
        follow=True,
    )
    assert response.context["user"].username == "carol"


def test_an_upload_whose_answers_the_metric_cannot_score_shows_why_inline(
    client, owner, make_bundle, data_dir
):
    root = make_bundle(
        spec={"metric": "rmse"}, files={"private/answers.csv": "id,churned\n10,a\n11,b\n12,0\n13,1\n"}
    )
    names = ["competition.yaml", "description.md", "public/train.csv", "public/test.csv",
             "public/sample_submission.csv", "private/answers.csv"]  # fmt: skip
    files = [SimpleUploadedFile(n.split("/")[-1], (root / n).read_bytes()) for n in names]
    client.force_login(owner)
    response = client.post(reverse("competitions:upload"), {"files": files})
    assert response.status_code == 400
    assert (
        "private/answers.csv: column 'churned' of the answers file must hold numbers, "
        "which ids '10' ('a'), '11' ('b') do not." in html.unescape(response.content.decode())
    )
    assert Competition.objects.count() == 0
    assert not [p for p in data_dir.rglob("*") if p.is_file()]


# -- large uploads: a .zip in parts, answered in JSON for the page's script ---------------------------

XHR = {"HTTP_X_REQUESTED_WITH": "XMLHttpRequest"}


def send_in_parts(client, data: bytes, name="big.zip", part_bytes=1000, is_public=False):
    """What the upload page's script does: start, send each part at its offset, finish."""
    start = client.post(reverse("competitions:upload_parts_start"), {"name": name, "size": len(data)}, **XHR)
    assert start.status_code == 200, start.json()
    upload_id = start.json()["id"]
    for offset in range(0, len(data), part_bytes):
        part = client.post(
            reverse("competitions:upload_parts_append", args=[upload_id]) + f"?offset={offset}",
            data[offset : offset + part_bytes],
            content_type="application/octet-stream",
            **XHR,
        )
        assert part.json() == {"received": min(offset + part_bytes, len(data))}
    finish = reverse("competitions:upload_parts_finish", args=[upload_id])
    return client.post(finish, {"is_public": "on"} if is_public else {}, **XHR)


def test_a_zip_sent_in_parts_creates_the_competition(
    client, owner, make_bundle, make_zip, tmp_path, data_dir
):
    data = make_zip(make_bundle(), tmp_path / "b.zip").read_bytes()
    client.force_login(owner)
    response = send_in_parts(client, data, is_public=True)
    assert response.json() == {"url": reverse("competitions:detail", args=["tiny-churn"])}
    assert Competition.objects.get(slug="tiny-churn").is_public
    assert not [p for p in (data_dir / "uploads").rglob("*") if p.is_file()], "the parts are gone"


def test_a_rejected_zip_sent_in_parts_names_the_users_file_and_stores_nothing(client, owner, data_dir):
    client.force_login(owner)
    response = send_in_parts(client, b"not a zip " * 300, name="kaggle-export.zip")
    assert response.status_code == 400
    assert response.json() == {"errors": ["kaggle-export.zip: not a readable .zip file."]}
    assert Competition.objects.count() == 0
    assert not [p for p in data_dir.rglob("*") if p.is_file()]


def test_a_part_at_the_wrong_offset_is_refused(client, owner):
    client.force_login(owner)
    start = client.post(reverse("competitions:upload_parts_start"), {"name": "b.zip", "size": 10}, **XHR)
    url = reverse("competitions:upload_parts_append", args=[start.json()["id"]])
    response = client.post(url + "?offset=5", b"12345", content_type="application/octet-stream", **XHR)
    assert response.status_code == 400
    assert response.json() == {"errors": ["b.zip: expected the part at byte 0, not at byte 5."]}


def test_an_incomplete_upload_cannot_be_finished(client, owner, data_dir):
    client.force_login(owner)
    start = client.post(reverse("competitions:upload_parts_start"), {"name": "b.zip", "size": 2048}, **XHR)
    upload_id = start.json()["id"]
    client.post(
        reverse("competitions:upload_parts_append", args=[upload_id]) + "?offset=0",
        b"x" * 1024,
        content_type="application/octet-stream",
        **XHR,
    )
    response = client.post(reverse("competitions:upload_parts_finish", args=[upload_id]), **XHR)
    assert response.json() == {"errors": ["b.zip: only 1.0 kB of 2.0 kB arrived; upload it again."]}
    assert not [p for p in data_dir.rglob("*") if p.is_file()]


def test_nobody_else_can_add_to_an_upload(client, owner, stranger):
    client.force_login(owner)
    start = client.post(reverse("competitions:upload_parts_start"), {"name": "b.zip", "size": 10}, **XHR)
    client.force_login(stranger)
    url = reverse("competitions:upload_parts_append", args=[start.json()["id"]]) + "?offset=0"
    response = client.post(url, b"0123456789", content_type="application/octet-stream", **XHR)
    assert response.status_code == 404


def test_an_upload_over_the_size_limit_is_refused_before_a_byte_is_sent(client, owner, settings):
    settings.PRACTICUM_BUNDLE_MAX_MB = 1
    client.force_login(owner)
    response = client.post(
        reverse("competitions:upload_parts_start"), {"name": "huge.zip", "size": 3 * 1024**2}, **XHR
    )
    assert response.status_code == 400
    assert response.json() == {"errors": ["huge.zip: the file is 3.0 MB; at most 1.0 MB is allowed."]}


def test_the_pages_script_gets_json_for_picked_files(client, owner, make_bundle):
    root = make_bundle(files={"public/sample_submission.csv": "id,prediction\n10,0\n"})
    names = ["competition.yaml", "description.md", "public/sample_submission.csv", "private/answers.csv"]
    files = [SimpleUploadedFile(n.split("/")[-1], (root / n).read_bytes()) for n in names]
    client.force_login(owner)
    response = client.post(reverse("competitions:upload"), {"files": files}, **XHR)
    assert response.status_code == 400
    assert response.json() == {
        "errors": ["public/sample_submission.csv: columns must be id, churned, not id, prediction."]
    }
