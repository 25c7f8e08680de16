"""REST endpoints for runs, their attempts and learner metrics; start and cancel. Authorization is the
pages' (selectors): a run you may not view is a 404 here as on its page. Every write goes through a service.

Lists are paginated (`?page=N`, `?page_size=M` up to 1000) and filtered by query parameters; auth is a
session (the browser) or a token (`Authorization: Token <key>`, from /token/ or `manage.py drf_create_token`).
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from rl_core.declarations import Declared
from rl_core.run_spec import settings
from webapp.competitions import selectors as competition_selectors
from webapp.runs import selectors, services, studies, study_reads
from webapp.runs.models import Attempt, Run, Study
from webapp.runs.payloads import attempt_detail, attempt_summary, learner_step_summary, run_summary
from webapp.runs.quotas import QuotaExceeded
from webapp.runs.study_plan import arms_from_dicts

JSON_OBJECT = OpenApiTypes.OBJECT


class Pages(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 1000


def settings_field(declared: Declared) -> serializers.Field:
    """The schema's description of one run setting: its type, choices, bounds, default and help."""
    common = {"required": False, "help_text": f"{declared.label}. {declared.help}"}
    if declared.kind == "choice":
        return serializers.ChoiceField(choices=list(declared.choices), default=declared.default, **common)
    if declared.kind == "ids":
        return serializers.ListField(
            child=serializers.IntegerField(min_value=1), default=list(declared.default), **common
        )
    if declared.kind in ("int", "float"):
        number = serializers.IntegerField if declared.kind == "int" else serializers.FloatField
        bounds = {"min_value": declared.minimum, "max_value": declared.upper}
        return number(default=declared.default, allow_null=declared.optional, **bounds, **common)
    kinds = {"bool": serializers.BooleanField, "text": serializers.CharField}
    extra = {"allow_blank": True} if declared.kind == "text" else {}
    return kinds[declared.kind](default=declared.default, **extra, **common)


def settings_serializer() -> type[serializers.Serializer]:
    """Every run setting as a serializer, for the OpenAPI schema (derived from rl_core.run_spec)."""
    fields = {name: settings_field(declared) for name, declared in settings().items()}
    return type("RunSettings", (serializers.Serializer,), fields)


class RunSettingsField(serializers.DictField):
    """A run's settings as given; RunConfig checks them (one validator for the form, the CLI and the API),
    so a refusal names the setting the same way everywhere. The schema shows them as `RunSettings`."""


class RunSettingsSchema(OpenApiSerializerFieldExtension):
    """`RunSettingsField` in the OpenAPI schema: a reference to the `RunSettings` component, built from the
    run specification when the schema is generated."""

    target_class = RunSettingsField

    def map_serializer_field(self, auto_schema, direction):
        return auto_schema.resolve_serializer(settings_serializer(), direction).ref


class RunCreateSerializer(serializers.Serializer):
    competitions = serializers.ListField(child=serializers.SlugField(), allow_empty=False)
    config = RunSettingsField(required=False, default=dict, help_text="Run settings; defaults for the rest.")
    name = serializers.CharField(required=False, allow_blank=True, default="")
    is_public = serializers.BooleanField(default=False)


class StudyArmSerializer(serializers.Serializer):
    name = serializers.CharField(
        help_text="The arm's name: a letter or digit, then letters, digits, _ . + -."
    )
    settings = RunSettingsField(required=False, default=dict, help_text="The settings this arm overrides.")


class StudyCreateSerializer(serializers.Serializer):
    competitions = serializers.ListField(child=serializers.SlugField(), allow_empty=False)
    config = RunSettingsField(
        required=False, default=dict, help_text="The base settings every arm starts from."
    )
    arms = StudyArmSerializer(many=True, required=False, help_text="1 to 6 arms; none: one arm, the base.")
    seeds = serializers.JSONField(
        required=False, default=1, help_text="A count N (seeds 0..N-1) or a list of seeds, 1 to 20 of them."
    )
    name = serializers.CharField(required=False, allow_blank=True, default="")
    is_public = serializers.BooleanField(default=False)


def visible_run(request, run_id: int) -> Run:
    run = selectors.run_get_visible(run_id=run_id, user=request.user)
    if run is None:
        raise Http404
    return run


def param(name: str, description: str, kind=OpenApiTypes.STR, enum=None) -> OpenApiParameter:
    return OpenApiParameter(name, kind, OpenApiParameter.QUERY, description=description, enum=enum)


