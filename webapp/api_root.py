"""The API's front door: `/api/` lists every endpoint and where the schema and its viewers are, and
`/api/schema/` answers a browser with JSON it can show (YAML on `?format=yaml`) instead of a download."""

from __future__ import annotations

from drf_spectacular.renderers import (
    OpenApiJsonRenderer,
    OpenApiJsonRenderer2,
    OpenApiYamlRenderer,
    OpenApiYamlRenderer2,
)
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

ENDPOINTS = {
    "competitions": "api-competitions",
    "competition_upload": "api-competition-upload",
    "runs": "api-runs",
    "studies": "api-studies",
    "warm_starts": "api-warm-starts",
    "schema": "api-schema",
    "schema_swagger_ui": "api-docs",
    "schema_redoc": "api-redoc",
}
"""What the root lists: a name for each, and its URL name."""


class ApiRoot(APIView):
    permission_classes = [AllowAny]

    @extend_schema(exclude=True)
    def get(self, request):
        links = {name: reverse(url_name, request=request) for name, url_name in ENDPOINTS.items()}
        links["token"] = reverse("dashboards:api_token", request=request)
        links["reference"] = reverse("dashboards:api_reference", request=request)
        return Response(
            {
                "about": "Practicum's REST API. Read endpoints are open to everyone for public runs; writes "
                "need a session or a token (`Authorization: Token <key>`, from `token`).",
                "links": links,
            }
        )


class SchemaView(SpectacularAPIView):
    """The OpenAPI schema, as JSON unless YAML is asked for (`?format=yaml` or its media type)."""

    renderer_classes = [OpenApiJsonRenderer, OpenApiJsonRenderer2, OpenApiYamlRenderer, OpenApiYamlRenderer2]
