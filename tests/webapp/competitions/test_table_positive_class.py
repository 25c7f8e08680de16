"""The labelled-table flow names a binary target's positive class as the table holds it (issue 26, item 11):
"P(label = "spam")", not "P(label = 1)", on the proposal page and in the competition's description."""

from __future__ import annotations

import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from webapp.competitions import storage

pytestmark = pytest.mark.django_db

N_ROWS = 60


def messages(labels: tuple[str, str] = ("ham", "spam")) -> pd.DataFrame:
    """An id, two numeric features and a two-class text label (the last column, the proposed target)."""
    return pd.DataFrame(
        {
            "message_id": range(1, N_ROWS + 1),
            "length": [20 + (i * 7) % 90 for i in range(N_ROWS)],
            "links": [i % 4 for i in range(N_ROWS)],
            "label": [labels[i % 2] for i in range(N_ROWS)],
        }
    )


def propose(client, frame: pd.DataFrame) -> str:
    """Upload `frame` as a CSV and return the proposal page's URL."""
    table = SimpleUploadedFile("messages.csv", frame.to_csv(index=False).encode())
    response = client.post(reverse("competitions:table_upload"), {"table": table})
    assert response.status_code == 302
    return response["Location"]


def test_the_proposal_names_the_positive_class_of_a_text_label(client, owner):
    client.force_login(owner)
    page = client.get(propose(client, messages())).content.decode()
    assert '<option value="roc_auc" selected>' in page
    assert "Area under the ROC curve of P(label = &quot;spam&quot;)" in page
    assert "P(label = 1)" not in page


def test_the_description_names_the_positive_class_too(client, owner):
    client.force_login(owner)
    url = propose(client, messages())
    choices = {"name": "Spam", "slug": "spam", "id_column": "message_id", "target_columns": ["label"],
               "metric": "roc_auc", "test_fraction": "0.2", "action": "create"}  # fmt: skip
    assert client.post(url, choices).status_code == 302
    description = (storage.competition_dir("spam") / "description.md").read_text()
    assert 'P(label = "spam")' in description and "P(label = 1)" not in description


def test_a_zero_one_label_is_named_as_the_number_it_is(client, owner):
    client.force_login(owner)
    page = client.get(propose(client, messages(("0", "1")))).content.decode()
    assert "P(label = 1)" in page and "&quot;1&quot;" not in page
