"""Competition pages: list, detail, public file download, upload. Each view validates, calls one
service or selector, and renders."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from webapp.competitions import selectors, services, uploads
from webapp.competitions.forms import UploadForm
from webapp.competitions.importing.bundles import BundleError
from webapp.markdown import render_markdown

FILES_PER_PAGE = 100  # rows of one folder's listing per page: a folder of 20,000 images stays a small page


def competition_list(request: HttpRequest) -> HttpResponse:
    competitions = selectors.competitions_visible_to(user=request.user).select_related("owner")
    return render(request, "competitions/list.html", {"competitions": competitions})


def competition_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """The competition, its data folder by folder (`?folder=images/train`, `&page=N`), its leaderboard."""
    competition = visible_or_404(request, slug)
    folder = request.GET.get("folder", "")
    listing = selectors.competition_folder_listing(competition=competition, folder=folder)
    if listing is None:
        raise Http404("No such folder of public files.")
    preview = None if listing.folder.path else selectors.competition_preview(competition=competition)
    context = {
        "competition": competition,
        "metric": selectors.competition_metric(competition=competition),
        "description_html": render_markdown(competition.description),
        "listing": listing,
        "page": Paginator(listing.entries, FILES_PER_PAGE).get_page(request.GET.get("page")),
        "preview_html": preview.to_html(index=False, classes="preview", border=0)
        if preview is not None
        else "",
        "medals": selectors.competition_medals(competition=competition),
        "validation_refusal": selectors.competition_validation_refusal(competition=competition),
    }
    return render(request, "competitions/detail.html", context)


def competition_file(request: HttpRequest, slug: str, name: str) -> FileResponse:
    """A public file; the answers are not under public/ and so can never be named here. Images open in the
    browser (with their content type); every other file downloads."""
    competition = visible_or_404(request, slug)
    path = selectors.competition_public_file(competition=competition, name=name)
    if path is None:
        raise Http404("No such public file.")
    inline = selectors.file_kind(path.name) in selectors.IMAGE_KINDS
    return FileResponse(open(path, "rb"), as_attachment=not inline, filename=path.name)


@login_required
def competition_upload(request: HttpRequest) -> HttpResponse:
    """The upload page. Its script sends a .zip in parts (the views below) and picked files with
    progress; without the script the form posts as usual. A request from the script gets JSON."""
    form = UploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            competition = services.competition_import_upload(
                files=form.cleaned_data["files"], owner=request.user, is_public=form.cleaned_data["is_public"]
            )
        except BundleError as error:
            form.add_error("files", str(error))
        else:
            if wants_json(request):
                return JsonResponse({"url": competition_url(competition)})
            return redirect("competitions:detail", slug=competition.slug)
    status = 400 if request.method == "POST" else 200
    if request.method == "POST" and wants_json(request):
        return upload_errors([str(e) for errors in form.errors.values() for e in errors])
    context = {"form": form, "max_bytes": services.bundle_limits().max_total_bytes}
    return render(request, "competitions/upload.html", context, status=status)


@login_required
@require_POST
def upload_parts_start(request: HttpRequest) -> JsonResponse:
    """Open a chunked upload: form fields `name` and `size` (bytes)."""
    try:
        size = int(request.POST.get("size", ""))
    except ValueError:
        return upload_errors(["The upload did not say how many bytes it has."])
    try:
        upload = uploads.upload_start(owner=request.user, name=request.POST.get("name", ""), size=size)
    except BundleError as error:
        return upload_errors([str(error)])
    return JsonResponse({"id": upload.id, "chunk_bytes": uploads.CHUNK_BYTES})


@login_required
@require_POST
def upload_parts_append(request: HttpRequest, upload_id: str) -> JsonResponse:
    """Append the request's body (raw bytes) at byte `?offset=` of the upload."""
    upload = uploads.upload_get(upload_id=upload_id, owner=request.user)
    if upload is None:
        return upload_errors(["This upload is unknown or over; start it again."], status=404)
    try:
        offset = int(request.GET.get("offset", ""))
        received = uploads.upload_append(upload=upload, offset=offset, stream=request)
    except ValueError as error:  # BundleError too
        return upload_errors([str(error) if isinstance(error, BundleError) else "A part needs ?offset=N."])
    return JsonResponse({"received": received})


@login_required
@require_POST
def upload_parts_finish(request: HttpRequest, upload_id: str) -> JsonResponse:
    """Import the uploaded .zip: {"url"} of the new competition, or 400 {"errors"}."""
    upload = uploads.upload_get(upload_id=upload_id, owner=request.user)
    if upload is None:
        return upload_errors(["This upload is unknown or over; start it again."], status=404)
    is_public = request.POST.get("is_public") in ("on", "true", "1")
    try:
        competition = uploads.upload_finish(upload=upload, owner=request.user, is_public=is_public)
    except BundleError as error:
        return upload_errors([str(error)])
    return JsonResponse({"url": competition_url(competition)})


def wants_json(request: HttpRequest) -> bool:
    return request.headers.get("X-Requested-With") == "XMLHttpRequest"


def upload_errors(errors: list[str], status: int = 400) -> JsonResponse:
    return JsonResponse({"errors": errors}, status=status)


def competition_url(competition) -> str:
    return reverse("competitions:detail", args=[competition.slug])


def visible_or_404(request: HttpRequest, slug: str):
    competition = selectors.competition_get_visible(slug=slug, user=request.user)
    if competition is None:
        raise Http404("No such competition.")
    return competition
