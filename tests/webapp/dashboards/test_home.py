"""The home page's run to watch (issue 26, item 8): the newest active run the visitor may see, else the
newest finished one; never someone else's private run."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.runs.models import Run

pytestmark = pytest.mark.django_db


def make_run(owner, status: str, *, public: bool = True) -> Run:
    return Run.objects.create(owner=owner, name=status, is_public=public, status=status)


def showcase(client) -> Run | None:
    response = client.get(reverse("home"))
    assert response.status_code == 200
    return response.context["showcase"]


def test_the_home_page_points_to_the_newest_active_run(client, owner):
    make_run(owner, Run.Status.RUNNING)
    newest_active = make_run(owner, Run.Status.QUEUED)
    make_run(owner, Run.Status.FINISHED)
    assert showcase(client) == newest_active


def test_without_an_active_run_it_points_to_the_newest_finished_one(client, owner):
    make_run(owner, Run.Status.FINISHED)
    newest = make_run(owner, Run.Status.FINISHED)
    make_run(owner, Run.Status.FAILED)
    assert showcase(client) == newest


def test_it_never_points_a_visitor_to_another_users_private_run(client, owner, stranger):
    public = make_run(owner, Run.Status.FINISHED)
    private = make_run(owner, Run.Status.RUNNING, public=False)
    assert showcase(client) == public
    client.force_login(owner)
    assert showcase(client) == private
