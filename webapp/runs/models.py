"""Runs, their attempts, the learner's steps, and studies (seeds × arms of runs). Rows change only through
webapp.runs.services and webapp.runs.studies."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Study(models.Model):
    """N seeds × some arms of one base configuration: every (seed, arm) is a Run of `runs`, made one at a time
    in seed-major order (webapp.runs.studies). Its status is derived from those runs (study_reads)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.CASCADE, related_name="studies"
    )
    competitions = models.ManyToManyField("competitions.Competition", related_name="studies")
    name = models.CharField(max_length=200, blank=True)
    is_public = models.BooleanField(default=False)
    config = models.JSONField(default=dict, help_text="The base run settings every arm starts from.")
    arms = models.JSONField(
        default=list, help_text='[{"name": ..., "settings": {...}}]: each arm\'s overrides.'
    )
    seeds = models.JSONField(default=list, help_text="The seeds every arm runs on.")
    cancelled = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return f"study {self.pk} ({self.name})"


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        FINISHED = "finished"
        FAILED = "failed"
        CANCELLED = "cancelled"

    ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING)
    """A run in one of these is active: it has, or waits for, a supervisor (selectors.runs_active)."""
    FINAL_STATUSES = (Status.FINISHED, Status.FAILED, Status.CANCELLED)
    """A run in one of these is over and stays as it is."""

    class PolicyKind(models.TextChoices):
        GRAMMAR = "grammar", "GrammarPolicy (program grammar, not a language model)"
        LM = "lm", "LMPolicy (language model)"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.CASCADE, related_name="runs"
    )
    competitions = models.ManyToManyField("competitions.Competition", related_name="runs")
    name = models.CharField(max_length=200, blank=True)
    is_public = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    policy = models.CharField(max_length=16, choices=PolicyKind.choices, default=PolicyKind.GRAMMAR)
    config = models.JSONField(default=dict, help_text="Every loop, learner, reward and policy setting.")
    cloned_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    warm_start_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="warm_started_runs"
    )
    policy_version = models.PositiveIntegerField(default=0)
    attempts_done = models.PositiveIntegerField(default=0)
    best_score = models.FloatField(null=True, blank=True)
    best_attempt = models.ForeignKey(
        "Attempt", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    final_score = models.FloatField(
        null=True, blank=True,
        help_text="The run's result: its chosen program's one grade on the hidden answers (validation "
        "runs), or its best hidden-answer score (hidden runs). Leaderboards rank by it.",
    )  # fmt: skip
    final_valid = models.BooleanField(null=True, blank=True, help_text="Whether that grade is valid.")
    final_attempt = models.ForeignKey(
        "Attempt", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The attempt whose grade is the final score (a validation run's final grading).",
    )  # fmt: skip
    hardware = models.CharField(
        max_length=120, blank=True, help_text="Where the policy ran: 'CPU (2 cores)', 'GPU (NVIDIA H100)'."
    )
    warm_start_progress = models.JSONField(
        default=dict,
        blank=True,
        help_text="Where the run's warm-start (fine-tuning) phase is, if it has one.",
    )
    study = models.ForeignKey(Study, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    study_arm = models.CharField(max_length=40, blank=True, help_text="The study arm this run is.")
    event_seq = models.PositiveBigIntegerField(default=0, help_text="Sequence number of the last live event.")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.policy})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES


class Attempt(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        OK = "ok"
        ERROR = "error"
        TIMEOUT = "timeout"
        MEMORY = "memory"
        KILLED = "killed"
        PARSE_ERROR = "parse_error"
        LOST = "lost"  # its executor died too often; excluded from learning

    class Instrumentation(models.TextChoices):
        """Who wrote the program that ran (rl_core.instrument.Method)."""

        AST = "ast", "AST rules"
        LM = "lm", "the frozen LM (its markers passed the AST check)"
        LM_FALLBACK = "lm-fallback", "AST rules (the LM's markers were refused)"
        NONE = "none", "none (instrumentation off)"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="attempts")
    key = models.CharField(max_length=64, help_text="The loop's attempt id; makes redelivery idempotent.")
    competition = models.ForeignKey(
        "competitions.Competition", on_delete=models.CASCADE, related_name="attempts"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    prompt_kind = models.CharField(max_length=16, default="solve")
    answers = models.CharField(
        max_length=16, choices=[("hidden", "hidden answers"), ("validation", "validation split")],
        default="hidden", help_text="Which answers graded it: the competition's hidden ones, or a validation "
        "split of its labelled training table (reward source 'validation').",
    )  # fmt: skip
    parent_key = models.CharField(
        max_length=64,
        blank=True,
        help_text="The key of the attempt an improve prompt started from (a baseline is no attempt).",
    )
    policy_version = models.PositiveIntegerField()
    staleness = models.PositiveIntegerField(null=True, blank=True)
    family = models.CharField(max_length=40, blank=True, help_text="Model family, when the policy names one.")
    info = models.JSONField(default=dict, blank=True)
    response = models.TextField(blank=True)
    plan = models.TextField(blank=True)
    program = models.TextField(blank=True)
    instrumented_program = models.TextField(blank=True)
    instrumentation = models.CharField(
        max_length=16, blank=True, choices=Instrumentation.choices, help_text="Who wrote the program as run."
    )
    stdout_tail = models.TextField(blank=True)
    stderr_tail = models.TextField(blank=True)
    stages = models.JSONField(default=list, blank=True)
    valid = models.BooleanField(default=False)
    score = models.FloatField(null=True, blank=True)
    grade_error = models.TextField(blank=True)
    reward = models.FloatField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    isolation = models.CharField(max_length=16, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    tries = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    number = models.PositiveIntegerField(help_text="1-based order of dispatch within the run.")

    class Meta:
        ordering = ["run", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "key"], name="attempt_key_unique_per_run"),
            models.UniqueConstraint(fields=["run", "number"], name="attempt_number_unique_per_run"),
        ]
        indexes = [models.Index(fields=["run", "finished_at"])]

    def __str__(self) -> str:
        return f"attempt {self.key} of run {self.run_id}"

    @property
    def is_finished(self) -> bool:
        return self.status != self.Status.RUNNING


class LearnerStep(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="learner_steps")
    version = models.PositiveIntegerField(help_text="Policy version after this update.")
    attempts_done = models.PositiveIntegerField()
    metrics = models.JSONField(help_text="Namespaced metrics: losses/policy, charts/reward_mean, ...")
    wall_s = models.FloatField(help_text="Seconds since the run started.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "version"]
        constraints = [models.UniqueConstraint(fields=["run", "version"], name="learner_step_unique_version")]
