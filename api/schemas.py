"""Request and response models of the HTTP API (every body is one of these).

Request models forbid unknown fields: a typo in an option must fail loudly, not be
silently ignored.
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import cache
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from api.errors import ErrorDetail
from graph.models import ResearchResult, RunOptions, TraceEvent
from retrieval.search_models import MAX_LEG_TIMEOUT_S, MAX_NAME_CHARS, SearchOptions
from tools.catalog import DEFAULT_TOOLS

MIN_LEG_TIMEOUT_S = 0.1
TOOL_NAMES = tuple(t.name for t in DEFAULT_TOOLS)  # what a reviewer's call may name


# A request body means what its JSON types say, as the schema states them: no "10" for a
# number, no 0 or "true" for a boolean, no number for a date-time (pydantic's lax mode
# reads all of those). Floats must be finite: NaN or Infinity is refused, not computed with.
_REQUEST_CONFIG = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)
# A question or query with a character that is not white space, white space as JSON
# Schema patterns (ECMA-262 \s) define it: written out, so every regex engine, Python's
# str.isspace and the blank checks (is_blank) agree with what the schema promises.
NOT_BLANK = r"[^\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
_NOT_BLANK = re.compile(NOT_BLANK)


def is_blank(text: str) -> bool:
    """No character but white space (the schema's NOT_BLANK pattern fails)."""
    return _NOT_BLANK.search(text) is None


@cache
def _integer_fields(model: type[BaseModel]) -> frozenset[str]:
    def integer(annotation: Any) -> bool:
        return annotation is int or any(integer(a) for a in get_args(annotation))

    return frozenset(n for n, f in model.model_fields.items() if integer(f.annotation))


class _JsonTyped(BaseModel):
    @model_validator(mode="before")
    @classmethod
    def _integral_floats(cls, data: Any) -> Any:
        # JSON Schema counts 5.0 as an integer (strict mode alone would refuse it).
        if not isinstance(data, dict):
            return data
        ints = _integer_fields(cls)
        return {
            k: int(v) if k in ints and isinstance(v, float) and v.is_integer() else v
            for k, v in data.items()
        }


class _Strict(_JsonTyped):
    model_config = _REQUEST_CONFIG


# An absolute http(s) URL: user info, a host name or IPv4 address (ASCII), a port,
# then anything. What api.webhooks.check_destination accepts before it looks the host up.
_PORT = "(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
WEBHOOK_URL_PATTERN = (
    r"^[Hh][Tt][Tt][Pp][Ss]?://([A-Za-z0-9._~%!$&'()*+,;=:-]+@)?[A-Za-z0-9._~-]+"
    rf"(:{_PORT})?([/?#][!-~]*)?$"
)

# RFC 3339, what the schema's date-time format means: a date, a time and an offset.
_RFC3339 = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)


def _rfc3339(value: Any) -> Any:
    # pydantic's lax mode also reads a number, "0", a bare date or a time without offset
    # as a datetime; the schema promises RFC 3339 only, so only that is read.
    if not isinstance(value, str):
        return value  # a datetime passes; anything else fails the strict check
    if not _RFC3339.match(value):
        raise ValueError("must be an RFC 3339 date-time with an offset, e.g. 2026-01-31T09:00:00Z")
    return datetime.fromisoformat(value.upper())


DateTime = Annotated[datetime, BeforeValidator(_rfc3339)]

PROJECT_DESCRIPTION = (
    "Scope; default: the key's project. A project that does not exist and one holding "
    "nothing this key may read are refused alike (404 unknown_project)"
)


