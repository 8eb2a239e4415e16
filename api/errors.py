"""One error shape for every failure: ``{"error": {"code", "message", "field"?}}``."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from retrieval.pipeline import SearchFailed

log = logging.getLogger("waypoint.api.errors")


class ErrorDetail(BaseModel):
    code: str
    message: str
    field: str | None = None


class ErrorBody(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "error": {
                        "code": "unknown_project",
                        "message": "unknown project 'core': it does not exist or holds "
                        "nothing this key may read",
                        "field": "project",
                    }
                },
                {
                    "error": {
                        "code": "rate_limited",
                        "message": "too many requests for this API key; slow down",
                    }
                },
            ]
        }
    )

    error: ErrorDetail


class ApiError(Exception):
    """Raised anywhere in a request; rendered as the JSON error body."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers or {}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries: these statuses answer with the JSON error body."""
    return {status: {"model": ErrorBody} for status in statuses}


def not_found(what: str) -> ApiError:
    # The same answer for "does not exist" and "belongs to someone else": no probing.
    return ApiError(404, "not_found", f"{what} not found")


def error_response(
    status: int, code: str, message: str, field: str | None = None, headers: dict | None = None
) -> JSONResponse:
    body = ErrorBody(error=ErrorDetail(code=code, message=message, field=field))
    return JSONResponse(body.model_dump(exclude_none=True), status_code=status, headers=headers)


_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "rate_limited",
    503: "unavailable",
}

# How long a client should wait before retrying a search whose every engine leg failed.
_SEARCH_RETRY_AFTER_S = 5


def _field_of(loc: Sequence[Any]) -> str | None:
    # The first element names where the value was (body, query, path, header); the rest is
    # the field, which may itself be called "query" (the search body's).
    parts = [str(p) for p in loc[1:]] if loc and loc[0] in _LOCATIONS else [str(p) for p in loc]
    return ".".join(parts) or None


_LOCATIONS = ("body", "query", "path", "header", "cookie")


def _allowed_methods(request: Request) -> str:
    """Every method some route serves at this path. Starlette's 405 names the methods of
    the first route matching the path only: OPTIONS /v1/tasks said "Allow: POST" though
    GET is served there too."""
    routes = request.app.router.routes
    allowed = [
        method
        for method in _METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes
        )
    ]
    return ", ".join(allowed)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.field, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {"loc": (), "msg": "invalid request", "type": ""}
        field = _field_of(first.get("loc", ()))
        kind = str(first.get("type", ""))
        if kind == "json_invalid":
            return error_response(400, "malformed_json", "request body is not valid JSON")
        code = "unknown_field" if kind == "extra_forbidden" else "invalid_request"
        message = str(first.get("msg", "invalid request"))
        if field:
            message = f"{field}: {message}"
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more problem(s))"
        return error_response(422, code, message, field)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(exc.status_code, "error")
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            headers = {**(headers or {}), "Allow": _allowed_methods(request)}
        return error_response(exc.status_code, code, str(exc.detail), headers=headers)

    @app.exception_handler(SearchFailed)
    async def _search_failed(_: Request, exc: SearchFailed) -> JSONResponse:
        # The engines, not the request, failed: 503 so that clients retry. The reasons
        # (engine messages, hosts, paths) go to the log only.
        log.warning("search failed: %s", "; ".join(exc.warnings))
        legs = ", ".join(exc.legs) or "every leg"
        return error_response(
            503,
            "search_unavailable",
            f"search is unavailable: no search leg answered ({legs}); retry shortly",
            headers={"Retry-After": str(_SEARCH_RETRY_AFTER_S)},
        )

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        # Logged with the traceback (and the request id); the client gets no internals.
        log.error("unhandled error", exc_info=exc)
        return error_response(500, "internal_error", "internal error; see the server log")
