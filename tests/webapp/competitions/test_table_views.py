"""A competition from one labelled table, in the browser (real PostgreSQL): the proposal page, creating
the competition, and one-sentence errors that store nothing. The proposal, split and files are tested in
test_from_table.py."""

from __future__ import annotations

import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from table_penguins import penguins  # beside this file (on sys.path: conftest.py)

from webapp.competitions import storage
from webapp.competitions.models import Competition


def upload(
    client, frame: pd.DataFrame | None = None, content: bytes | None = None, name: str = "penguins.csv"
):
    data = (
        content if content is not None else (frame if frame is not None else penguins()).to_csv(index=False)
    )
    payload = data.encode() if isinstance(data, str) else data
    return client.post(reverse("competitions:table_upload"), {"table": SimpleUploadedFile(name, payload)})


def choices_post(**overrides) -> dict:
    return {
        "name": "Penguins", "slug": "penguins", "id_column": "PassengerId", "target_columns": ["species"],
        "metric": "log_loss", "test_fraction": "0.2", "action": "create", **overrides,
    }  # fmt: skip


@pytest.mark.django_db
def test_uploading_a_table_shows_the_proposal_and_creating_lands_on_the_competition(client, owner, data_dir):
    client.force_login(owner)
    response = upload(client)
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert '<option value="species" selected>' in page and '<option value="log_loss" selected>' in page
    assert "<strong>48</strong> rows in <code>train.csv</code>" in page and "<td>20 rows</td>" in page
    created = client.post(response["Location"], choices_post())
    assert created.status_code == 302 and created["Location"] == reverse(
        "competitions:detail", args=["penguins"]
    )
    assert Competition.objects.get().owner == owner
    assert not list((data_dir / "table_drafts").iterdir()), "the draft is gone once the competition exists"


@pytest.mark.django_db
@pytest.mark.parametrize("content", [b"", b"a,b\n1,2,3\n", b"\xff\xfe\x00garbage"])
def test_an_unreadable_upload_is_refused_in_one_sentence_and_keeps_no_draft(client, owner, data_dir, content):
    client.force_login(owner)
    response = upload(client, content=content, name="t.csv")
    assert response.status_code == 400
    errors = response.content.decode().split('id="table-errors">')[1].split("</div>")[0]
    assert errors.startswith("<p>t.csv: ") and errors.count("<p>") == 1
    drafts = data_dir / "table_drafts"
    assert not drafts.exists() or not list(drafts.iterdir())


@pytest.mark.django_db
def test_a_wrong_choice_is_shown_and_stores_nothing(client, owner):
    client.force_login(owner)
    location = upload(client)["Location"]
    response = client.post(location, choices_post(metric="roc_auc"))
    assert response.status_code == 400
    assert (
        "the metric &#x27;roc_auc&#x27; does not fit a target of more than two classes"
        in response.content.decode()
    )
    assert not Competition.objects.exists() and not storage.competition_dir("penguins").exists()


@pytest.mark.django_db
def test_a_new_target_gets_a_metric_that_fits_it(client, owner):
    client.force_login(owner)
    location = upload(client)["Location"]
    page = client.post(
        location, choices_post(target_columns=["body_mass_g"], action="preview")
    ).content.decode()
    assert '<option value="rmse" selected>' in page and "is proposed instead" in page
    assert not Competition.objects.exists()


@pytest.mark.django_db
def test_another_user_cannot_open_a_draft(client, owner, stranger):
    client.force_login(owner)
    location = upload(client)["Location"]
    client.force_login(stranger)
    assert client.get(location).status_code == 404
    assert client.post(location, choices_post()).status_code == 404
    assert not Competition.objects.exists()
