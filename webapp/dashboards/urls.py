"""Dashboard pages: runs, attempts, run control, compare, exports, the API token and reference, assets."""

from django.urls import path

from webapp.dashboards import views

app_name = "dashboards"
urlpatterns = [
    path("runs/", views.run_list, name="run_list"),
    path("runs/new/", views.run_start, name="run_start"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/arrival.json", views.run_arrival, name="run_arrival"),
    path("runs/<int:run_id>/clone/", views.run_clone, name="run_clone"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("runs/<int:run_id>/export/mlebench.zip", views.run_export_mlebench, name="run_export_mlebench"),
    path("runs/<int:run_id>/export/<str:what>.<str:fmt>", views.run_export, name="run_export"),
    path("runs/<int:run_id>/attempts/<int:number>/", views.attempt_page, name="attempt"),
    path("runs/<int:run_id>/attempts/<int:number>/bundle.zip", views.attempt_bundle, name="attempt_bundle"),
    path("studies/", views.study_list, name="study_list"),
    path("studies/<int:study_id>/", views.study_detail, name="study"),
    path("studies/<int:study_id>/data.json", views.study_data, name="study_data"),
    path("studies/<int:study_id>/cancel/", views.study_cancel, name="study_cancel"),
    path("compare/", views.compare_page, name="compare"),
    path("compare/curves.json", views.compare_curves, name="compare_curves"),
    path("warmstarts/", views.warm_start_list, name="warm_starts"),
    path("token/", views.api_token, name="api_token"),
    path("docs/api/", views.api_reference, name="api_reference"),
    path("assets/plotly.min.js", views.plotly_js, name="plotly_js"),
    path("assets/<str:name>", views.asset, name="asset"),
]
