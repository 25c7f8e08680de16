"""A competition's files as a person expects (issue 26, item 11): numbers in names sort by value, images
open in the browser with their content type, every other file downloads; the page starts a run from its
top and its leaderboard note explains rather than alarms."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from webapp.competitions import services

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)
NUMBERS = (100, 10, 2, 1, 20)


@pytest.fixture
def pictures(make_bundle, owner):
    files = {f"public/images/{n}.png": PNG for n in NUMBERS} | {"public/images/notes.txt": "about\n"}
    return services.competition_import(path=make_bundle(files=files), owner=owner, is_public=True)


def file_url(competition, name: str) -> str:
    return reverse("competitions:file", args=[competition.slug, name])


def test_files_sort_by_the_numbers_in_their_names(client, pictures):
    url = reverse("competitions:detail", args=[pictures.slug]) + "?folder=images"
    body = client.get(url).content.decode()
    names = re.findall(r'href="/competitions/tiny-churn/files/images/([^"]+)"', body)
    assert names == ["1.png", "2.png", "10.png", "20.png", "100.png", "notes.txt"]


def test_an_image_opens_in_the_browser_with_its_content_type(client, pictures):
    response = client.get(file_url(pictures, "images/10.png"))
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert (
        response["Content-Disposition"].startswith("inline") and b"".join(response.streaming_content) == PNG
    )


def test_other_files_still_download(client, pictures):
    response = client.get(file_url(pictures, "train.csv"))
    assert response["Content-Disposition"].startswith("attachment")


def test_the_folder_listing_shows_a_thumbnail_of_each_image(client, pictures):
    body = client.get(
        reverse("competitions:detail", args=[pictures.slug]) + "?folder=images"
    ).content.decode()
    assert body.count('<img class="thumb"') == len(NUMBERS)
    assert f'src="{file_url(pictures, "images/1.png")}"' in body


def test_the_page_offers_to_start_a_run_at_its_top_and_explains_a_missing_leaderboard(
    client, pictures, owner
):
    client.force_login(owner)
    body = client.get(reverse("competitions:detail", args=[pictures.slug])).content.decode()
    start = body.index('id="start-run"')
    assert start < body.index('id="data"') and body.count('id="start-run"') == 1
    assert "Start a run on this competition" in body
    assert "No Kaggle leaderboard was uploaded" not in body
    assert "ranked by their result" in body
