"""The attempt page (issue 26, item 10): the parent an improve attempt started from and the coloured diff from
it, the score at its metric's precision with the metric's name and direction, previous/next, the bundle."""

from __future__ import annotations

import pytest
from django.urls import reverse

from rl_core.outcome import AttemptOutcome
from webapp.runs import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def attempt():
    """attempt(run, key, score=..., program=..., kind=..., parent=...) -> Attempt, through the services."""

    def make(run, key: str, *, score: float | None = 0.5, program="x = 1\n", kind="improve", parent=""):
        sample = {"prompt_kind": kind, "parent_key": parent, "response": f"```python\n{program}```"}
        services.attempt_start(
            run_id=run.id, key=key, competition=run.competitions.get(), sample_fields=sample, policy_version=0
        )
        outcome = AttemptOutcome.from_dict(outcome_of(score=score, program=program))
        return services.attempt_finish(run_id=run.id, key=key, outcome=outcome, staleness=0)

    return make


def outcome_of(*, score: float | None, program: str) -> dict:
    valid = score is not None
    return {
        "status": "ok" if valid else "error", "exit_code": 0 if valid else 1, "duration_s": 1.0,
        "stages": ["imports_done"], "valid": valid, "score": score, "grade_error": "" if valid else "no file",
        "reward": score or -1.0, "isolation": "rlimits", "stdout_tail": "", "stderr_tail": "", "plan": "",
        "program": program, "instrumented_program": program, "instrumentation": "ast",
    }  # fmt: skip


def page(client, attempt) -> str:
    return client.get(reverse("dashboards:attempt", args=[attempt.run_id, attempt.number])).content.decode()


def test_an_improve_attempt_names_its_parent_and_diffs_against_it_not_the_best(as_user, owner, run, attempt):
    attempt(run, "0-0", score=0.9, program="model = 'forest'\n", kind="solve")  # the run's best
    parent = attempt(run, "0-1", score=0.5, program="model = 'knn'\n", kind="solve")
    child = attempt(run, "0-2", score=0.6, program="model = 'knn'\nk = 5\n", parent="0-1")
    response = as_user(owner).get(reverse("dashboards:attempt", args=[run.id, child.number]))
    assert response.context["parent"].attempt == parent
    assert [(line.kind, line.text) for line in response.context["parent_diff"]][-2:] == [
        ("context", " model = 'knn'"),
        ("added", "+k = 5"),
    ]
    body = response.content.decode()
    parent_url = reverse("dashboards:attempt", args=[run.id, parent.number])
    assert f'Changes from <a href="{parent_url}">attempt {parent.number}</a> (its parent)' in body
    assert '<span class="diff-line diff-added">+k = 5</span>' in body


def test_a_solve_attempt_is_a_fresh_solution_with_no_parent_diff(as_user, owner, run, attempt):
    solved = attempt(run, "0-0", kind="solve")
    body = page(as_user(owner), solved)
    assert "A fresh solution (solve prompt)." in body and 'id="parent-changes"' not in body


def test_an_attempt_improving_the_seeded_baseline_says_so(as_user, owner, run, attempt):
    child = attempt(run, "0-0", parent="0-baseline-0")
    body = page(as_user(owner), child)
    assert "Improves the competition's baseline" in body and 'id="parent-changes"' not in body


def test_an_improve_attempt_from_before_parents_were_tracked_says_its_parent_is_unknown(
    as_user, owner, run, attempt
):
    body = page(as_user(owner), attempt(run, "0-0", parent=""))
    assert "was not recorded" in body


def test_the_score_is_shown_at_five_significant_digits_with_its_metric_and_direction(
    as_user, owner, run, attempt
):
    scored = attempt(run, "0-0", score=2 / 3, kind="solve")  # tiny-churn is graded by accuracy
    body = page(as_user(owner), scored)
    assert '<strong id="score">accuracy 0.66667 (higher is better)</strong>' in body
    assert "0.6666666" not in body


def test_previous_and_next_link_the_neighbouring_attempts_and_hide_at_the_ends(as_user, owner, run, attempt):
    first, middle, last = (attempt(run, f"0-{n}", kind="solve") for n in range(3))
    client = as_user(owner)
    url = lambda a: reverse("dashboards:attempt", args=[run.id, a.number])  # noqa: E731
    opening = page(client, first)
    assert 'id="previous-attempt"' not in opening and f'id="next-attempt" href="{url(middle)}"' in opening
    body = page(client, middle)
    assert f'id="previous-attempt" href="{url(first)}"' in body
    assert f'id="next-attempt" href="{url(last)}"' in body
    assert 'id="next-attempt"' not in page(client, last)


def test_the_attempt_page_links_its_bundle(as_user, owner, run, attempt):
    solved = attempt(run, "0-0", kind="solve")
    bundle = reverse("dashboards:attempt_bundle", args=[run.id, solved.number])
    assert f'id="bundle" href="{bundle}"' in page(as_user(owner), solved)


def test_diff_lines_are_escaped(as_user, owner, run, attempt):
    attempt(run, "0-0", program="x = 1\n", kind="solve")
    child = attempt(run, "0-1", program="x = '<script>alert(1)</script>'\n", parent="0-0")
    body = page(as_user(owner), child)
    assert "+x = &#x27;&lt;script&gt;alert(1)&lt;/script&gt;&#x27;" in body and "<script>alert" not in body
