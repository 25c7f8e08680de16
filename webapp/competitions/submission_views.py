"""The submit page of a competition: grade your own submission.csv against its hidden answers (Kaggle's
"Submit predictions"), with your earlier submissions listed. Logged-in users only, on competitions they can
see; the grading, the size limit and the rate limit are webapp.competitions.submissions'.

A page of its own (like tables/views.py) so the competition pages' module stays about browsing."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from webapp.competitions import selectors, submissions
from webapp.competitions.forms import SubmissionForm
from webapp.competitions.models import Submission

HISTORY_SHOWN = 50
"""The user's most recent submissions listed on the page."""


@login_required
def competition_submit(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the form, the latest grade (`?graded=ID`, after a POST) and the history. POST: grade the file,
    then redirect back (so reloading the page never grades it again)."""
    competition = selectors.competition_get_visible(slug=slug, user=request.user)
    if competition is None:
        raise Http404("No such competition.")
    form = SubmissionForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            submission = submissions.submission_grade(
                user=request.user, competition=competition, upload=form.cleaned_data["file"]
            )
        except submissions.SubmissionRefused as error:
            form.add_error("file", str(error))
        else:
            url = reverse("competitions:submit", args=[competition.slug])
            return redirect(f"{url}?graded={submission.id}")
    history = submissions.submissions_of(user=request.user, competition=competition)
    context = {
        "competition": competition,
        "metric": selectors.competition_metric(competition=competition),
        "form": form,
        "graded": just_graded(request, history),
        "history": history[:HISTORY_SHOWN],
        "quota": submissions.submission_quota(user=request.user, competition=competition),
        "max_mb": settings.PRACTICUM_SUBMISSION_MAX_MB,
    }
    return render(request, "competitions/submit.html", context, status=400 if form.errors else 200)


def just_graded(request: HttpRequest, history: QuerySet[Submission]) -> Submission | None:
    """The submission `?graded=ID` names when it is the user's own, for the result panel."""
    graded = request.GET.get("graded", "")
    if request.method != "GET" or not graded.isdigit() or len(graded) > 18:  # 18 digits fit a bigint
        return None
    return history.filter(id=int(graded)).first()
