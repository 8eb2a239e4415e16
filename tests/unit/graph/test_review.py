"""Human review of the first plan (LangGraph ``interrupt`` / ``Command(resume=...)``): the
run pauses with the proposed calls, and goes on as approved, edited, with documents pinned
into the pool or sources and documents excluded from it; an invalid decision leaves it
paused; a paused run survives a new process (a fresh Researcher on the same files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graph.models import Caller, ResearchResult, RunOptions, TraceEvent
from graph.review import InvalidReview
from graph.runner import Researcher, ReviewRequired
from tools.testing import LEDGER_QUESTION, ledger_corpus, memory_search


def researcher(tmp_path: Path) -> Researcher:
    return Researcher(
        ledger_corpus(), checkpointer_path=tmp_path / "runs.sqlite", search_fn=memory_search
    )


async def paused(r: Researcher, run_id: str) -> dict[str, Any]:
    with pytest.raises(ReviewRequired) as stop:
        await r.run(LEDGER_QUESTION, Caller(user="ana"), RunOptions(), run_id, review=["plan"])
    assert r.list_runs("ana")[0]["status"] == "input_required"
    assert not any(e.type == "tool_call" for e in r.get_trace(run_id))  # nothing ran yet
    return stop.value.asked


async def pool_of(r: Researcher, run_id: str) -> dict[str, Any]:
    state = await (await r._graph()).aget_state({"configurable": {"thread_id": run_id}})
    return dict(state.values["pool"])


async def test_an_approved_plan_runs_as_a_run_without_review(tmp_path: Path) -> None:
    r = researcher(tmp_path)
    try:
        plain = await r.run(LEDGER_QUESTION, Caller(user="ana"), RunOptions(), "plain")
        asked = await paused(r, "run-1")
        assert asked["point"] == "plan" and asked["round"] == 1 and asked["calls"]
        result = await r.resume("run-1", decision={"action": "approve", "by": "ana"})
        trace = r.get_trace("run-1")
        assert r.get_result("run-1") == result
    finally:
        await r.aclose()
    assert result.answer == plain.answer and result.rounds == plain.rounds
    reviewed = next(e for e in trace if e.type == "plan" and e.node == "review")
    assert reviewed.data["reviewed"]["by"] == "ana"
    assert reviewed.data["calls"] == next(e for e in trace if e.type == "plan").data["calls"]


async def test_an_edited_plan_runs_the_reviewers_calls(tmp_path: Path) -> None:
    r = researcher(tmp_path)
    calls = [{"tool": "search_knowledge", "args": {"query": "cafeteria opening hours"}}]
    try:
        await paused(r, "run-1")
        await r.resume("run-1", decision={"action": "edit", "calls": calls, "by": "ana"})
        trace = r.get_trace("run-1")
    finally:
        await r.aclose()
    round_one = [e.data["args"] for e in trace if e.type == "tool_call" and e.round == 1]
    assert round_one == [{"query": "cafeteria opening hours"}]


async def test_pinned_documents_enter_the_pool_and_excluded_ones_never_do(
    tmp_path: Path,
) -> None:
    r = researcher(tmp_path)
    try:
        await paused(r, "pin")
        await r.resume("pin", decision={"pin": ["wiki:noise"], "by": "ana"})
        pinned = await pool_of(r, "pin")
        await paused(r, "exclude")
        result: ResearchResult = await r.resume(
            "exclude", decision={"exclude": ["wiki:dana"], "by": "ana"}
        )
        kept = await pool_of(r, "exclude")
    finally:
        await r.aclose()
    assert pinned["wiki:noise#0"]["provenance"][0]["tool"] == "review"  # pinned first
    assert not any(item["doc_id"] == "wiki:dana" for item in kept.values())
    assert "wiki:dana" not in {e.doc_id for e in result.evidence}


async def test_an_invalid_decision_leaves_the_run_paused_across_a_restart(
    tmp_path: Path,
) -> None:
    r = researcher(tmp_path)
    try:
        await paused(r, "run-1")
        for bad in (
            {"action": "edit", "calls": [{"tool": "rm_rf", "args": {}}]},
            {"action": "edit"},
            {"action": "approve", "calls": [{"tool": "search_knowledge"}]},
            {"action": "maybe"},
        ):
            with pytest.raises(InvalidReview):
                await r.resume("run-1", decision=bad)
        assert r.list_runs("ana")[0]["status"] == "input_required"
    finally:
        r.close()
    restarted = researcher(tmp_path)  # a new process: the pause is in the checkpoint
    events: list[TraceEvent] = []

    async def collect(e: TraceEvent) -> None:
        events.append(e)

    try:
        with pytest.raises(ReviewRequired):  # resumed without a decision: still paused
            await restarted.resume("run-1")
        result = await restarted.resume(
            "run-1", on_event=collect, decision={"action": "approve", "by": "ana"}
        )
    finally:
        await restarted.aclose()
    assert result.answerable
    assert events[0].data["review"]["by"] == "ana"  # the resume says who decided
