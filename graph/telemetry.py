"""A research run as OpenTelemetry spans (GenAI semantic conventions) and LLM metrics.

    invoke_agent waypoint          traced_run(): one per run or resume
      round                        RoundSpans: one per round of the loop
        execute_tool <tool>        tools.telemetry: one per tool call
        chat <model>               chat_span(): one per request to the LLM server

Round spans come from a LangChain callback handler that LangGraph calls as each node
starts and ends: the graph's code is not touched. ``traced_run`` hands the handler to every
graph invoked inside it through LangChain's configure hook (a context variable), so no
caller has to pass it in a config. What the runner does before the graph starts (round
one planned ahead by a policy that plans offline) sits directly under ``invoke_agent``.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers.context import register_configure_hook
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from prometheus_client import Counter, Histogram

from graph.models import ResearchResult

tracer = trace.get_tracer("waypoint.graph")
AGENT_NAME = "waypoint"

LLM_TOKENS = Counter(
    "waypoint_llm_tokens_total",
    "Tokens the LLM server reported, by purpose (plan, verdict, answer) and type",
    ["purpose", "type"],
)
LLM_CALLS = Counter(
    "waypoint_llm_calls_total",
    "Requests to the LLM server by purpose and outcome",
    ["purpose", "outcome"],
)
LLM_SECONDS = Histogram(
    "waypoint_llm_call_seconds",
    "Latency of one request to the LLM server (a streamed answer: until its last token)",
    ["purpose"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)

RUNS = Counter(
    "waypoint_runs_total",
    "Research runs (and resumes) by mode and outcome: answered, refused, failed, cancelled",
    ["mode", "outcome"],
)
RUN_ROUNDS = Histogram(
    "waypoint_run_rounds", "Rounds of a finished run", ["mode"], buckets=(1, 2, 3, 4, 5, 6, 8, 10)
)
RUN_TOOL_CALLS = Histogram(
    "waypoint_run_tool_calls",
    "Tool calls of a finished run",
    ["mode"],
    buckets=(1, 2, 4, 6, 8, 12, 16, 24, 32),
)
RUN_SECONDS = Histogram(
    "waypoint_run_seconds",
    "Wall time of a finished run",
    ["mode"],
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300),
)

_round_handler: contextvars.ContextVar[BaseCallbackHandler | None] = contextvars.ContextVar(
    "waypoint_round_spans", default=None
)
register_configure_hook(_round_handler, inheritable=True)


_OPENS_A_ROUND = ("round", "plan")


class RoundSpans(BaseCallbackHandler):
    """Opens a ``round`` span when a node of a new round starts and makes it the current
    span for that node's work; closes it when the next round or synthesis begins, or the
    graph ends.

    LangGraph starts each node's callbacks in the task that drives the graph and runs the
    node in a copy of that task's context, so setting the current span at node start is
    what the node's tool calls and LLM requests see. Nothing is detached at node end: the
    end callback runs in another context; ``traced_run`` runs the graph in a task of its
    own, so what is set here never outlives the run.
    """

    run_inline = True  # called in the driving task, not in a thread: the context is shared
    raise_error = False

    def __init__(self) -> None:
        self._root: UUID | None = None
        self._parent: otel_context.Context | None = None
        self._round: tuple[int, Span] | None = None

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if parent_run_id is None and self._root is None:
            self._root, self._parent = run_id, otel_context.get_current()
            return
        node = (metadata or {}).get("langgraph_node")
        if parent_run_id != self._root or node is None or node != kwargs.get("name"):
            return
        if node == "synthesize":
            self._close_round()
            otel_context.attach(self._parent or otel_context.get_current())
            return
        state = inputs if isinstance(inputs, dict) else {}
        # The node that opens a round (the round subgraph, or a flat graph's plan step)
        # works on the next round number; every other node on the current one.
        round_no = int(state.get("round") or 0) + (1 if node in _OPENS_A_ROUND else 0)
        if self._round is None or self._round[0] != round_no:
            self._close_round()
            span = tracer.start_span(
                "round",
                context=self._parent,
                kind=SpanKind.INTERNAL,
                attributes={"waypoint.round": round_no},
            )
            self._round = (round_no, span)
        otel_context.attach(trace.set_span_in_context(self._round[1], self._parent))

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if run_id == self._root:
            self._close_round()

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        if run_id == self._root and self._round is not None:
            self._round[1].set_status(Status(StatusCode.ERROR, f"{type(error).__name__}"))
            self._close_round()

    def _close_round(self) -> None:
        if self._round is not None:
            self._round[1].end()
            self._round = None


async def traced_run(
    work: Callable[[], Coroutine[Any, Any, ResearchResult]],
    run_id: str | None,
    mode: str | None,
    resumed: bool,
) -> ResearchResult:
    """Run ``work`` (a run or a resume of the graph) as an ``invoke_agent`` span, with the
    round handler handed to the graph, and count it in the run metrics."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT_NAME,
        "waypoint.run.resumed": resumed,
    }
    if run_id:
        attributes["gen_ai.conversation.id"] = run_id
    outcome = "failed"
    started = time.perf_counter()
    with tracer.start_as_current_span(
        f"invoke_agent {AGENT_NAME}", kind=SpanKind.INTERNAL, attributes=attributes
    ) as span:
        token = _round_handler.set(RoundSpans() if span.is_recording() else None)
        try:
            # A task of its own: the current span RoundSpans sets stays inside the run.
            result = await asyncio.create_task(work())
            outcome = "answered" if result.answerable else "refused"
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            _round_handler.reset(token)
            RUNS.labels(mode or "unknown", outcome).inc()
        mode = result.mode
        span.set_attributes(
            {
                "gen_ai.conversation.id": result.run_id,
                "waypoint.mode": mode,
                "waypoint.rounds": result.rounds,
                "waypoint.tool_calls": result.tool_calls,
                "waypoint.answerable": result.answerable,
            }
        )
        if result.bound_hit:
            span.set_attribute("waypoint.bound_hit", str(result.bound_hit))
    RUN_ROUNDS.labels(mode).observe(result.rounds)
    RUN_TOOL_CALLS.labels(mode).observe(result.tool_calls)
    RUN_SECONDS.labels(mode).observe(time.perf_counter() - started)
    return result


