"""Competition pages: list, detail, public file download, upload. Each view validates, calls one
service or selector, and renders."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from webapp.competitions import selectors, services
from webapp.competitions.bundles import BundleError
from webapp.competitions.forms import UploadForm
from webapp.markdown import render_markdown


def competition_list(request: HttpRequest) -> HttpResponse:
    competitions = selectors.competitions_visible_to(user=request.user).select_related("owner")
    return render(request, "competitions/list.html", {"competitions": competitions})


def competition_detail(request: HttpRequest, slug: str) -> HttpResponse:
    competition = visible_or_404(request, slug)
    preview = selectors.competition_preview(competition=competition)
    context = {
        "competition": competition,
        "metric": selectors.competition_metric(competition=competition),
        "description_html": render_markdown(competition.description),
        "preview_html": preview.to_html(index=False, classes="preview", border=0)
        if preview is not None
        else "",
        "medals": selectors.competition_medals(competition=competition),
    }
    return render(request, "competitions/detail.html", context)


def competition_file(request: HttpRequest, slug: str, name: str) -> FileResponse:
    """A public file; the answers are not under public/ and so can never be named here."""
    competition = visible_or_404(request, slug)
    path = selectors.competition_public_file(competition=competition, name=name)
    if path is None:
        raise Http404("No such public file.")
    return FileResponse(open(path, "rb"), as_attachment=True, filename=path.name)


@login_required
def competition_upload(request: HttpRequest) -> HttpResponse:
    form = UploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            competition = services.competition_import_upload(
                files=form.cleaned_data["files"], owner=request.user, is_public=form.cleaned_data["is_public"]
            )
        except BundleError as error:
            form.add_error("files", str(error))
        else:
            return redirect("competitions:detail", slug=competition.slug)
    status = 400 if request.method == "POST" else 200
    return render(request, "competitions/upload.html", {"form": form}, status=status)


def visible_or_404(request: HttpRequest, slug: str):
    competition = selectors.competition_get_visible(slug=slug, user=request.user)
    if competition is None:
        raise Http404("No such competition.")
    return competition