class AnswerRequest(_Strict):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"question": "Who leads the team that owns the service behind OPS-142?"},
                {"question": "When was the retry budget added?", "mode": "hybrid"},
            ]
        }
    )

    question: str = Field(
        min_length=1,
        pattern=NOT_BLANK,
        description="The question, not blank (length capped by the server)",
    )
    project: str | None = Field(
        default=None, max_length=MAX_NAME_CHARS, description=PROJECT_DESCRIPTION
    )
    mode: Literal["hybrid", "iterative"] | None = None
    max_rounds: int | None = Field(default=None, ge=1, le=10)

    def run_options(self) -> RunOptions:
        opts: dict[str, Any] = {}
        if self.mode is not None:
            opts["mode"] = self.mode
        if self.max_rounds is not None:
            opts["max_rounds"] = self.max_rounds
        return RunOptions(**opts)


class TaskRequest(AnswerRequest):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "question": "Which team owns the service behind last month's outage?",
                    "max_rounds": 4,
                    "webhook_url": "https://hooks.example.com/waypoint",
                },
            ]
        }
    )

    webhook_url: str | None = Field(
        default=None,
        min_length=1,
        max_length=2_000,
        pattern=WEBHOOK_URL_PATTERN,
        description="POSTed the signed result when the task ends (the task.finished webhook). "
        "Refused (422) unless it resolves to a globally routable address, or the key has no "
        "webhook_secret",
    )
    review: list[Literal["plan"]] = Field(
        default_factory=list,
        max_length=1,
        description='Points where the run pauses for a person\'s decision: with "plan" the '
        "task pauses after its first plan (status input_required, the proposed calls in "
        "review_request) until POST /v1/tasks/{id}/input",
    )


class ReviewCall(_Strict):
    """A tool call a reviewer has the run make instead of the proposed ones."""

    # The run refuses any other name (422 invalid_review, the task stays paused): the
    # schema names the catalog's tools, so a schema-valid decision is one it can take.
    tool: str = Field(
        min_length=1,
        max_length=100,
        examples=["search_knowledge"],
        json_schema_extra={"enum": list(TOOL_NAMES)},
    )
    args: dict[str, Any] = Field(default_factory=dict)
    reason: str = Field(default="", max_length=1_000)


class ReviewInput(_Strict):
    """A reviewer's decision on a paused task's plan (``POST /v1/tasks/{id}/input``)."""

    model_config = ConfigDict(
        json_schema_extra={
            # What the run checks (422 invalid_review otherwise): an edit gives its calls,
            # an approval gives none.
            "if": {"properties": {"action": {"const": "edit"}}, "required": ["action"]},
            "then": {"properties": {"calls": {"minItems": 1}}, "required": ["calls"]},
            "else": {"properties": {"calls": {"maxItems": 0}}},
            "examples": [
                {"action": "approve"},
                {"action": "approve", "pin": ["wiki:ledger-runbook"], "exclude": ["payroll"]},
                {
                    "action": "edit",
                    "calls": [{"tool": "search_knowledge", "args": {"query": "Ledger owner"}}],
                },
            ],
        }
    )

    action: Literal["approve", "edit"] = Field(
        default="approve",
        description="approve: the proposed calls run as they are; edit: `calls` run instead",
    )
    calls: list[ReviewCall] = Field(
        default_factory=list,
        max_length=20,
        description="with action edit only: the calls to run instead",
    )
    pin: list[Annotated[str, Field(min_length=1, max_length=500)]] = Field(
        default_factory=list,
        max_length=100,
        description="document ids whose passages (those the key may read) enter the evidence",
    )
    exclude: list[Annotated[str, Field(min_length=1, max_length=500)]] = Field(
        default_factory=list,
        max_length=100,
        description="sources or document ids: nothing of them ever enters the evidence",
    )


class ReviewRequest(BaseModel):
    """What a paused task asks a person to decide on."""

    point: str = Field(description="where the run paused: plan")
    round: int
    calls: list[dict[str, Any]] = Field(description="the proposed tool calls")


TaskStatus = Literal["queued", "running", "input_required", "succeeded", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})


class TaskProgress(BaseModel):
    round: int = 0
    tool_calls: int = 0
    evidence: int = 0
    events: int = 0


class WebhookDelivery(BaseModel):
    attempt: int
    webhook_id: str
    at: datetime
    status_code: int | None = None
    error: str | None = None
    ok: bool


