"""Tool calls as OpenTelemetry spans (GenAI ``execute_tool``) and Prometheus metrics.

The OpenTelemetry API is a no-op until a tracer provider is installed (the service does
so when an OTLP endpoint is configured), so these spans cost next to nothing otherwise.
Metrics land in prometheus-client's default registry, which ``/metrics`` renders.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from prometheus_client import Counter, Histogram

tracer = trace.get_tracer("waypoint.tools")

# A call either succeeded ("ok"), succeeded with a leg degraded inside it ("partial", e.g.
# the dense leg of a search failed and the lexical one answered) or failed ("degraded":
# the round goes on without it).
TOOL_CALLS = Counter(
    "waypoint_tool_calls_total", "Tool calls by tool and outcome", ["tool", "outcome"]
)
TOOL_SECONDS = Histogram(
    "waypoint_tool_call_seconds",
    "Latency of one tool call (a retrieval leg of a round), retries included",
    ["tool"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)

# A search's own stages: each retrieval leg (lexical, dense, ...), rewrite, fuse, fetch,
# rerank, expand, total (the names of its ``timings_ms``).
SEARCH_STAGE_SECONDS = Histogram(
    "waypoint_search_stage_seconds",
    "Latency of one stage of a search: each retrieval leg, fusion, rerank, ...",
    ["stage"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)


def current_trace_id() -> str | None:
    """The trace id of the current span as 32 hex digits; None outside a recorded trace."""
    ctx = trace.get_current_span().get_span_context()
    return trace.format_trace_id(ctx.trace_id) if ctx.is_valid else None


@contextmanager
def tool_span(tool: str, round_no: int) -> Iterator[Span]:
    """The span of one tool call; ``tool`` is a catalog name (bounded cardinality)."""
    with tracer.start_as_current_span(
        f"execute_tool {tool}",
        kind=SpanKind.INTERNAL,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.type": "datastore",
            "waypoint.round": round_no,
        },
    ) as span:
        yield span


def record_tool_call(
    span: Span,
    tool: str,
    *,
    error_type: str | None,
    error: str | None,
    warnings: int,
    attempts: int,
    seconds: float,
    evidence: int,
    timings_ms: dict[str, float] | None = None,
) -> None:
    """Close out one call: span attributes and status, call counter, latency (and a
    search's stage latencies)."""
    span.set_attribute("waypoint.tool.attempts", attempts)
    span.set_attribute("waypoint.tool.evidence", evidence)
    if error_type is not None:
        span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR, error))
        outcome = "degraded"
    else:
        outcome = "partial" if warnings else "ok"
    span.set_attribute("waypoint.tool.outcome", outcome)
    TOOL_CALLS.labels(tool, outcome).inc()
    TOOL_SECONDS.labels(tool).observe(seconds)
    for stage, ms in (timings_ms or {}).items():
        if isinstance(ms, int | float):
            SEARCH_STAGE_SECONDS.labels(stage).observe(ms / 1000)
