"""Human review of a run's first plan: what a reviewer may decide, checked before the run
resumes with it (an invalid decision leaves the run paused), and the review node that
applies it after LangGraph's ``interrupt`` hands it back.

approve: the proposed calls run as they are; edit: ``calls`` run instead. Either may pin
documents (their passages the caller may read enter the evidence pool) and exclude
sources or documents (nothing of them ever enters the pool).
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt
from pydantic import BaseModel, ConfigDict, Field, model_validator

from graph.context import RunContext
from graph.nodes import Run, Step, fresh_calls, run_of, timed
from graph.state import ResearchState, excluded
from retrieval.placement import engine_call
from tools.catalog import Catalog
from tools.evidence import Provenance
from tools.executor import ToolCall
from tools.normalize import evidence_from_record


class InvalidReview(ValueError):
    """A decision the run cannot take (unknown tool, edit without calls, ...)."""


class ReviewDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["approve", "edit"] = "approve"
    calls: list[ToolCall] = Field(default_factory=list)  # edit: the calls to run instead
    pin: list[str] = Field(default_factory=list)  # document ids
    exclude: list[str] = Field(default_factory=list)  # sources or document ids
    by: str = ""  # who decided (the API sets the caller's user)

    @model_validator(mode="after")
    def _calls_only_for_edit(self) -> ReviewDecision:
        if self.action == "edit" and not self.calls:
            raise ValueError("an edit gives the calls to run")
        if self.action == "approve" and self.calls:
            raise ValueError("calls are given with action 'edit' only")
        return self


def checked(decision: dict[str, Any] | ReviewDecision, catalog: Catalog) -> ReviewDecision:
    """The decision, validated against the tools the run may call (InvalidReview if not)."""
    try:
        found = ReviewDecision.model_validate(decision)
    except ValueError as exc:
        raise InvalidReview(str(exc)) from exc
    unknown = sorted({c.tool for c in found.calls} - set(catalog.names()))
    if unknown:
        raise InvalidReview(f"unknown tool(s): {', '.join(unknown)}")
    return found


# -- the node --


async def review(
    state: ResearchState, runtime: Runtime[RunContext]
) -> Command[Literal["execute", "__end__"]]:
    """The run pauses here (``interrupt``) until a person decides on the first plan; the
    node runs again from its start when the decision comes (``Command(resume=...)``)."""
    asked = {"point": "plan", "round": state.get("round", 0), "calls": state.get("plan") or []}
    decision = checked(interrupt(asked), run_of(runtime).services.executor.catalog)

    async def body(state: ResearchState, run: Run) -> Step:
        return await _review(state, run, decision)

    update = await timed("review", state, runtime, body)
    return Command(update=update, goto="execute" if update.get("plan") else "__end__")


async def _review(state: ResearchState, run: Run, decision: ReviewDecision) -> Step:
    round_no = state["round"]
    if decision.action == "edit":
        calls, _ = fresh_calls(state, run.ctx.options, decision.calls)
    else:
        calls = [ToolCall.model_validate(c) for c in state.get("plan") or []]
    tools = run.scope.tools
    pinned: dict[str, dict[str, Any]] = {}
    for doc_id in dict.fromkeys(decision.pin):
        records = await engine_call(
            tools.store, "get_document", tools.store.get_document, doc_id, tools.flt
        )
        for rank, record in enumerate(records, 1):
            evidence = evidence_from_record(record, score=1.0)
            evidence.provenance = [
                Provenance(
                    round=round_no, tool="review", query=f"pinned by {decision.by}", rank=rank
                )
            ]
            item = evidence.model_dump(mode="json")
            if not excluded(item, decision.exclude):
                pinned[evidence.id] = item
    if decision.action == "edit":
        run.services.executor.embed_ahead(calls, tools)
    run.emit(
        "plan",
        node="review",
        round=round_no,
        calls=[{"tool": c.tool, "args": c.args, "reason": c.reason} for c in calls],
        reviewed={
            "by": decision.by,
            "action": decision.action,
            "pin": decision.pin,
            "pinned": sorted(pinned),
            "exclude": decision.exclude,
        },
    )
    update: dict[str, Any] = {
        "plan": [c.model_dump() for c in calls],
        "excluded": decision.exclude,
        "pool": pinned,
    }
    return Step(update, {"action": decision.action, "calls": len(calls), "pinned": len(pinned)})
