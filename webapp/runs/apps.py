from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "webapp.runs"
    label = "runs"

    def ready(self) -> None:
        """Hand the operator's PRACTICUM_ALLOW_UNISOLATED to the sandbox (every process that runs attempts
        loads this app: the demo, `manage.py train`/`execute`, Celery workers)."""
        from django.conf import settings

        from rl_core.sandbox import allow_unisolated

        allow_unisolated(settings.PRACTICUM_ALLOW_UNISOLATED)
