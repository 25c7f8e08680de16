"""Competition pages and files: who sees what, uploads with inline errors, sanitised descriptions."""

from __future__ import annotations

import html

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from webapp.competitions import services
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
