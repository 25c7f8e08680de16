from django.contrib import admin

from webapp.runs.models import Attempt, LearnerStep, Run, Study


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "owner", "policy", "status", "attempts_done", "best_score", "created_at"]
    list_filter = ["status", "policy", "is_public"]


@admin.register(Attempt)
class AttemptAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "number", "status", "prompt_kind", "family", "score", "reward", "duration_s"]
    list_filter = ["status", "prompt_kind", "valid"]


@admin.register(LearnerStep)
class LearnerStepAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "version", "attempts_done", "created_at"]


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["id", "owner", "name", "cancelled", "created_at"]
    list_filter = ["cancelled", "is_public"]
