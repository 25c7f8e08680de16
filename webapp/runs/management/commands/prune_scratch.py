"""`manage.py prune_scratch [--keep-days D] [--max-gb G]`: apply the scratch retention policy now.

Prints {"removed": N, "paths": [...]} on stdout. Celery beat runs the same every hour (workers/celery.py).
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from webapp.runs.retention import scratch_prune


class Command(BaseCommand):
    help = "Remove attempt scratch dirs of finished runs past the retention policy."

    def add_arguments(self, parser):
        parser.add_argument(
            "--keep-days", type=float, default=None, help="default PRACTICUM_SCRATCH_KEEP_DAYS"
        )
        parser.add_argument("--max-gb", type=float, default=None, help="default PRACTICUM_SCRATCH_MAX_GB")

    def handle(self, *args, keep_days, max_gb, **options):
        removed = scratch_prune(keep_days=keep_days, max_total_gb=max_gb)
        self.stdout.write(json.dumps({"removed": len(removed), "paths": [str(p) for p in removed]}))
