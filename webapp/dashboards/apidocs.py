"""The API reference page's content: every operation of the OpenAPI schema (drf-spectacular's, the same
document `/api/schema/` serves), flattened for a server-drawn page that needs no CDN."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

METHODS = ("get", "post", "put", "patch", "delete")


@lru_cache(maxsize=1)
def operations() -> tuple[dict[str, Any], ...]:
    """(path, method, summary, parameters, auth) for each operation, in the schema's order."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = []
    for path, item in schema["paths"].items():
        for method in METHODS:
            if method in item:
                found.append(operation(path, method, item[method]))
    return tuple(found)


def operation(path: str, method: str, spec: dict[str, Any]) -> dict[str, Any]:
    parameters = [
        {
            "name": p["name"],
            "where": p["in"],
            "description": p.get("description", ""),
            "required": p.get("required"),
        }
        for p in spec.get("parameters", [])
    ]
    return {
        "path": path,
        "method": method.upper(),
        "summary": spec.get("summary") or spec.get("description", "").split("\n")[0],
        "parameters": parameters,
        "auth": [name for entry in spec.get("security", []) for name in entry] or ["anonymous"],
    }
