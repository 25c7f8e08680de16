from django.contrib import admin

from webapp.competitions.models import Competition


@admin.register(Competition)
class CompetitionAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "metric", "owner", "is_public", "source", "created_at"]
    list_filter = ["is_public", "source", "metric"]
    search_fields = ["slug", "name"]
