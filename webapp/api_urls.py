"""`/api/...`: the REST API (session or token auth) and its OpenAPI schema."""

from django.urls import path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from webapp.competitions import api as competitions
from webapp.runs import api as runs

urlpatterns = [
    path("competitions/", competitions.CompetitionList.as_view(), name="api-competitions"),
    path("competitions/upload/", competitions.CompetitionUpload.as_view(), name="api-competition-upload"),
    path("competitions/<slug:slug>/", competitions.CompetitionDetail.as_view(), name="api-competition"),
    path("runs/", runs.RunList.as_view(), name="api-runs"),
    path("runs/<int:run_id>/", runs.RunDetail.as_view(), name="api-run"),
    path("runs/<int:run_id>/cancel/", runs.RunCancel.as_view(), name="api-run-cancel"),
    path("runs/<int:run_id>/attempts/", runs.RunAttempts.as_view(), name="api-run-attempts"),
    path("runs/<int:run_id>/attempts/<int:number>/", runs.AttemptDetail.as_view(), name="api-attempt"),
    path("runs/<int:run_id>/metrics/", runs.RunMetrics.as_view(), name="api-run-metrics"),
    path("warmstarts/", runs.WarmStartList.as_view(), name="api-warm-starts"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI would load its scripts from a CDN (blank offline): the reference page is drawn on the server.
    path("schema/docs/", RedirectView.as_view(pattern_name="dashboards:api_reference"), name="api-docs"),
]