PAGES = [
    param("page", "1-based page number.", OpenApiTypes.INT),
    param("page_size", f"Items per page (default 50, at most {Pages.max_page_size}).", OpenApiTypes.INT),
]
RUN_FILTERS = [
    *PAGES,
    param("competition", "Only runs on the competition with this slug."),
    param("status", "Only runs in this status.", enum=Run.Status.values),
    param("policy", "Only runs of this policy kind.", enum=Run.PolicyKind.values),
    param("owner", "Only runs of the user with this username."),
]
ATTEMPT_FILTERS = [
    *PAGES,
    param("status", "Only attempts in this status.", enum=Attempt.Status.values),
    param(
        "valid", "Only attempts with (true) or without (false) a valid submission.", enum=["true", "false"]
    ),
    param("prompt_kind", "solve or improve.", enum=["solve", "improve"]),
    param("family", "Only attempts of this model family."),
    param("competition", "Only attempts on the competition with this slug (multi-competition runs)."),
    param("after", "Only attempts numbered above this.", OpenApiTypes.INT),
    param(
        "ordering",
        "number (oldest first, the default) or -number (newest first).",
        enum=["number", "-number"],
    ),
]


def filter_runs(runs, query):
    for name, field in (("competition", "competitions__slug"), ("status", "status"), ("policy", "policy"),
                        ("owner", "owner__username")):  # fmt: skip
        if value := query.get(name):
            runs = runs.filter(**{field: value})
    return runs.distinct()


def filter_attempts(attempts, query):
    for name, field in (("status", "status"), ("prompt_kind", "prompt_kind"), ("family", "family"),
                        ("competition", "competition__slug")):  # fmt: skip
        if value := query.get(name):
            attempts = attempts.filter(**{field: value})
    if query.get("valid") in ("true", "false"):
        attempts = attempts.filter(valid=query["valid"] == "true")
    if query.get("after", "").isdigit():
        attempts = attempts.filter(number__gt=int(query["after"]))
    return attempts.order_by("-number" if query.get("ordering") == "-number" else "number")


