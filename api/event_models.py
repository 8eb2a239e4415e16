"""The server-sent event streams as models: what each event's ``data`` holds, per event name.

Two streams exist. ``POST /v1/answers`` with ``Accept: text/event-stream`` streams one
run live; ``GET /v1/tasks/{id}/events`` replays a task's stored events and follows it live.
On the wire every event is ``event: <name>``, ``id: <n>`` (increasing; a client resumes a
task stream after the last one it got, with ``Last-Event-ID``) and ``data: <JSON>``.

These models document the contract (OpenAPI, docs/API.md); the routers build the payloads
(api.events). The OpenAPI entry of a stream is an OpenAPI 3.2 ``itemSchema``: a union of
one object per event name, each naming its JSON payload as ``contentSchema``.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from api.schemas import ReviewRequest
from graph.models import BoundName, Citation, Claim, EventType

# The events a run emits while it works; the stream itself sends the frames.
FRAME_EVENTS = ("metadata", "done", "error")
TRACE_EVENTS: tuple[str, ...] = tuple(e for e in get_args(EventType) if e not in FRAME_EVENTS)


class AnswerStarted(BaseModel):
    """``metadata``, the first event of an answer stream."""

    run_id: str
    question: str
    user: str
    project: str | None = None
    mode: str = Field(description="hybrid or iterative")
    ts: float = Field(description="epoch seconds")
    trace_id: str | None = Field(
        default=None,
        pattern="^[0-9a-f]{32}$",
        description="the request's OpenTelemetry trace id (the run's spans are in it); "
        "absent when tracing is off",
    )


class RunEvent(BaseModel):
    """One step of the run: a node started or ended, the plan, a tool call and its ranked
    result, evidence added, a round's verdict, answer text (``token``), a citation, a claim.
    ``data`` depends on the event and may gain fields."""

    run_id: str
    seq: int | None = Field(
        default=None,
        description="the run's own sequence number (not the stream id); absent on a "
        "synthetic event",
    )
    type: EventType
    ts: float | None = Field(default=None, description="epoch seconds; absent on a synthetic event")
    node: str | None = None
    round: int = 0
    data: dict[str, Any] = Field(default_factory=dict)
    synthetic: bool = Field(
        default=False,
        description="sent by the stream after the run (an answer built at once has no "
        "token or citation events of its own): the answer text, then each citation",
    )


class RunDone(BaseModel):
    """``done``: the answer and how it was reached (the JSON answer less the evidence)."""

    short_answer: str | None = None
    answer: str
    answerable: bool
    claims: list[Claim] = Field(default_factory=list)
    citations: list[Citation] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    bound_hit: BoundName | None = None
    usage: dict[str, Any] = Field(default_factory=dict)
    rounds: int = 0
    tool_calls: int = 0


class AnswerDone(RunDone):
    run_id: str


class StreamError(BaseModel):
    """``error``: the run failed, timed out, was cancelled or its key revoked; the last
    event of the stream."""

    code: str = Field(examples=["run_failed", "timeout", "cancelled", "key_revoked"])
    message: str


class TaskStarted(BaseModel):
    task_id: str
    run_id: str
    resumed: bool = Field(description="the run goes on from its checkpoint after a restart")


class _StoredEvent(BaseModel):
    """A task's events are stored, then streamed: each carries its run, type and time."""

    run_id: str
    seq: int = Field(description="the stream id of this event")
    ts: float


class TaskMetadataEvent(_StoredEvent):
    type: Literal["metadata"]
    data: TaskStarted


class TaskRunEvent(_StoredEvent):
    type: EventType
    node: str | None = None
    round: int = 0
    data: dict[str, Any] = Field(default_factory=dict)


class TaskDoneEvent(_StoredEvent):
    type: Literal["done"]
    data: RunDone


class TaskErrorEvent(_StoredEvent):
    type: Literal["error"]
    data: StreamError


class ReviewAsked(ReviewRequest):
    """The run paused after its plan for a person's decision (``POST /v1/tasks/{id}/input``)."""

    task_id: str
    run_id: str


class TaskInputRequiredEvent(_StoredEvent):
    """``input_required``: the task paused; the stream stays open (pings) until it goes on."""

    type: Literal["input_required"]
    data: ReviewAsked


# Each stream: event name -> the model of its data. Every model named here is listed in
# the OpenAPI components (api.openapi).
ANSWER_STREAM: dict[str, type[BaseModel]] = {
    "metadata": AnswerStarted,
    **dict.fromkeys(TRACE_EVENTS, RunEvent),
    "done": AnswerDone,
    "error": StreamError,
}
TASK_STREAM: dict[str, type[BaseModel]] = {
    "metadata": TaskMetadataEvent,
    **dict.fromkeys(TRACE_EVENTS, TaskRunEvent),
    "input_required": TaskInputRequiredEvent,
    "done": TaskDoneEvent,
    "error": TaskErrorEvent,
}
STREAM_MODELS: tuple[type[BaseModel], ...] = tuple(
    {m: None for m in (*ANSWER_STREAM.values(), *TASK_STREAM.values())}
)


def sse_item_schema(stream: dict[str, type[BaseModel]]) -> dict[str, Any]:
    """The OpenAPI ``itemSchema`` of a stream: one object per event name (``event`` tells
    them apart), its ``data`` a JSON string of the event's model."""
    variants = [
        {
            "type": "object",
            "required": ["event", "id", "data"],
            "properties": {
                "event": {"const": name},
                "id": {"type": "string", "pattern": "^[0-9]+$"},
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {"$ref": f"#/components/schemas/{model.__name__}"},
                },
            },
        }
        for name, model in stream.items()
    ]
    return {"oneOf": variants}


def sse_response_doc(stream: dict[str, type[BaseModel]], description: str) -> dict[str, Any]:
    """A route's 200 entry for a stream (its JSON content, if any, comes from the route)."""
    return {
        "description": description,
        "content": {"text/event-stream": {"itemSchema": sse_item_schema(stream)}},
    }
