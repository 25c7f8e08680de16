"""Websocket routes (`/ws/runs/<id>/`)."""

websocket_urlpatterns: list = []
