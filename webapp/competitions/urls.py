from django.urls import path

from webapp.competitions import views

app_name = "competitions"
urlpatterns = [
    path("", views.competition_list, name="list"),
    path("upload/", views.competition_upload, name="upload"),
    path("<slug:slug>/", views.competition_detail, name="detail"),
    path("<slug:slug>/files/<path:name>", views.competition_file, name="file"),
]
