"""Studies from the pages: the start form's Study part starts one (errors at their field), the study page and
its data.json (the same statistics as the API), visibility as for runs, and cancelling (owner only)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.runs import studies, study_reads
from webapp.runs.models import Run, Study
from webapp.runs.study_plan import Arm

pytestmark = pytest.mark.django_db

FORM = {
    "policy": "grammar", "model": "", "attempts": 4, "actors": 1, "batch": 2, "duration_aware": "on",
    "instrument": "on", "credit_valid": "on", "updates": "on", "reward_preset": "normalized",
    "reward_source": "hidden", "improve_prob": 0.5, "objective": "ppo", "lr": 0.05, "seed": 3,
}  # fmt: skip


def start_form(competition, **changes) -> dict:
    return {**FORM, "competitions": [competition.id], **changes}


@pytest.fixture
def study(competition, owner):
    arms = [Arm("static", {"updates": False}), Arm("rl")]
    return studies.study_start(
        owner=owner, competitions=[competition], config={"attempts": 4}, arms=arms, seeds=2
    )


def test_seeds_and_arms_on_the_form_start_a_study_and_open_its_page(as_user, owner, competition):
    form = start_form(competition, study_seeds=2, study_arms="static: updates=off\r\nrl")
    response = as_user(owner).post(reverse("dashboards:run_start"), form)
    study = Study.objects.get()
    assert response.status_code == 302 and response.url == reverse("dashboards:study", args=[study.id])
    assert study.seeds == [0, 1] and [a["name"] for a in study.arms] == ["static", "rl"]
    (run,) = study.runs.all()
    assert (run.study_arm, run.config["updates"], run.config["batch"]) == ("static", False, 2)


def test_one_seed_and_no_arms_start_an_ordinary_run(as_user, owner, competition):
    response = as_user(owner).post(reverse("dashboards:run_start"), start_form(competition, study_seeds=1))
    run = Run.objects.get()
    assert response.url == reverse("dashboards:run", args=[run.id]) and run.study is None
    assert not Study.objects.exists()


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"study_arms": "static: updates=maybe"}, "study_arms", "arm 'static': updates must be on or off"),
        ({"study_arms": "big: batch=0"}, "study_arms", "arm 'big': batch must be positive"),
        ({"study_seeds": 30}, "study_seeds", "less than or equal to 20"),
    ],
)
def test_a_study_the_form_cannot_start_shows_why_at_its_field(
    as_user, owner, competition, changes, field, words
):
    response = as_user(owner).post(
        reverse("dashboards:run_start"), start_form(competition, **{"study_seeds": 2, **changes})
    )
    assert response.status_code == 400 and not Study.objects.exists() and not Run.objects.exists()
    assert words in " ".join(response.context["form"].errors[field])


def test_the_start_form_offers_rl_against_static(as_user, owner):
    page = as_user(owner).get(reverse("dashboards:run_start")).content.decode()
    assert 'id="rl-against-static"' in page and 'id="id_study_arms"' in page and 'id="id_study_seeds"' in page


def test_the_study_page_names_its_arms_and_what_the_test_counts(as_user, owner, study):
    page = as_user(owner).get(reverse("dashboards:study", args=[study.id])).content.decode()
    assert "static" in page and "updates = False" in page and "after the first policy update" in page
    assert 'id="chart-reward-attempts"' in page and 'id="study-cancel"' in page


def test_the_data_endpoint_gives_the_study_statistics_at_the_asked_smoothing(as_user, owner, study):
    data = as_user(owner).get(reverse("dashboards:study_data", args=[study.id]), {"smoothing": "0.9"}).json()
    assert data == study_reads.study_statistics(study, smoothing=0.9)


def test_a_private_study_is_hidden_from_others(as_user, stranger, study):
    client = as_user(stranger)
    assert client.get(reverse("dashboards:study", args=[study.id])).status_code == 404
    assert client.get(reverse("dashboards:study_data", args=[study.id])).status_code == 404


def test_only_the_owner_cancels_a_study(as_user, owner, teammate, study):
    Study.objects.filter(id=study.id).update(is_public=True)
    assert as_user(teammate).post(reverse("dashboards:study_cancel", args=[study.id])).status_code == 403
    as_user(owner).post(reverse("dashboards:study_cancel", args=[study.id]))
    assert Study.objects.get(id=study.id).cancelled and study.runs.get().status == Run.Status.CANCELLED


def test_a_study_run_links_to_its_study(as_user, owner, study):
    run = study.runs.get()
    page = as_user(owner).get(reverse("dashboards:run", args=[run.id])).content.decode()
    assert reverse("dashboards:study", args=[study.id]) in page


def test_the_studies_list_shows_the_visible_studies(as_user, owner, study):
    page = as_user(owner).get(reverse("dashboards:study_list")).content.decode()
    assert f"#{study.id} static vs rl × 2 seeds" in page and "1 of 4" in page
