"""The event stream's shared parts: SSE framing and the payloads of its closing events.

An answer streamed live (``/v1/answers``) and a task's stored events (``/v1/tasks/{id}/
events``) reach clients through the same framing and end with the same ``done`` / ``error``
payloads, so a client parses both alike.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import EventSourceResponse, ServerSentEvent

from graph.models import ResearchResult
from graph.runner import CallerRevoked

# No caching and no proxy buffering: events must reach the client as they happen.
_STREAM_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


def sse_event(seq: int, etype: str, data: dict[str, Any]) -> ServerSentEvent:
    """One frame; ``seq`` is the event id a client resumes from (``Last-Event-ID``)."""
    return ServerSentEvent(data=json.dumps(data, default=str), event=etype, id=str(seq))


def sse_response(events: AsyncIterator[ServerSentEvent], ping_s: float) -> EventSourceResponse:
    return EventSourceResponse(events, ping=ping_s, headers=dict(_STREAM_HEADERS))


def done_data(result: ResearchResult) -> dict[str, Any]:
    """What the closing ``done`` event carries: the answer and how it was reached."""
    return {
        "short_answer": result.short_answer,
        "answer": result.answer,
        "answerable": result.answerable,
        "claims": [c.model_dump(mode="json") for c in result.claims],
        "citations": [c.model_dump(mode="json") for c in result.citations],
        "warnings": result.warnings,
        "bound_hit": result.bound_hit,
        "usage": result.usage,
        "rounds": result.rounds,
        "tool_calls": result.tool_calls,
    }


def run_failed_data(exc: Exception) -> dict[str, str]:
    """The ``error`` event (and task error) of a run that raised: type and message only
    (a revoked key: its own code, and the reason without the exception's type)."""
    if isinstance(exc, CallerRevoked):
        return {"code": "key_revoked", "message": str(exc)[:500]}
    return {"code": "run_failed", "message": f"{type(exc).__name__}: {exc}"[:500]}