class WebhookState(BaseModel):
    url: str
    state: Literal["none", "pending", "delivered", "failed"] = "none"
    webhook_id: str | None = None
    deliveries: list[WebhookDelivery] = Field(default_factory=list)


class TaskSnapshot(BaseModel):
    """A task as a webhook carries it: everything but its webhook's own state."""

    id: str
    status: TaskStatus
    question: str
    project: str | None = None
    mode: str | None = None
    max_rounds: int | None = None
    run_id: str
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    progress: TaskProgress = Field(default_factory=TaskProgress)
    result: ResearchResult | None = None
    error: ErrorDetail | None = None
    resumed: int = Field(default=0, description="times the run resumed from its checkpoint")
    review_request: ReviewRequest | None = Field(
        default=None, description="while input_required: the plan waiting for a decision"
    )


class Task(TaskSnapshot):
    webhook: WebhookState | None = None


class WebhookEvent(BaseModel):
    """The body of a webhook: the task ended, or paused for a person's decision."""

    type: Literal["task.succeeded", "task.failed", "task.cancelled", "task.input_required"]
    timestamp: str = Field(description="when the body was built, ISO 8601 UTC")
    data: TaskSnapshot


class TaskList(BaseModel):
    items: list[Task]
    next_cursor: str | None = Field(
        default=None, description="pass as ?cursor= to get the next (older) page"
    )


class RunSummary(BaseModel):
    run_id: str
    question: str
    kind: Literal["answer", "task", "cli"] = "answer"
    task_id: str | None = None
    status: str
    created_at: datetime
    finished_at: datetime | None = None


class RunList(BaseModel):
    items: list[RunSummary]


class NodeSpan(BaseModel):
    node: str
    round: int
    start: float
    end: float | None = None
    duration_ms: float | None = None


class RoundView(BaseModel):
    round: int
    plan: list[dict[str, Any]] = Field(default_factory=list)
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    tool_results: list[dict[str, Any]] = Field(default_factory=list)
    evidence: list[dict[str, Any]] = Field(default_factory=list)
    verdicts: list[dict[str, Any]] = Field(default_factory=list)


class RunTrace(BaseModel):
    run: RunSummary
    nodes: list[NodeSpan]
    rounds: list[RoundView]
    events: list[TraceEvent]
    result: ResearchResult | None = None


class SearchRequest(_JsonTyped, SearchOptions):
    query: str = Field(
        min_length=1, pattern=NOT_BLANK, description="The query, not blank (length capped)"
    )
    project: str | None = Field(
        default=None, max_length=MAX_NAME_CHARS, description=PROJECT_DESCRIPTION
    )
    time_from: DateTime | None = None
    time_to: DateTime | None = None
    # No engine answers in less: a smaller timeout only fails every leg.
    leg_timeout_s: float = Field(default=30.0, ge=MIN_LEG_TIMEOUT_S, le=MAX_LEG_TIMEOUT_S)

    model_config = ConfigDict(
        **_REQUEST_CONFIG,
        json_schema_extra={
            "examples": [
                {"query": "OPS-142 owner", "k": 5},
                {"query": "retry budget", "legs": ["lexical"], "time_from": "2026-01-01T00:00:00Z"},
            ]
        },
    )


class SourceView(BaseModel):
    name: str
    configured: bool | None = Field(
        description="has a connector in the sources file (can be synced); null for a key "
        "that may not sync"
    )
    indexed: dict[str, Any] | None = Field(default=None, description="what the index holds")


class SourceList(BaseModel):
    items: list[SourceView]


class SourceJob(BaseModel):
    id: str
    source: str
    status: Literal["queued", "running", "succeeded", "failed"]
    created_at: datetime
    finished_at: datetime | None = None
    report: dict[str, Any] | None = None
    failures: list[str] = Field(default_factory=list)
    error: str | None = None


class Health(BaseModel):
    status: Literal["ok", "degraded"]
    version: str
    checks: dict[str, str] = Field(default_factory=dict)
