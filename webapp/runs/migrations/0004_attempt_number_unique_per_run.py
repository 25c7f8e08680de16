"""An attempt's number is unique within its run. Runs that already hold duplicate numbers (starts that raced
before the run was locked) are renumbered first, in order of start, so the constraint can be added."""

from django.db import migrations, models
from django.db.models import Count


def renumber_duplicates(apps, schema_editor):
    Attempt = apps.get_model("runs", "Attempt")
    clashing = Attempt.objects.values("run_id", "number").annotate(n=Count("id")).filter(n__gt=1)
    for run_id in sorted({row["run_id"] for row in clashing}):
        attempts = list(Attempt.objects.filter(run_id=run_id).order_by("number", "started_at", "id"))
        for number, attempt in enumerate(attempts, start=1):
            if attempt.number != number:
                attempt.number = number
                attempt.save(update_fields=["number"])


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0003_attempt_instrumentation_lm_fallback"),
    ]

    operations = [
        migrations.RunPython(renumber_duplicates, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="attempt",
            constraint=models.UniqueConstraint(
                fields=("run", "number"), name="attempt_number_unique_per_run"
            ),
        ),
    ]
