"""``POST /v1/answers``: one research run, as JSON or streamed as server-sent events."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Header
from sse_starlette import ServerSentEvent
from starlette.concurrency import run_in_threadpool

from api.deps import PrincipalDep, Services, ServicesDep, resolve_caller
from api.errors import ApiError, error_responses
from api.event_models import ANSWER_STREAM, sse_item_schema
from api.events import done_data, run_failed_data, sse_event, sse_response
from api.logging import bound, run_id_var
from api.offload import settle
from api.schemas import AnswerRequest
from api.tasks.store import new_id
from graph.models import Caller, ResearchResult, RunOptions, TraceEvent
from retrieval.engines.base import is_engine_panic
from tools.telemetry import current_trace_id

log = logging.getLogger("waypoint.api.answers")
router = APIRouter(prefix="/v1", tags=["answers"])


@router.post(
    "/answers",
    operation_id="create_answer",
    response_model=ResearchResult,
    responses={
        **error_responses(400, 401, 404, 413, 422, 429, 503, 504),
        200: {
            "description": "The final result (JSON), or with `Accept: text/event-stream` a "
            "stream: metadata, plan, tool_call, tool_result, evidence, round, token, "
            "citation, then done or error; every event has an increasing id.",
            "content": {"text/event-stream": {"itemSchema": sse_item_schema(ANSWER_STREAM)}},
        },
    },
)
async def create_answer(
    body: AnswerRequest,
    principal: PrincipalDep,
    services: ServicesDep,
    accept: Annotated[str | None, Header()] = None,
) -> Any:
    # The task and catalog stores block (SQLite, psycopg): their calls run in a thread.
    caller = await run_in_threadpool(
        resolve_caller, services, principal, body.question, body.project
    )
    options = body.run_options()
    run_id = new_id("run")
    run_id_var.set(run_id)  # the request's remaining log lines (access log too) carry it
    await run_in_threadpool(
        services.tasks.register_run, run_id, principal.user, body.question, kind="answer"
    )
    if accept and "text/event-stream" in accept:
        return sse_response(
            _stream(services, body.question, caller, options, run_id),
            services.settings.sse_ping_s,
        )
    with bound(run_id=run_id):
        try:
            result = await asyncio.wait_for(
                _bounded(
                    services,
                    lambda: services.researcher.run(body.question, caller, options, run_id=run_id),
                ),
                timeout=services.settings.answer_timeout_s,
            )
        except TimeoutError as exc:
            await run_in_threadpool(services.tasks.finish_run, run_id, "failed")
            raise ApiError(
                504,
                "timeout",
                "the run exceeded the service's answer timeout; "
                "post it as a task (/v1/tasks) instead",
            ) from exc
        except BaseException:
            await settle(services.tasks.finish_run, run_id, "failed")
            raise
    await run_in_threadpool(services.tasks.finish_run, run_id, "succeeded")
    return result


async def _bounded(
    services: Services, run: Callable[[], Coroutine[Any, Any, ResearchResult]]
) -> ResearchResult:
    """Run once a slot is free: a burst of answers, JSON or streamed, queues instead of
    thrashing the engines (``max_concurrent_answers``). ``run`` is called only then, so a
    request that gives up while queued leaves no coroutine behind."""
    if services.answer_slots is None:
        return await run()
    async with services.answer_slots:
        return await run()


def _synthetic(run_id: str, etype: str, data: dict[str, Any]) -> dict[str, Any]:
    # Shaped like a trace event, so a client handles it as if the policy had emitted it.
    return {"run_id": run_id, "type": etype, "node": "synthesize", "data": data, "synthetic": True}


async def _stream(
    services: Services, question: str, caller: Caller, options: RunOptions, run_id: str
) -> AsyncIterator[ServerSentEvent]:
    """Forward the run's events as they happen; frame them with metadata / done / error.

    If the policy emitted no token or citation events (an extractive answer is built at
    once), the answer and its citations are sent as such after the run, so a client can
    rely on the same event sequence either way.
    """
    queue: asyncio.Queue[TraceEvent | None] = asyncio.Queue()
    seen: set[str] = set()

    async def on_event(event: TraceEvent) -> None:
        await queue.put(event)

    async def run() -> ResearchResult:
        with bound(run_id=run_id):
            try:
                # The same slots as a JSON answer: a streamed run waits its turn too (it
                # holds its stream open meanwhile, after the metadata event).
                return await asyncio.wait_for(
                    _bounded(
                        services,
                        lambda: services.researcher.run(
                            question, caller, options, run_id=run_id, on_event=on_event
                        ),
                    ),
                    timeout=services.settings.answer_timeout_s,
                )
            finally:
                await queue.put(None)

    n = 1
    metadata: dict[str, Any] = {
        "run_id": run_id,
        "question": question,
        "user": caller.user,
        "project": caller.project,
        "mode": options.mode,
        "ts": time.time(),
    }
    # The request's trace (the run's spans are in it): a browser's EventSource cannot read
    # the X-Trace-Id header, so the stream names it itself.
    trace_id = current_trace_id()
    if trace_id is not None:
        metadata["trace_id"] = trace_id
    yield sse_event(n, "metadata", metadata)
    runner = asyncio.create_task(run())
    status = "failed"
    try:
        while (event := await queue.get()) is not None:
            if event.type in ("metadata", "done", "error"):
                continue  # framed by this stream itself
            seen.add(event.type)
            n += 1
            yield sse_event(n, event.type, event.model_dump(mode="json"))
        try:
            result = await runner
        except TimeoutError:
            n += 1
            yield sse_event(
                n, "error", {"code": "timeout", "message": "the run exceeded the answer timeout"}
            )
            return
        except Exception as exc:  # reported to the client as the stream's last event
            log.exception("answer run failed")
            n += 1
            yield sse_event(n, "error", run_failed_data(exc))
            return
        except BaseException as exc:
            if not is_engine_panic(exc):
                raise  # cancellation: the client left
            # A Rust panic is no Exception: without this the stream just stopped, with no
            # error event. Its words stay in the log, as a JSON 500 keeps them.
            log.error("answer run failed: engine panic", exc_info=exc)
            n += 1
            yield sse_event(
                n,
                "error",
                {"code": "engine_error", "message": "an engine failed during the run"},
            )
            return
        if "token" not in seen and result.answer:
            n += 1
            yield sse_event(n, "token", _synthetic(run_id, "token", {"text": result.answer}))
        if "citation" not in seen:
            for citation in result.citations:
                n += 1
                data = citation.model_dump(mode="json")
                yield sse_event(n, "citation", _synthetic(run_id, "citation", data))
        n += 1
        status = "succeeded"
        yield sse_event(n, "done", {"run_id": run_id, **done_data(result)})
    finally:
        if not runner.done():
            status = "cancelled"  # the client went away: stop the work it asked for
            runner.cancel()
        await settle(services.tasks.finish_run, run_id, status)
