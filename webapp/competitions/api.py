"""REST endpoints for competitions: list, detail, upload. Authorization is the pages' (selectors)."""

from __future__ import annotations

from django.http import Http404
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.competitions import selectors, services
from webapp.competitions.importing.bundles import BundleError
from webapp.competitions.models import Competition


class CompetitionSerializer(serializers.ModelSerializer):
    """A competition in a list: its public files as a count (a real competition may hold tens of thousands;
    the detail lists them)."""

    owner = serializers.CharField(source="owner.username", default=None, read_only=True)
    public_file_count = serializers.SerializerMethodField()

    class Meta:
        model = Competition
        fields = [
            "slug", "name", "owner", "is_public", "source", "metric", "id_column", "target_columns",
            "time_limit_s", "memory_mb", "public_file_count", "baseline_score", "created_at",
        ]  # fmt: skip

    def get_public_file_count(self, competition: Competition) -> int:
        return len(competition.public_files)


class CompetitionDetailSerializer(CompetitionSerializer):
    class Meta(CompetitionSerializer.Meta):
        fields = [*CompetitionSerializer.Meta.fields, "public_files", "description", "leaderboard_scores"]


class CompetitionList(ListAPIView):
    serializer_class = CompetitionSerializer

    def get_queryset(self):
        competitions = selectors.competitions_visible_to(user=self.request.user).select_related("owner")
        metric = self.request.query_params.get("metric")
        return competitions.filter(metric=metric) if metric else competitions


class CompetitionDetail(RetrieveAPIView):
    serializer_class = CompetitionDetailSerializer

    def get_object(self):
        competition = selectors.competition_get_visible(slug=self.kwargs["slug"], user=self.request.user)
        if competition is None:
            raise Http404
        return competition


class UploadSerializer(serializers.Serializer):
    files = serializers.ListField(child=serializers.FileField(), allow_empty=False)
    is_public = serializers.BooleanField(default=False)


class CompetitionUpload(APIView):
    """POST multipart `files` (one .zip, or the bundle's files) and optional `is_public`."""

    parser_classes = [MultiPartParser]
    permission_classes = [IsAuthenticated]
    serializer_class = UploadSerializer

    def post(self, request):
        data = {"files": request.FILES.getlist("files"), "is_public": request.data.get("is_public", False)}
        form = UploadSerializer(data=data)
        form.is_valid(raise_exception=True)
        try:
            competition = services.competition_import_upload(
                files=form.validated_data["files"],
                owner=request.user,
                is_public=form.validated_data["is_public"],
            )
        except BundleError as error:
            return Response({"error": str(error)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(CompetitionDetailSerializer(competition).data, status=status.HTTP_201_CREATED)
