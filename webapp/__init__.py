"""Practicum's Django project: settings, URLs, ASGI application, and the apps that persist and present."""
