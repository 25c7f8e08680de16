"""The "lineage" duration weights (the Δt of the attempt that freed a slot) became "slot_rate" (the slot's
period over the whole run; rl_core.learner says why). Stored run settings that name the old value name the new
one, which is what those runs would use if they were resumed."""

from django.db import migrations


def rename_value(apps, old: str, new: str) -> None:
    Run = apps.get_model("runs", "Run")
    for run in Run.objects.filter(config__duration_weighting=old).only("id", "config"):
        run.config["duration_weighting"] = new
        run.save(update_fields=["config"])


def forwards(apps, schema_editor):
    rename_value(apps, "lineage", "slot_rate")


def backwards(apps, schema_editor):
    rename_value(apps, "slot_rate", "lineage")


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0004_attempt_number_unique_per_run"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
