from django.urls import path

from webapp.dashboards import views

app_name = "dashboards"
urlpatterns = [
    path("runs/", views.run_list, name="run_list"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/attempts/<int:number>/", views.attempt_page, name="attempt"),
    path("assets/plotly.min.js", views.plotly_js, name="plotly_js"),
    path("assets/<str:name>", views.asset, name="asset"),
]
