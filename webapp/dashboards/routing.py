"""Websocket routes (`/ws/runs/<id>/`)."""

from django.urls import path

from webapp.dashboards.consumers import RunConsumer

websocket_urlpatterns = [path("ws/runs/<int:run_id>/", RunConsumer.as_asgi())]
