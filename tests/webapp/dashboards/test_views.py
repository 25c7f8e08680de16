"""Run control from the pages: start (with inline errors), clone with changes, cancel (owner only);
the run and attempt pages; the competition page's leaderboard and start button."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from rl_core.outcome import AttemptOutcome
from rl_core.run_spec import RunConfig
from webapp.runs import services
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db

FORM = {
    "policy": "grammar", "model": "", "attempts": 4, "actors": 1, "batch": 2, "duration_aware": "on",
    "instrument": "on", "credit_valid": "on", "reward_preset": "normalized", "reward_source": "hidden",
    "improve_prob": 0.5, "objective": "ppo", "lr": 0.05, "seed": 3,
}  # fmt: skip


def start_form(competition, **changes) -> dict:
    return {**FORM, "competitions": [competition.id], **changes}


def test_starting_a_run_from_the_form_creates_it_with_the_submitted_settings(
    as_user, owner, competition, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = as_user(owner).post(reverse("dashboards:run_start"), start_form(competition, sync="on"))
    run = Run.objects.get()
    assert response.status_code == 302 and response.url == reverse("dashboards:run", args=[run.id])
    assert run.owner == owner and run.config["seed"] == 3 and run.config["sync"] is True
    assert run.config["duration_aware"] is True and run.config["batch"] == 2
    assert len(callbacks) == 2  # the run's live event, and handing it to a supervisor


def test_unticked_switches_turn_duration_aware_updates_instrumentation_and_credit_valid_off(
    as_user, owner, competition
):
    switches = ("duration_aware", "instrument", "credit_valid")
    data = {k: v for k, v in start_form(competition).items() if k not in switches}
    as_user(owner).post(reverse("dashboards:run_start"), data)
    config = Run.objects.get().config
    assert [config[name] for name in switches] == [False, False, False]


def test_the_start_page_ticks_credit_for_valid_submissions_as_the_paper_does(as_user, owner):
    form = as_user(owner).get(reverse("dashboards:run_start")).context["form"]
    assert form["credit_valid"].value() is True


def test_a_setting_the_run_config_rejects_is_shown_next_to_its_field(as_user, owner, competition):
    response = as_user(owner).post(reverse("dashboards:run_start"), start_form(competition, lr=0))
    assert response.status_code == 400 and not Run.objects.exists()
    assert response.context["form"].errors["lr"] == ["config: lr must be positive, not 0.0."]
    assert b"lr must be positive" in response.content


def test_a_form_error_starts_nothing(as_user, owner, competition):
    response = as_user(owner).post(reverse("dashboards:run_start"), start_form(competition, batch=0))
    assert response.status_code == 400 and "batch" in response.context["form"].errors
    assert not Run.objects.exists()


def test_a_run_over_the_users_quota_is_refused_on_the_form_with_the_reason(
    as_user, owner, competition, settings
):
    settings.PRACTICUM_MAX_RUNS_PER_USER = 1
    as_user(owner).post(reverse("dashboards:run_start"), start_form(competition))
    response = as_user(owner).post(reverse("dashboards:run_start"), start_form(competition))
    assert response.status_code == 400 and Run.objects.count() == 1
    assert b"You already have 1 run queued or running" in response.content


def test_nobody_can_start_a_run_on_a_competition_they_cannot_see(as_user, stranger, competition):
    response = as_user(stranger).post(reverse("dashboards:run_start"), start_form(competition))
    assert response.status_code == 400 and "competitions" in response.context["form"].errors


def test_the_start_page_preselects_the_competition_it_was_opened_from(as_user, owner, competition):
    response = as_user(owner).get(reverse("dashboards:run_start") + f"?competition={competition.slug}")
    assert response.context["form"].initial["competitions"] == [competition]


def test_the_start_page_shows_the_first_settings_then_the_lm_ones_then_the_rest_collapsed(as_user, owner):
    response = as_user(owner).get(reverse("dashboards:run_start"))
    sections = response.context["sections"]
    assert [f.name for f in sections["first"].fields] == [
        "competitions", "name", "is_public", "policy", "attempts", "actors", "batch", "reward_source"
    ]  # fmt: skip
    assert {"temperature", "warm_start_demos", "instrumenter"} <= {f.name for f in sections["lm"].fields}
    assert {"seed", "duration_aware", "improve_from"} <= {f.name for f in sections["advanced"].fields}
    page = response.content.decode()
    assert '<details id="advanced">' in page and 'id="lm-settings"' in page


def test_a_form_error_in_an_advanced_setting_opens_the_advanced_section(as_user, owner, competition):
    response = as_user(owner).post(reverse("dashboards:run_start"), start_form(competition, seed="x"))
    assert response.status_code == 400 and '<details id="advanced" open>' in response.content.decode()


def test_the_start_page_offers_presets_that_fill_in_measured_settings(as_user, owner):
    presets = {p["key"]: p for p in as_user(owner).get(reverse("dashboards:run_start")).context["presets"]}
    assert presets["grammar-quick"]["fields"]["policy"] == "grammar"
    lm = presets["lm-warm-start"]["fields"]
    assert (lm["policy"], lm["temperature"], lm["warm_start_demos"]) == ("lm", 0.3, 48)
    assert RunConfig.from_dict(dict(lm)).policy == "lm"  # every preset is a valid configuration


def test_the_clone_form_is_prefilled_with_the_source_runs_settings(as_user, owner, other_run):
    response = as_user(owner).get(reverse("dashboards:run_clone", args=[other_run.id]))
    initial = response.context["form"].initial
    assert initial["seed"] == 7 and initial["batch"] == 2 and initial["attempts"] == 4


def test_a_clone_with_changes_records_where_it_came_from(as_user, owner, other_run, competition):
    data = start_form(competition, seed=11)
    response = as_user(owner).post(reverse("dashboards:run_clone", args=[other_run.id]), data)
    clone = Run.objects.exclude(id=other_run.id).get()
    assert response.status_code == 302 and clone.cloned_from == other_run and clone.config["seed"] == 11


def test_the_owner_can_cancel_a_run_from_its_page(as_user, owner, run):
    response = as_user(owner).post(reverse("dashboards:run_cancel", args=[run.id]))
    run.refresh_from_db()
    assert response.status_code == 302 and run.status == Run.Status.CANCELLED


def test_another_user_who_can_watch_a_public_run_cannot_cancel_it(as_user, stranger, public_run):
    response = as_user(stranger).post(reverse("dashboards:run_cancel", args=[public_run.id]))
    public_run.refresh_from_db()
    assert response.status_code == 403 and public_run.status == Run.Status.QUEUED


def test_the_run_page_offers_cancel_to_its_owner_only(as_user, owner, stranger, public_run):
    assert b'id="cancel"' in as_user(owner).get(reverse("dashboards:run", args=[public_run.id])).content
    as_user(stranger)
    assert (
        b'id="cancel"' not in as_user(stranger).get(reverse("dashboards:run", args=[public_run.id])).content
    )


def test_the_attempt_page_diffs_an_attempt_against_the_runs_best_in_a_fold(as_user, owner, run, finish):
    finish(run, score=0.9, program="model = 'forest'\n")
    worse = finish(run, score=0.5, program="model = 'knn'\n")
    response = as_user(owner).get(reverse("dashboards:attempt", args=[run.id, worse.number]))
    texts = [line.text for line in response.context["best_diff"]]
    assert texts[-2:] == ["-model = 'forest'", "+model = 'knn'"]


def test_ticking_evaluate_on_the_form_makes_the_run_evaluate_its_final_policy(as_user, owner, competition):
    as_user(owner).post(reverse("dashboards:run_start"), start_form(competition, final_evaluation="on"))
    assert Run.objects.get().config["final_evaluation"] is True


def test_the_run_page_shows_the_evaluation_and_links_the_kept_attempt(as_user, owner, run, finish):
    finish(run, score=0.5)
    finish(run, score=0.7, kind="eval-solve")
    kept = finish(run, score=0.9, kind="eval-improve")  # the competition's metric: higher is better
    page = as_user(owner).get(reverse("dashboards:run", args=[run.id])).content.decode()
    evaluation = page[page.index('id="evaluation"') :]
    assert "0.7" in evaluation and reverse("dashboards:attempt", args=[run.id, kept.number]) in evaluation


def test_a_run_that_was_not_evaluated_has_no_evaluation_card(as_user, owner, run, finish):
    finish(run, score=0.5)
    assert (
        'id="evaluation"' not in as_user(owner).get(reverse("dashboards:run", args=[run.id])).content.decode()
    )


def test_the_competition_page_lists_the_runs_on_it_best_first(
    as_user, owner, run, other_run, finish, competition
):
    finish(run, score=0.5)
    finish(other_run, score=0.75)
    response = as_user(owner).get(reverse("competitions:detail", args=[competition.slug]))
    content = response.content.decode()
    assert content.index(f"#{other_run.id} ") < content.index(f"#{run.id} ") and 'id="start-run"' in content


def stored_warm_start(data_dir, name: str, competitions: list[str]) -> None:
    folder = data_dir / "adapters" / name
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}")
    manifest = {
        "kind": "lora", "base_model": "smollm2-135m", "competitions": competitions, "demonstrations": 8,
        "by_source": {"grammar": 8}, "by_kind": {"solve": 8}, "steps": 16, "loss_first": 1.2,
        "loss_last": 0.3, "created_at": "2026-12-01T10:00:00+00:00",
    }  # fmt: skip
    (folder / "warmstart.json").write_text(json.dumps(manifest))


def test_the_form_starts_an_lm_run_that_fine_tunes_first_with_its_reward_settings(
    as_user, owner, competition
):
    data = start_form(
        competition, policy="lm", lr=1e-5, warm_start_demos=12, imitate_runs="", seed_baseline="on",
        baseline_program="print('baseline')\n", failure_reward=-2, credit_per_stage=0.05, reward_mode="score",
        kl_coef=0.1, temperature=0.9, max_new_tokens=512,
    )  # fmt: skip
    as_user(owner).post(reverse("dashboards:run_start"), data)
    config = Run.objects.get().config
    assert (config["warm_start_demos"], config["seed_baseline"], config["baseline_program"]) == (
        12, True, "print('baseline')\n",
    )  # fmt: skip
    assert (config["failure_reward"], config["credit_per_stage"], config["kl_coef"]) == (-2.0, 0.05, 0.1)
    assert (config["temperature"], config["max_new_tokens"]) == (0.9, 512)


def test_the_form_offers_the_warm_starts_the_user_may_use(as_user, owner, competition, data_dir):
    stored_warm_start(data_dir, "mine", [competition.slug])
    stored_warm_start(data_dir, "theirs", ["a-private-competition-of-someone-else"])
    choices = dict(
        as_user(owner).get(reverse("dashboards:run_start")).context["form"].fields["warm_start"].choices
    )
    assert "mine" in choices and "theirs" not in choices and choices[""] == "fresh (no warm start)"


def test_a_clone_keeps_what_the_form_does_not_show_and_can_change_the_warm_start(
    as_user, owner, competition, data_dir
):
    stored_warm_start(data_dir, "mine", [competition.slug])
    source = services.run_create(
        owner=owner, competitions=[competition], policy="lm",
        config=RunConfig(policy="lm", lr=1e-5, checkpoint_every=5, warm_start="mine").to_dict(),
    )  # fmt: skip
    form = as_user(owner).get(reverse("dashboards:run_clone", args=[source.id])).context["form"]
    assert form.initial["warm_start"] == "mine"
    data = start_form(competition, policy="lm", lr=1e-5, warm_start="")
    as_user(owner).post(reverse("dashboards:run_clone", args=[source.id]), data)
    clone = Run.objects.exclude(id=source.id).get()
    assert (clone.config["checkpoint_every"], clone.config["warm_start"]) == (5, "")


def test_the_warm_starts_page_lists_what_each_was_trained_on(as_user, owner, competition, data_dir):
    stored_warm_start(data_dir, "mine", [competition.slug])
    stored_warm_start(data_dir, "theirs", ["a-private-competition-of-someone-else"])
    page = as_user(owner).get(reverse("dashboards:warm_starts")).content.decode()
    assert "mine" in page and competition.slug in page and "1.200 → 0.300" in page and "theirs" not in page
    assert "?warm_start=mine" in page


def test_the_form_starts_an_lm_run_whose_frozen_base_instruments_its_programs(as_user, owner, competition):
    data = start_form(competition, policy="lm", instrumenter="lm")
    as_user(owner).post(reverse("dashboards:run_start"), data)
    assert Run.objects.get().config["instrumenter"] == "lm"


def test_the_form_refuses_an_lm_instrumenter_for_the_grammar_policy_next_to_its_field(
    as_user, owner, competition
):
    data = start_form(competition, instrumenter="lm")
    response = as_user(owner).post(reverse("dashboards:run_start"), data)
    assert response.status_code == 400 and not Run.objects.exists()
    assert "instrumenter 'lm' needs policy 'lm'" in response.context["form"].errors["instrumenter"][0]


def test_the_attempt_page_and_api_say_the_lms_markers_were_refused_when_the_rules_ran_instead(
    as_user, owner, run
):
    services.attempt_start(
        run_id=run.id, key="0-0", competition=run.competitions.get(), policy_version=0,
        sample_fields={"response": "```python\nprint(1)\n```"},
    )  # fmt: skip
    outcome = {
        "status": "error", "exit_code": 1, "duration_s": 1.0, "stages": ["imports_done"], "valid": False,
        "score": None, "grade_error": "no file", "reward": -0.9, "isolation": "rlimits", "stdout_tail": "",
        "stderr_tail": "", "plan": "", "program": "print(1)\n", "instrumented_program": "print(1)\n",
        "instrumentation": "lm-fallback",
    }  # fmt: skip
    attempt = services.attempt_finish(
        run_id=run.id, key="0-0", outcome=AttemptOutcome.from_dict(outcome), staleness=0
    )
    response = as_user(owner).get(reverse("dashboards:attempt", args=[run.id, attempt.number]))
    assert b"Instrumented by: AST rules (the LM&#x27;s markers were refused)" in response.content
    listed = as_user(owner).get(f"/api/runs/{run.id}/attempts/").json()["results"]
    assert [a["instrumentation"] for a in listed] == ["lm-fallback"]


def test_the_run_page_says_what_its_numbers_mean(as_user, owner, public_run):
    """The summary names the metric and its direction, the budget, how the reward is made (why it passes 1),
    and the settings in words; a grammar run has no language-model charts."""
    page = as_user(owner).get(reverse("dashboards:run", args=[public_run.id])).content.decode()
    metric = public_run.competitions.get().metric
    assert f"<strong>{metric}</strong> (" in page and "is better)" in page
    assert 'id="stat-budget">4<' in page
    assert "so a reward can reach 1.6" in page
    assert "Attempts in flight (K)" in page and "Settings: 1 changed from the defaults" in page
    assert 'id="chart-score"' in page and 'id="diagnostics"' in page
    assert 'id="chart-sampler"' not in page and 'id="chart-tokens"' not in page


def test_a_language_model_run_page_has_the_generation_charts(as_user, owner, competition):
    config = RunConfig(policy="lm", attempts=4).to_dict()
    run = services.run_create(
        owner=owner, competitions=[competition], policy="lm", config=config, is_public=True
    )
    page = as_user(owner).get(reverse("dashboards:run", args=[run.id])).content.decode()
    assert 'id="chart-sampler"' in page and 'id="chart-generation"' in page and 'id="chart-tokens"' in page
    assert "Sampling temperature" in page  # the language-model settings show for an LM run only


def test_a_validation_run_on_a_competition_without_a_labelled_table_is_refused_with_the_reason(
    as_user, owner
):
    from webapp.competitions.management.commands.seed_competitions import seed_one

    digits = seed_one("digit-images")
    response = as_user(owner).post(
        reverse("dashboards:run_start"), start_form(digits, reward_source="validation")
    )
    assert response.status_code == 400 and not Run.objects.exists()
    errors = response.context["form"].errors["reward_source"]
    assert "'digit-images' offers only 'hidden'" in errors[0] and "images/" in errors[0]


def test_the_competition_page_says_which_reward_sources_it_offers_and_why(client):
    from webapp.competitions.management.commands.seed_competitions import seed_one

    iris, digits = seed_one("iris-species"), seed_one("digit-images")
    offers = client.get(reverse("competitions:detail", args=[iris.slug])).content.decode()
    assert "a validation split</strong> of its labelled training table" in offers
    refuses = client.get(reverse("competitions:detail", args=[digits.slug])).content.decode()
    assert "hidden answers only</strong> (no validation split: " in refuses and "images/" in refuses


def test_scripts_travel_gzipped_to_a_browser_that_accepts_it(client):
    import gzip

    plain = client.get(reverse("dashboards:plotly_js"))
    packed = client.get(reverse("dashboards:plotly_js"), HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert "Content-Encoding" not in plain and packed["Content-Encoding"] == "gzip"
    assert gzip.decompress(packed.content) == plain.content and len(packed.content) < len(plain.content) / 2
    assert packed["Vary"] == "Accept-Encoding"
    script = client.get("/assets/run.js", HTTP_ACCEPT_ENCODING="gzip")
    assert script["Content-Encoding"] == "gzip" and b"connect()" in gzip.decompress(script.content)
