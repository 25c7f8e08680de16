"""URL map: pages, the REST API, accounts and admin."""

from django.contrib import admin
from django.urls import include, path

from webapp.dashboards.home import home

urlpatterns = [
    path("", home, name="home"),
    path("accounts/", include("webapp.accounts_urls")),
    path("competitions/", include("webapp.competitions.urls")),
    path("", include("webapp.dashboards.urls")),
    path("api/", include("webapp.api_urls")),
    path("admin/", admin.site.urls),
]
