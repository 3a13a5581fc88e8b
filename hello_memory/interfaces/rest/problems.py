"""Errors as JSON problem objects (RFC 9457), mapped from the one exception tree.

:data:`STATUS` is the single place where a hello-memory error class meets an HTTP
status: the most specific class in an error's MRO wins. Every problem carries
``type`` (a stable slug URI), ``title``, ``status``, ``detail`` and ``error`` (the
exception class, so clients can branch without parsing text).
"""

from __future__ import annotations

from typing import Any

from hello_memory import errors
from hello_memory.llm.base import LLMError, LLMUnavailableError

__all__ = ["PROBLEM_RESPONSES", "PROBLEM_TYPE", "STATUS", "AccessDenied",
           "add_problem_responses", "problem", "problem_for", "status_for"]

PROBLEM_TYPE = "https://hello-memory.dev/problems/"

# error class -> (HTTP status, slug, title)
STATUS: dict[type[BaseException], tuple[int, str, str]] = {
    errors.HelloMemoryError: (500, "internal", "Internal error"),
    errors.InvalidInputError: (400, "invalid-input", "Invalid input"),
    errors.NamespaceRequiredError: (400, "namespace-required", "Namespace required"),
    errors.PayloadTooLargeError: (413, "too-large", "Payload too large"),
    errors.NotFoundError: (404, "not-found", "Not found"),
    errors.JobBusyError: (409, "job-running", "Job already running"),
    errors.ConfigError: (501, "not-configured", "Feature not configured"),
    errors.EmbeddingError: (503, "embedding-unavailable", "Embedding model unavailable"),
    errors.StoreError: (500, "store-error", "Storage backend failed"),
    errors.BackendUnavailableError: (503, "backend-unavailable", "Backend unavailable"),
    errors.InsufficientStorageError: (507, "insufficient-storage", "Insufficient storage"),
    errors.IndexWorkError: (500, "index-work-failed", "Index work failed"),
    LLMError: (502, "llm-error", "LLM endpoint failed"),
    LLMUnavailableError: (503, "llm-unavailable", "LLM endpoint unavailable"),
}


class AccessDenied(Exception):
    """A request without a valid API key (401) or outside its namespaces (403)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def status_for(exc: BaseException) -> tuple[int, str, str]:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return STATUS[errors.HelloMemoryError]


def problem(status: int, slug: str, title: str, detail: str, **extra: Any) -> dict[str, Any]:
    return {"type": PROBLEM_TYPE + slug, "title": title, "status": status, "detail": detail,
            **extra}


def problem_for(exc: BaseException) -> dict[str, Any]:
    status, slug, title = status_for(exc)
    return problem(status, slug, title, str(exc), error=type(exc).__name__)


# What every route may answer besides its success, as the OpenAPI document lists them.
PROBLEM_RESPONSES: dict[int, str] = {
    400: "Invalid input (nothing was written)",
    401: "No or unknown API key",
    403: "The key may not use this namespace, or the Host is not this server's",
    404: "No such memory, document or route",
    413: "The request body, a text or a batch is over its limit",
    422: "The request does not match the schema",
    429: "Too many searches of this key at once (api.searches_per_key); see Retry-After",
    500: "Internal error (a problem object; the connection stays usable)",
    501: "Feature not configured",
    503: "A backend or model is unavailable",
    507: "Free disk space is under storage.min_free_bytes; nothing was written",
}


def add_problem_responses(schema: dict[str, Any]) -> dict[str, Any]:
    """Declare the problem responses on every operation of an OpenAPI ``schema``
    (in place; returns it)."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault("Problem", {
        "type": "object", "title": "Problem",
        "description": "RFC 9457 problem details",
        "properties": {"type": {"type": "string"}, "title": {"type": "string"},
                       "status": {"type": "integer"}, "detail": {"type": "string"},
                       "error": {"type": "string"}},
        "required": ["type", "title", "status", "detail"]})
    content = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for path_item in schema.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            for status, description in PROBLEM_RESPONSES.items():
                if str(status) == "422" and "422" in responses:
                    responses["422"] = {"description": description, "content": content}
                    continue
                responses.setdefault(str(status), {"description": description,
                                                   "content": content})
    return schema
