"""The service container and the request dependencies (``Annotated`` aliases)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.auth import KeyRing, Principal, RateLimiter, retry_after_header
from api.errors import ApiError
from api.schemas import is_blank
from api.settings import ApiSettings
from api.sources import SourceSync
from api.tasks.store import TaskStore
from api.tasks.workers import ChangeFeed, WorkerPool
from graph.models import Caller


@dataclass
class Services:
    """Everything a request handler may use; built once per process by the lifespan."""

    settings: ApiSettings
    keys: KeyRing
    limiter: RateLimiter
    store: Any  # retrieval.store.Store (or a test double with the same methods)
    researcher: Any  # graph.runner.Researcher (or a test double)
    tasks: TaskStore
    pool: WorkerPool
    feed: ChangeFeed
    sources: SourceSync
    answer_slots: asyncio.Semaphore | None = None  # bounds concurrent /v1/answers runs


def get_services(request: Request) -> Services:
    services: Services | None = getattr(request.app.state, "services", None)
    if services is None:
        raise ApiError(503, "starting", "the service is still starting")
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


# The OpenAPI security scheme of every route that needs a key (the Authorize button of
# /docs, and the auth of generated clients). Its own errors are off: a missing or malformed
# header gets this API's error body, below.
bearer_scheme = HTTPBearer(
    scheme_name="ApiKey",
    bearerFormat="opaque API key",
    description="An API key of the auth file (WAYPOINT_AUTH_FILE): `Authorization: Bearer <key>`",
    auto_error=False,
)


def require_principal(
    request: Request,
    services: ServicesDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
) -> Principal:
    key = credentials.credentials if credentials is not None else ""
    if not key.strip():
        raise ApiError(
            401,
            "unauthorized",
            "send an API key as 'Authorization: Bearer <key>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    principal = services.keys.lookup(key.strip())
    if principal is None:
        raise ApiError(
            401, "unauthorized", "unknown API key", headers={"WWW-Authenticate": "Bearer"}
        )
    wait = services.limiter.acquire(principal.key_id)
    if wait is not None:
        raise ApiError(
            429,
            "rate_limited",
            "too many requests for this API key; slow down",
            headers={"Retry-After": retry_after_header(wait)},
        )
    request.state.principal = principal
    return principal


PrincipalDep = Annotated[Principal, Depends(require_principal)]


def require_syncer(principal: PrincipalDep) -> Principal:
    """A principal the auth file lets sync sources (``"sync_sources": true``)."""
    if not principal.sync_sources:
        raise ApiError(
            403,
            "forbidden",
            "this API key may not sync sources; its entry in the auth file needs "
            '"sync_sources": true',
        )
    return principal


SyncerDep = Annotated[Principal, Depends(require_syncer)]


def resolve_caller(
    services: Services, principal: Principal, question: str, project: str | None
) -> Caller:
    """The caller a run acts as, after the checks that must fail before a run starts."""
    limit = services.settings.max_question_chars
    if len(question) > limit:
        raise ApiError(
            422,
            "question_too_long",
            f"question is {len(question)} characters; the limit is {limit}",
            field="question",
        )
    if is_blank(question):
        raise ApiError(422, "invalid_request", "question is empty", field="question")
    caller = principal.caller(project)
    check_scope(services, caller.groups, caller.project, field="project")
    return caller


def check_scope(services: Services, groups: list[str], project: str | None, field: str) -> Any:
    """Build the caller's engine filter; an unknown project is not found (404), as a task
    or run of another user is.

    A project that exists but holds no document the caller may read gets the very same
    answer: telling the two apart would let any key list the projects of others. Not 422:
    the request is well formed (any name is), what it names is absent.
    """
    from retrieval.store import StoreError

    try:
        flt = services.store.filter_for(groups, project)
    except StoreError as exc:
        raise unknown_project(project, field) from exc
    if project and not services.store.visible_size(flt):
        raise unknown_project(project, field)
    return flt


def unknown_project(project: str | None, field: str) -> ApiError:
    return ApiError(
        404,
        "unknown_project",
        f"unknown project {project!r}: it does not exist or holds nothing this key may read",
        field=field,
    )
