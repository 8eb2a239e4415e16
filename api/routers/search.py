"""``POST /v1/search``: one hybrid search with every stage of the pipeline, for "why was it
(not) found". Runs under the caller's ACL and project, exactly as the research loop does."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from api.deps import PrincipalDep, ServicesDep, check_scope
from api.errors import ApiError, error_responses
from api.schemas import SearchRequest, is_blank
from retrieval.search_models import SearchOptions, SearchResult

router = APIRouter(prefix="/v1", tags=["search"])
# 400: a body that is not JSON (malformed_json); 404: an unknown project; 500: an engine
# failed (engine_error); 503: no search leg answered, or the service is starting.
_ERRORS = error_responses(400, 401, 404, 413, 422, 429, 500, 503)


@router.post("/search", response_model=SearchResult, operation_id="search", responses=_ERRORS)
async def search(body: SearchRequest, principal: PrincipalDep, services: ServicesDep) -> Any:
    from retrieval.pipeline import hybrid_search

    limit = services.settings.max_question_chars
    if len(body.query) > limit:
        raise ApiError(
            422,
            "query_too_long",
            f"query is {len(body.query)} characters; the limit is {limit}",
            field="query",
        )
    if is_blank(body.query):
        raise ApiError(422, "invalid_request", "query is blank", field="query")
    project = body.project or principal.project
    flt = await run_in_threadpool(
        check_scope, services, list(principal.groups), project, field="project"
    )
    if body.sources is not None:
        allowed = flt.sources
        narrowed = tuple(s for s in body.sources if allowed is None or s in allowed)
        flt = type(flt)(**{**flt.__dict__, "sources": narrowed})
    options = SearchOptions.model_validate(body.model_dump(exclude={"query", "project"}))
    # Every option was checked at the edge (bounds, legs): an error from here on is the
    # service's (engines answer 503 when no leg answered, anything else a JSON 500).
    return await hybrid_search(services.store, body.query, flt, options)
