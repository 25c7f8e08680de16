"""REST endpoints for runs, their attempts and learner metrics; start and cancel. Authorization is the
pages' (selectors); every write goes through a service."""

from __future__ import annotations

from django.http import Http404
from rest_framework import serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.competitions import selectors as competition_selectors
from webapp.runs import selectors, services
from webapp.runs.config import RunConfig
from webapp.runs.models import Run
from webapp.runs.payloads import attempt_detail, attempt_summary, run_summary


class RunCreateSerializer(serializers.Serializer):
    competitions = serializers.ListField(child=serializers.SlugField(), allow_empty=False)
    config = serializers.DictField(required=False, default=dict)
    name = serializers.CharField(required=False, allow_blank=True, default="")
    is_public = serializers.BooleanField(default=False)


def visible_run(request, run_id: int) -> Run:
    run = selectors.run_get_visible(run_id=run_id, user=request.user)
    if run is None:
        raise Http404
    return run


class RunList(APIView):
    def get(self, request):
        runs = selectors.runs_visible_to(user=request.user).prefetch_related("competitions")
        if slug := request.query_params.get("competition"):
            runs = runs.filter(competitions__slug=slug)
        if run_status := request.query_params.get("status"):
            runs = runs.filter(status=run_status)
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(runs, request, view=self)
        return paginator.get_paginated_response([run_summary(r) for r in page])

    def post(self, request):
        if not request.user.is_authenticated:
            return Response({"error": "Log in to start a run."}, status=status.HTTP_403_FORBIDDEN)
        form = RunCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        slugs = form.validated_data["competitions"]
        competitions = [competition_selectors.competition_get_visible(slug=s, user=request.user) for s in slugs]
        missing = [s for s, c in zip(slugs, competitions, strict=True) if c is None]
        if missing:
            return Response({"error": f"competitions: no competition called {missing[0]!r}."}, status=400)
        try:
            config = RunConfig.from_dict(form.validated_data["config"])
        except (TypeError, ValueError) as error:
            return Response({"error": str(error)}, status=status.HTTP_400_BAD_REQUEST)
        run = services.run_create(
            owner=request.user, competitions=competitions, policy=config.policy, config=config.to_dict(),
            name=form.validated_data["name"], is_public=form.validated_data["is_public"],
        )  # fmt: skip
        services.run_enqueue(run_id=run.id)
        return Response(run_summary(run), status=status.HTTP_201_CREATED)


class RunDetail(APIView):
    def get(self, request, run_id: int):
        return Response(run_summary(visible_run(request, run_id)))


class RunCancel(APIView):
    permission_classes = [IsAuthenticated]

    def post(self, request, run_id: int):
        run = visible_run(request, run_id)
        if run.owner_id != request.user.id and not request.user.is_staff:
            return Response({"error": "Only the run's owner can cancel it."}, status=status.HTTP_403_FORBIDDEN)
        return Response(run_summary(services.run_cancel(run_id=run.id)))


class RunAttempts(APIView):
    def get(self, request, run_id: int):
        attempts = selectors.run_attempts(run=visible_run(request, run_id))
        if attempt_status := request.query_params.get("status"):
            attempts = attempts.filter(status=attempt_status)
        if request.query_params.get("valid") in ("true", "false"):
            attempts = attempts.filter(valid=request.query_params["valid"] == "true")
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(attempts, request, view=self)
        return paginator.get_paginated_response([attempt_summary(a) for a in page])


class AttemptDetail(APIView):
    def get(self, request, run_id: int, number: int):
        attempt = selectors.run_attempts(run=visible_run(request, run_id)).filter(number=number).first()
        if attempt is None:
            raise Http404
        return Response(attempt_detail(attempt))


class RunMetrics(APIView):
    def get(self, request, run_id: int):
        return Response({"results": selectors.run_metric_history(run=visible_run(request, run_id))})
