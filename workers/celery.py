"""The Celery app (`celery -A workers worker -Q sandbox`). Configuration comes from Django settings."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("practicum")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_default_queue="sandbox",
    # The supervisor (policy + learner) runs on GPU nodes; attempts run on sandbox nodes.
    task_routes={"practicum.supervise_run": {"queue": "gpu"}},
)
app.autodiscover_tasks(["workers"])