class ChatRecord:
    """What one response (or streamed chunk) tells the span of its request: the model
    that answered, the response id, the finish reasons and the token usage. A stream
    reports its usage in its last chunk (``stream_options.include_usage``), when the
    server supports it."""

    def __init__(self, span: Span, purpose: str) -> None:
        self.span = span
        self.purpose = purpose
        self.finish_reasons: list[str] = []

    def record(self, response: Any) -> None:
        if getattr(response, "model", None):
            self.span.set_attribute("gen_ai.response.model", str(response.model))
        if getattr(response, "id", None):
            self.span.set_attribute("gen_ai.response.id", str(response.id))
        for choice in getattr(response, "choices", None) or []:
            reason = getattr(choice, "finish_reason", None)
            if reason:
                self.finish_reasons.append(str(reason))
        usage = getattr(response, "usage", None)
        for kind, field in (("input", "prompt_tokens"), ("output", "completion_tokens")):
            count = getattr(usage, field, None)
            if isinstance(count, int):
                self.span.set_attribute(f"gen_ai.usage.{kind}_tokens", count)
                LLM_TOKENS.labels(self.purpose, kind).inc(count)


@contextmanager
def chat_span(
    purpose: str,
    model: str,
    base_url: str | None,
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> Iterator[ChatRecord]:
    """One request to an OpenAI-compatible server (for a stream: until its last chunk),
    as a GenAI ``chat`` span (CLIENT) and in the LLM metrics; ``purpose`` is plan, verdict
    or answer."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",  # the wire protocol; the server may be any
        "gen_ai.request.model": model,
        "waypoint.llm.purpose": purpose,
    }
    if max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = max_tokens
    if temperature is not None:
        attributes["gen_ai.request.temperature"] = temperature
    address = urlsplit(str(base_url)) if base_url else None
    if address is not None and address.hostname:
        attributes["server.address"] = address.hostname
        if address.port:
            attributes["server.port"] = address.port
    with (
        tracer.start_as_current_span(
            f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes
        ) as span,
        LLM_SECONDS.labels(purpose).time(),
    ):
        record = ChatRecord(span, purpose)
        try:
            yield record
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            LLM_CALLS.labels(purpose, "error").inc()
            raise
        finally:
            if record.finish_reasons:
                span.set_attribute("gen_ai.response.finish_reasons", record.finish_reasons)
        LLM_CALLS.labels(purpose, "ok").inc()
