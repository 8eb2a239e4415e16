"""Tool calls in the metrics: outcome per tool (ok, partial, degraded; a made-up tool name
labelled unknown), and a search's stage latencies."""

from __future__ import annotations

from prometheus_client import REGISTRY
from pydantic import BaseModel

from tools.catalog import Catalog, ToolOutput, ToolSpec
from tools.context import ToolContext
from tools.executor import ToolCall, ToolExecutor
from tools.testing import ledger_corpus


class _Args(BaseModel):
    query: str


async def _fine(ctx: ToolContext, args: _Args) -> ToolOutput:
    return ToolOutput(evidence=[], detail={"timings_ms": {"lexical": 3.0, "total": 9.0}})


async def _half(ctx: ToolContext, args: _Args) -> ToolOutput:
    return ToolOutput(evidence=[], warnings=["dense leg failed: ConnectionError"])


async def _broken(ctx: ToolContext, args: _Args) -> ToolOutput:
    raise ValueError("engine exploded")


def _calls(tool: str, outcome: str) -> float:
    return (
        REGISTRY.get_sample_value("waypoint_tool_calls_total", {"tool": tool, "outcome": outcome})
        or 0.0
    )


def _stage_count(stage: str) -> float:
    return REGISTRY.get_sample_value("waypoint_search_stage_seconds_count", {"stage": stage}) or 0.0


async def test_each_call_is_counted_by_tool_and_outcome_with_its_stage_latencies() -> None:
    catalog = Catalog(
        [
            ToolSpec("fine_tool", "ok", _Args, _fine),
            ToolSpec("half_tool", "a leg fails", _Args, _half),
            ToolSpec("broken_tool", "fails", _Args, _broken),
        ]
    )
    keys = [
        ("fine_tool", "ok"),
        ("half_tool", "partial"),
        ("broken_tool", "degraded"),
        ("unknown", "degraded"),
    ]
    before = [_calls(*k) for k in keys] + [_stage_count("lexical"), _stage_count("total")]
    calls = [ToolCall(tool=name, args={"query": "q"}) for name, _ in keys[:3]]
    calls.append(ToolCall(tool="made_up_by_the_planner", args={"query": "q"}))
    ctx = ToolContext.for_caller(ledger_corpus(), [])
    outcomes = await ToolExecutor(catalog, max_retries=0).run(calls, ctx, 1)
    assert [o.ok for o in outcomes] == [True, True, False, False]
    after = [_calls(*k) for k in keys] + [_stage_count("lexical"), _stage_count("total")]
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1, 1, 1, 1, 1]
