from django.urls import path

from webapp.competitions import submission_views, views
from webapp.competitions.tables import views as table_views

app_name = "competitions"
urlpatterns = [
    path("", views.competition_list, name="list"),
    path("upload/", views.competition_upload, name="upload"),
    path("upload/parts/", views.upload_parts_start, name="upload_parts_start"),
    path("upload/parts/<str:upload_id>/", views.upload_parts_append, name="upload_parts_append"),
    path("upload/parts/<str:upload_id>/finish", views.upload_parts_finish, name="upload_parts_finish"),
    path("upload/table/", table_views.table_upload, name="table_upload"),
    path("upload/table/<str:token>/", table_views.table_propose, name="table_propose"),
    path("<slug:slug>/", views.competition_detail, name="detail"),
    path("<slug:slug>/files/<path:name>", views.competition_file, name="file"),
    path("<slug:slug>/submit/", submission_views.competition_submit, name="submit"),
]
