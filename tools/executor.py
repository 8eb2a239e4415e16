"""Run a round's tool calls concurrently and normalise their outputs into evidence.

A round costs the slowest leg, not the sum: calls run under a semaphore (bounded fan-out),
each attempt under its own timeout, transient failures retried with tenacity. A call that
still fails is a *degraded leg*: recorded in its outcome (and by the graph as a warning),
never a failed run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from tenacity import (
    AsyncRetrying,
    RetryError,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from tools.catalog import Catalog, SearchArgs, ToolOutput, search_knowledge
from tools.context import ToolContext
from tools.evidence import Evidence, Provenance
from tools.telemetry import record_tool_call, tool_span


class TransientToolError(Exception):
    """Raised by a tool for a failure worth retrying (connection reset, 503, busy index)."""


# Timeouts and connection trouble are worth another attempt; a bad argument or a bug is not.
TRANSIENT = (TransientToolError, TimeoutError, ConnectionError)


class ToolCall(BaseModel):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    reason: str = ""  # why the planner chose it (shown in the trace)
    parent: str | None = None  # the evidence id this call follows from (a hop), if any
    lead: int | None = None  # its position among that passage's leads
    rewrite: bool = False  # searches the question rewritten with a bridge (Provenance)

    @property
    def query(self) -> str:
        """The human-readable input, recorded in each evidence item's provenance."""
        for key in ("name", "id", "chunk_id", "query"):
            if key in self.args:
                return str(self.args[key])
        return ""

    def key(self) -> str:
        """Identity used to avoid repeating a call already made in this run."""
        return f"{self.tool}:{self.query.strip().casefold()}"


class CallOutcome(BaseModel):
    call: ToolCall
    evidence: list[Evidence] = Field(default_factory=list)
    ok: bool = True
    error: str | None = None
    attempts: int = 0
    duration_ms: float = 0.0
    detail: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


class ToolExecutor:
    def __init__(
        self,
        catalog: Catalog | None = None,
        max_concurrency: int = 4,
        timeout_s: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        self.catalog = catalog or Catalog()
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries

    async def run(
        self, calls: list[ToolCall], ctx: ToolContext, round_no: int
    ) -> list[CallOutcome]:
        """Outcomes in the order of ``calls`` (never raises for a failed call)."""
        self.embed_ahead(calls, ctx)
        semaphore = asyncio.Semaphore(self.max_concurrency)

        async def bounded(call: ToolCall) -> CallOutcome:
            async with semaphore:
                return await self._one(call, ctx, round_no)

        return list(await asyncio.gather(*(bounded(c) for c in calls)))

    def embed_ahead(
        self, calls: list[ToolCall], ctx: ToolContext, also: Sequence[str] = ()
    ) -> None:
        """Start embedding the queries of these calls' searches in one batch (the graph calls
        it as soon as a round is planned; ``run`` does for what is not started yet)."""
        queries = []
        for call in calls:
            query = call.args.get("query")
            if call.tool not in self.catalog or not isinstance(query, str):
                continue
            if self.catalog.get(call.tool).fn is search_knowledge:
                queries += _dense_texts(call)
        if queries or also:
            ctx.embed_ahead([*queries, *also])

    async def _one(self, call: ToolCall, ctx: ToolContext, round_no: int) -> CallOutcome:
        # A name the planner made up is labelled as such: metric labels stay bounded.
        tool = call.tool if call.tool in self.catalog else "unknown"
        with tool_span(tool, round_no) as span:
            outcome, error_type = await self._outcome(call, ctx, round_no)
            record_tool_call(
                span,
                tool,
                error_type=error_type,
                error=outcome.error,
                warnings=len(outcome.warnings),
                attempts=outcome.attempts,
                seconds=outcome.duration_ms / 1000,
                evidence=len(outcome.evidence),
                timings_ms=outcome.detail.get("timings_ms"),
            )
        return outcome

    async def _outcome(
        self, call: ToolCall, ctx: ToolContext, round_no: int
    ) -> tuple[CallOutcome, str | None]:
        """The call's outcome, and the kind of its failure (None when it succeeded)."""
        started = time.perf_counter()
        outcome = CallOutcome(call=call)
        error_type: str | None = None
        try:
            spec = self.catalog.get(call.tool)
            args = spec.args_model.model_validate(call.args)
        except (KeyError, ValidationError) as exc:
            outcome.ok, outcome.error = False, f"bad call: {_one_line(exc)}"
            outcome.duration_ms = (time.perf_counter() - started) * 1000
            return outcome, "bad_call"
        try:
            output = await self._with_retries(spec.fn, ctx, args, outcome)
        except RetryError as exc:
            last = exc.last_attempt.exception()
            outcome.ok, outcome.error = (
                False,
                f"gave up after {outcome.attempts} attempts: "
                + (_one_line(last) if last else "unknown"),
            )
            error_type = type(last).__name__ if last else "retries_exhausted"
        except Exception as exc:  # noqa: BLE001 - a failed leg degrades, it must not fail the run
            outcome.ok, outcome.error = False, f"{type(exc).__name__}: {_one_line(exc)}"
            error_type = type(exc).__name__
        else:
            outcome.evidence = _with_provenance(output.evidence, call, round_no)
            outcome.detail, outcome.warnings = output.detail, output.warnings
        outcome.duration_ms = (time.perf_counter() - started) * 1000
        return outcome, error_type

    async def _with_retries(
        self, fn: Any, ctx: ToolContext, args: BaseModel, outcome: CallOutcome
    ) -> ToolOutput:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_exponential(multiplier=0.2, max=2.0),
            retry=retry_if_exception_type(TRANSIENT),
            reraise=False,
        )
        async for attempt in retrying:
            with attempt:
                outcome.attempts += 1
                async with asyncio.timeout(self.timeout_s):
                    result: ToolOutput = await fn(ctx, args)
                return result
        raise AssertionError("unreachable: tenacity either returns or raises")


def _with_provenance(evidence: list[Evidence], call: ToolCall, round_no: int) -> list[Evidence]:
    return [
        e.model_copy(
            update={
                "provenance": [
                    Provenance(
                        round=round_no,
                        tool=call.tool,
                        query=call.query,
                        rank=i + 1,
                        parent=call.parent,
                        lead=call.lead,
                        rewrite=call.rewrite,
                    )
                ]
            }
        )
        for i, e in enumerate(evidence)
    ]


def _one_line(exc: BaseException | None) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())[:300]


def _dense_texts(call: ToolCall) -> list[str]:
    """What a search call's dense leg embeds; nothing for a lexical-only search."""
    try:
        args = SearchArgs.model_validate(call.args)
    except ValidationError:
        return []  # the call fails validation when it runs; nothing to embed
    return args.dense_texts if args.embeds else []
