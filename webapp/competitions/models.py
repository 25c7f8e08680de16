"""The Competition row, and the submissions users graded against it. Its files live under
`storage.competition_dir(slug)`; answers are never served."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Competition(models.Model):
    class Source(models.TextChoices):
        BUNDLE = "bundle", "Practicum bundle"
        MLEBENCH = "mlebench", "MLE-bench"
        BUNDLED = "bundled", "Bundled with Practicum"

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="competitions",
    )
    is_public = models.BooleanField(default=False)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.BUNDLE)
    description = models.TextField(help_text="Markdown; rendered sanitised.")
    metric = models.CharField(max_length=40)
    id_column = models.CharField(max_length=100)
    target_columns = models.JSONField(help_text="Column names a submission must have besides the id.")
    time_limit_s = models.FloatField()
    memory_mb = models.PositiveIntegerField()
    public_files = models.JSONField(default=list, help_text="[{name, size_bytes, rows}] under public/.")
    baseline_score = models.FloatField(null=True, help_text="Score of the sample submission.")
    leaderboard_scores = models.JSONField(null=True, blank=True, help_text="Kaggle leaderboard scores.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.slug


class Submission(models.Model):
    """A submission.csv a user graded against the competition's hidden answers from its submit page
    (webapp.competitions.submissions). Only the outcome is kept, never the file."""

    competition = models.ForeignKey(Competition, on_delete=models.CASCADE, related_name="submissions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    created_at = models.DateTimeField(auto_now_add=True)
    file_name = models.CharField(max_length=255)
    size_bytes = models.PositiveBigIntegerField()
    valid = models.BooleanField()
    score = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="The grader's sentence on what is wrong, when invalid.")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "competition", "created_at"])]

    def __str__(self) -> str:
        return f"submission {self.pk} of {self.user_id} to {self.competition_id}"
