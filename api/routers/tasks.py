"""Research tasks for automation: submit, poll, list, stream events, cancel, review."""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response
from fastapi.responses import JSONResponse
from pydantic import WithJsonSchema
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

from api.deps import PrincipalDep, Services, ServicesDep, resolve_caller
from api.errors import ApiError, error_responses, not_found
from api.event_models import TASK_STREAM, sse_response_doc
from api.events import sse_event, sse_response
from api.logging import run_id_var, task_id_var
from api.offload import settle
from api.schemas import TERMINAL, ReviewInput, Task, TaskList, TaskRequest
from api.telemetry import current_traceparent
from api.webhooks import WebhookUrlError, check_destination
from graph.review import InvalidReview

log = logging.getLogger("waypoint.api.tasks")
router = APIRouter(prefix="/v1/tasks", tags=["tasks"])
# "<created_at>:<task id>", as list_tasks returns it in next_cursor (a plain decimal time:
# "inf", "nan" or "1e400" are no cursor).
LAST_EVENT_ID_PATTERN = "^[0-9]+$"
CURSOR_PATTERN = r"^[0-9]+(\.[0-9]+)?:[A-Za-z0-9_-]+$"


def _request_hash(body: TaskRequest) -> str:
    canonical = json.dumps(body.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@router.post(
    "",
    status_code=202,
    response_model=Task,
    operation_id="create_task",
    responses=error_responses(400, 401, 404, 409, 413, 422, 429, 503),
)
async def create_task(
    body: TaskRequest,
    principal: PrincipalDep,
    services: ServicesDep,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
) -> Response:
    """Queue a research task (202). With an ``Idempotency-Key`` the same key and body
    replay the first response; another body gets 409, as does a retry while the first
    request is still being processed."""
    if idempotency_key is not None:
        claim = await run_in_threadpool(
            services.tasks.idem_begin, principal.user, idempotency_key, _request_hash(body)
        )
        if claim.outcome == "mismatch":
            # 409, as for a key still in flight: the key is bound to another request (the
            # request itself is well formed; a fresh key resolves the conflict).
            raise ApiError(
                409,
                "idempotency_key_reused",
                "this Idempotency-Key was used with a different request body",
                field="Idempotency-Key",
            )
        if claim.outcome == "in_flight":
            raise ApiError(
                409,
                "idempotency_in_flight",
                "a request with this Idempotency-Key is still being processed; retry shortly",
                field="Idempotency-Key",
            )
        if claim.outcome == "replay":
            assert claim.response is not None
            return JSONResponse(
                claim.response,
                status_code=202,
                headers={
                    "Idempotent-Replayed": "true",
                    "Location": f"/v1/tasks/{claim.response['id']}",
                },
            )
    try:
        task = await _create(services, principal, body)
    except BaseException:
        if idempotency_key is not None:
            await settle(services.tasks.idem_abandon, principal.user, idempotency_key)
        raise
    payload = task.model_dump(mode="json")
    if idempotency_key is not None:
        await run_in_threadpool(
            services.tasks.idem_finish, principal.user, idempotency_key, payload
        )
    return JSONResponse(payload, status_code=202, headers={"Location": f"/v1/tasks/{task.id}"})


async def _create(services: Services, principal: Any, body: TaskRequest) -> Task:
    await run_in_threadpool(resolve_caller, services, principal, body.question, body.project)
    if body.webhook_url is not None:
        if not principal.webhook_secret:
            raise ApiError(
                422,
                "no_webhook_secret",
                "this API key has no webhook_secret configured to sign webhooks",
                field="webhook_url",
            )
        try:
            await check_destination(body.webhook_url, services.settings.webhook_allow_private)
        except WebhookUrlError as exc:
            raise ApiError(422, "webhook_url_refused", str(exc), field="webhook_url") from exc
    cap = services.settings.max_tasks_per_key
    if await run_in_threadpool(services.tasks.count_active, principal.key_id) >= cap:
        raise ApiError(
            429,
            "too_many_tasks",
            f"this API key already has {cap} queued or running tasks",
            headers={"Retry-After": "5"},
        )
    task = await run_in_threadpool(
        services.tasks.create_task,
        principal.user,
        principal.key_id,
        body.model_dump(mode="json"),
        body.webhook_url,
        current_traceparent(),  # the task's run links back to this request's trace
    )
    services.pool.notify()
    task_id_var.set(task.id)
    run_id_var.set(task.run_id)
    log.info("task queued", extra={"task_id": task.id, "run_id": task.run_id})
    return task


@router.get(
    "", response_model=TaskList, operation_id="list_tasks", responses=error_responses(401, 422)
)
def list_tasks(
    principal: PrincipalDep,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[
        str | None,
        Query(
            max_length=200,
            pattern=CURSOR_PATTERN,
            description="a next_cursor of an earlier page",
        ),
    ] = None,
) -> TaskList:
    """The caller's tasks, newest first; follow ``next_cursor`` for older ones."""
    if cursor is not None and not _valid_cursor(cursor):
        raise ApiError(422, "invalid_cursor", "cursor is not one this API returned", field="cursor")
    items, nxt = services.tasks.list_tasks(principal.user, limit, cursor)
    return TaskList(items=items, next_cursor=nxt)


def _valid_cursor(cursor: str) -> bool:
    created, sep, task_id = cursor.partition(":")
    try:
        at = float(created)
    except ValueError:
        return False
    # float() reads "inf", "nan" and "1e400" (inf) too: no page starts after those.
    return math.isfinite(at) and bool(sep and task_id)


@router.get(
    "/{task_id}", response_model=Task, operation_id="get_task", responses=error_responses(401, 404)
)
def get_task(task_id: str, principal: PrincipalDep, services: ServicesDep) -> Task:
    task = services.tasks.get_task(task_id, user=principal.user)
    if task is None:
        raise not_found("task")
    return task


@router.post(
    "/{task_id}/cancel",
    response_model=Task,
    operation_id="cancel_task",
    responses=error_responses(401, 404, 409),
)
async def cancel_task(task_id: str, principal: PrincipalDep, services: ServicesDep) -> Task:
    task = await run_in_threadpool(services.tasks.get_task, task_id, user=principal.user)
    if task is None:
        raise not_found("task")
    if task.status in TERMINAL or not await services.pool.cancel(task_id):
        raise ApiError(409, "already_finished", f"task is already {task.status}")
    latest = await run_in_threadpool(services.tasks.get_task, task_id, user=principal.user)
    assert latest is not None
    return latest


@router.post(
    "/{task_id}/input",
    response_model=Task,
    operation_id="review_task",
    responses=error_responses(400, 401, 404, 409, 413, 422),
)
async def review_task(
    task_id: str, body: ReviewInput, principal: PrincipalDep, services: ServicesDep
) -> Task:
    """Decide on the plan of a task paused for review (status ``input_required``): approve
    it or edit its calls, and pin or exclude documents. The task is queued again and its
    run goes on with the decision. 409 if the task is not waiting for input; 422 (the
    task stays paused) for a decision the run cannot take, e.g. an unknown tool."""
    task = await run_in_threadpool(services.tasks.get_task, task_id, user=principal.user)
    if task is None:
        raise not_found("task")
    if task.status != "input_required":
        raise ApiError(409, "not_awaiting_input", f"task is {task.status}, not waiting for input")
    try:
        decision = services.researcher.check_review(
            {**body.model_dump(mode="json"), "by": principal.user}
        )
    except InvalidReview as exc:
        raise ApiError(422, "invalid_review", str(exc)) from exc
    queued = await run_in_threadpool(
        services.tasks.submit_review, task_id, principal.user, decision.model_dump(mode="json")
    )
    if not queued:  # decided (or cancelled) by another request meanwhile
        raise ApiError(409, "not_awaiting_input", "task is no longer waiting for input")
    services.pool.notify()
    log.info("task review submitted", extra={"task_id": task_id, "action": decision.action})
    latest = await run_in_threadpool(services.tasks.get_task, task_id, user=principal.user)
    assert latest is not None
    return latest


@router.get(
    "/{task_id}/events",
    operation_id="task_events",
    response_class=EventSourceResponse,  # the stream alone: no JSON body documented
    responses={
        **error_responses(401, 404, 422, 429),
        200: sse_response_doc(
            TASK_STREAM,
            "The task's events as server-sent events: its stored events from the start (or "
            "after Last-Event-ID), then live until it ends with `done` or `error`. Each "
            "event's `data` is the stored event: the run's steps between `metadata` and the "
            "closing event.",
        ),
    },
)
async def task_events(
    task_id: str,
    principal: PrincipalDep,
    services: ServicesDep,
    last_event_id: Annotated[
        str | None,
        # A header is a string or absent, never null: the schema says only the string.
        WithJsonSchema({"type": "string", "pattern": LAST_EVENT_ID_PATTERN, "maxLength": 18}),
        Header(
            max_length=18,  # below 2^63: the stores compare it as a 64-bit integer
            pattern=LAST_EVENT_ID_PATTERN,
            description="resume after this event id (the id of the last event received)",
        ),
    ] = None,
) -> EventSourceResponse:
    if await run_in_threadpool(services.tasks.get_task, task_id, user=principal.user) is None:
        raise not_found("task")
    after = int(last_event_id) if last_event_id else 0  # digits only: checked at the edge
    return sse_response(_follow(services, task_id, after), services.settings.sse_ping_s)


async def _follow(services: Services, task_id: str, after: int) -> AsyncIterator[ServerSentEvent]:
    last_type = ""
    grace = 3  # re-reads after a terminal status, for a final event still being written
    while True:
        events = await run_in_threadpool(services.tasks.events_after, task_id, after)
        for event in events:
            after, last_type = event["seq"], event["type"]
            yield sse_event(event["seq"], event["type"], event)
        if events:
            continue
        row = await run_in_threadpool(services.tasks.task_row, task_id)
        if row is None or row["status"] in TERMINAL:
            if last_type in ("done", "error") or grace == 0:
                return
            grace -= 1
            await services.feed.wait(0.2)
            continue
        await services.feed.wait(1.0)