class RunList(APIView):
    @extend_schema(
        operation_id="runs_list",
        summary="Runs you may view (yours and public ones)",
        parameters=RUN_FILTERS,
        responses={200: JSON_OBJECT},
    )
    def get(self, request):
        runs = (
            selectors.runs_visible_to(user=request.user)
            .select_related("owner")
            .prefetch_related("competitions")
        )
        paginator = Pages()
        page = paginator.paginate_queryset(filter_runs(runs, request.query_params), request, view=self)
        return paginator.get_paginated_response([run_summary(r) for r in page])

    @extend_schema(
        operation_id="runs_create",
        summary="Start a run (logged in)",
        request=RunCreateSerializer,
        responses={201: JSON_OBJECT},
    )
    def post(self, request):
        # Anonymous visitors never get here: the default IsAuthenticatedOrReadOnly answers them 401.
        form = RunCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        found = visible_competitions(request, form.validated_data["competitions"])
        if isinstance(found, Response):
            return found
        try:
            run = services.run_start(
                owner=request.user, competitions=found, config=form.validated_data["config"],
                name=form.validated_data["name"], is_public=form.validated_data["is_public"],
            )  # fmt: skip
        except QuotaExceeded as error:
            return Response({"error": str(error)}, status=status.HTTP_429_TOO_MANY_REQUESTS)
        except (TypeError, ValueError) as error:
            return Response({"error": str(error)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(run_summary(run), status=status.HTTP_201_CREATED)


class RunDetail(APIView):
    @extend_schema(operation_id="runs_retrieve", summary="One run", responses={200: JSON_OBJECT})
    def get(self, request, run_id: int):
        run = visible_run(request, run_id)
        return Response(run_summary(run) | {"evaluation": selectors.run_evaluation(run=run)})


class RunCancel(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="runs_cancel",
        summary="Cancel a run (its owner only)",
        request=None,
        responses={200: JSON_OBJECT},
    )
    def post(self, request, run_id: int):
        run = visible_run(request, run_id)
        if run.owner_id != request.user.id and not request.user.is_staff:
            return Response(
                {"error": "Only the run's owner can cancel it."}, status=status.HTTP_403_FORBIDDEN
            )
        return Response(run_summary(services.run_cancel(run_id=run.id)))


class RunAttempts(APIView):
    @extend_schema(
        operation_id="runs_attempts_list",
        summary="A run's attempts, paginated (no program text)",
        parameters=ATTEMPT_FILTERS,
        responses={200: JSON_OBJECT},
    )
    def get(self, request, run_id: int):
        attempts = selectors.run_attempt_rows(run=visible_run(request, run_id))
        paginator = Pages()
        page = paginator.paginate_queryset(
            filter_attempts(attempts, request.query_params), request, view=self
        )
        return paginator.get_paginated_response([attempt_summary(a) for a in page])


class AttemptDetail(APIView):
    @extend_schema(
        operation_id="runs_attempts_retrieve",
        summary="One attempt with its plan, programs and outputs",
        responses={200: JSON_OBJECT},
    )
    def get(self, request, run_id: int, number: int):
        attempt = selectors.attempt_get(run=visible_run(request, run_id), number=number)
        if attempt is None:
            raise Http404
        return Response(attempt_detail(attempt))


class RunMetrics(APIView):
    @extend_schema(
        operation_id="runs_metrics_list",
        summary="A run's learner updates, paginated (namespaced metrics: losses/policy, charts/entropy, ...)",
        parameters=[
            *PAGES,
            param("after", "Only updates with a policy version above this.", OpenApiTypes.INT),
        ],
        responses={200: JSON_OBJECT},
    )
    def get(self, request, run_id: int):
        steps = selectors.run_learner_steps(run=visible_run(request, run_id))
        after = request.query_params.get("after", "")
        if after.isdigit():
            steps = steps.filter(version__gt=int(after))
        paginator = Pages()
        page = paginator.paginate_queryset(steps, request, view=self)
        return paginator.get_paginated_response([learner_step_summary(s) for s in page])


class WarmStartList(APIView):
    @extend_schema(
        operation_id="warm_starts_list",
        summary="Stored warm starts you may start an LM run from, with what each was trained on",
        responses={200: JSON_OBJECT},
    )
    def get(self, request):
        manifests = selectors.warm_starts_visible_to(user=request.user)
        hidden = ("path", "losses", "config", "prompt")  # server paths and bulky training detail stay home
        return Response({"results": [{k: v for k, v in m.items() if k not in hidden} for m in manifests]})


def visible_competitions(request, slugs: list[str]):
    """The competitions `slugs` name that the user may see, or the error Response for the first missing."""
    found = [competition_selectors.competition_get_visible(slug=s, user=request.user) for s in slugs]
    missing = [s for s, c in zip(slugs, found, strict=True) if c is None]
    if missing:
        return Response({"error": f"competitions: no competition called {missing[0]!r}."}, status=400)
    return found


def study_payload(study: Study) -> dict:
    """A study as the API gives it: its definition, its runs and its statistics (study_reads)."""
    return {"owner": study.owner.username if study.owner else None, "is_public": study.is_public,
            "competitions": [c.slug for c in study.competitions.all()], "config": study.config,
            "arm_settings": study.arms, **study_reads.study_statistics(study)}  # fmt: skip


class StudyList(APIView):
    @extend_schema(
        operation_id="studies_list",
        summary="Studies you may view (yours and public ones), newest first",
        parameters=PAGES,
        responses={200: JSON_OBJECT},
    )
    def get(self, request):
        paginator = Pages()
        page = paginator.paginate_queryset(
            study_reads.studies_visible_to(user=request.user), request, view=self
        )
        return paginator.get_paginated_response([study_reads.study_summary(s) for s in page])

    @extend_schema(
        operation_id="studies_create",
        summary="Start a study: every arm on every seed, one run after another (logged in)",
        request=StudyCreateSerializer,
        responses={201: JSON_OBJECT},
    )
    def post(self, request):
        form = StudyCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        competitions = visible_competitions(request, data["competitions"])
        if isinstance(competitions, Response):
            return competitions
        try:
            study = studies.study_start(
                owner=request.user, competitions=competitions, config=data["config"],
                arms=arms_from_dicts(data.get("arms", [])), seeds=data["seeds"], name=data["name"],
                is_public=data["is_public"],
            )  # fmt: skip
        except QuotaExceeded as error:
            return Response({"error": str(error)}, status=status.HTTP_429_TOO_MANY_REQUESTS)
        except (TypeError, ValueError) as error:
            return Response({"error": str(error)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(study_payload(study), status=status.HTTP_201_CREATED)


class StudyDetail(APIView):
    @extend_schema(
        operation_id="studies_retrieve",
        summary="One study: its arms, seeds, runs (id, arm, seed, status) and statistics",
        responses={200: JSON_OBJECT},
    )
    def get(self, request, study_id: int):
        study = study_reads.study_get_visible(study_id=study_id, user=request.user)
        if study is None:
            raise Http404
        return Response(study_payload(study))
