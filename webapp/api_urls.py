"""`/api/...`: the REST API (session or token auth) and its OpenAPI schema."""

from django.urls import path
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView

from webapp.api_root import ApiRoot, SchemaView
from webapp.competitions import api as competitions
from webapp.runs import api as runs

urlpatterns = [
    path("", ApiRoot.as_view(), name="api-root"),
    path("competitions/", competitions.CompetitionList.as_view(), name="api-competitions"),
    path("competitions/upload/", competitions.CompetitionUpload.as_view(), name="api-competition-upload"),
    path("competitions/<slug:slug>/", competitions.CompetitionDetail.as_view(), name="api-competition"),
    path("runs/", runs.RunList.as_view(), name="api-runs"),
    path("runs/<int:run_id>/", runs.RunDetail.as_view(), name="api-run"),
    path("runs/<int:run_id>/cancel/", runs.RunCancel.as_view(), name="api-run-cancel"),
    path("runs/<int:run_id>/attempts/", runs.RunAttempts.as_view(), name="api-run-attempts"),
    path("runs/<int:run_id>/attempts/<int:number>/", runs.AttemptDetail.as_view(), name="api-attempt"),
    path("runs/<int:run_id>/metrics/", runs.RunMetrics.as_view(), name="api-run-metrics"),
    path("studies/", runs.StudyList.as_view(), name="api-studies"),
    path("studies/<int:study_id>/", runs.StudyDetail.as_view(), name="api-study"),
    path("warmstarts/", runs.WarmStartList.as_view(), name="api-warm-starts"),
    path("schema/", SchemaView.as_view(), name="api-schema"),
    # Swagger UI and Redoc load their scripts from the sidecar package's static files, so they work offline
    path("schema/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("schema/redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
]
