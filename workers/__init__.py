"""Celery workers: the app and thin tasks that fetch by id and call rl_core and webapp services."""

from workers.celery import app

__all__ = ["app"]
