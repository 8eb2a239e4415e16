"""The nodes of one research round (``graph.builder``): plan -> execute -> fuse -> rerank
-> assess; the answer's node is ``graph.synthesis``, a person's review ``graph.review``.

Each node is ``async def node(state, runtime)``: what it was asked (question, caller,
options) is ``runtime.context``; the live objects it uses come from the registry
(:func:`run_of`); its trace events go to LangGraph's ``custom`` stream. :func:`timed`
puts the node_start/node_end events and the node's wall time around its body, a
:class:`Step` (the state update and what the trace says of it).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, StreamWriter

from graph.context import RunContext
from graph.events import emit
from graph.models import BoundName, EventType, RunOptions
from graph.policies.base import View
from graph.resources import REGISTRY, RunScope, Services
from graph.state import ResearchState, excluded, wider_read
from retrieval.fusion import rrf_fuse
from tools.evidence import Evidence
from tools.executor import ToolCall

_TOP_IN_TRACE = 10


@dataclass
class Run:
    """What a node works with: the run's context, services and scope, and its stream."""

    ctx: RunContext
    services: Services
    scope: RunScope
    run_id: str
    write: StreamWriter

    def emit(self, type: EventType, node: str | None = None, round: int = 0, **data: Any) -> None:
        self.scope.emitted += 1
        emit(self.write, type, node=node, round=round, **data)


def run_of(runtime: Runtime[RunContext]) -> Run:
    ctx = runtime.context
    info = runtime.execution_info
    run_id = ctx.run_id or (info.thread_id if info is not None and info.thread_id else "")
    return Run(
        ctx=ctx,
        services=REGISTRY.services(ctx),
        scope=REGISTRY.run_scope(run_id, ctx),
        run_id=run_id,
        write=runtime.stream_writer,
    )


@dataclass
class Step:
    update: dict[str, Any]
    summary: dict[str, Any] = field(default_factory=dict)  # the node_end event's data
    ahead_s: float = 0.0  # the node's work done before it ran (round one planned ahead)


Body = Callable[[ResearchState, Run], Awaitable[Step]]


async def timed(
    name: str, state: ResearchState, runtime: Runtime[RunContext], body: Body
) -> dict[str, Any]:
    run = run_of(runtime)
    round_no = state.get("round", 0) + (1 if name == "plan" else 0)
    run.emit("node_start", node=name, round=round_no)
    await run.scope.delivered()
    started = time.perf_counter()
    step = await body(state, run)
    # the wall-time budget and the trace count work done ahead where it belongs
    took = time.perf_counter() - started + step.ahead_s
    run.emit(
        "node_end", node=name, round=round_no, duration_ms=round(took * 1000, 1), **step.summary
    )
    # A round is a subgraph, which checkpoints this update on its own: the consumer (a task
    # stores each event) must have handled the node's events first, or a process killed
    # in between resumes past events it never stored.
    await run.scope.delivered()
    update = step.update
    update["elapsed_s"] = state.get("elapsed_s", 0.0) + took
    # A write that changes nothing still versions its channel: no warnings, or the token
    # count as it was, no write.
    if not update.get("warnings"):
        update.pop("warnings", None)
    if update.get("tokens") == state.get("tokens", 0):
        update.pop("tokens", None)
    return update


def pool_ranked(
    state: ResearchState, cache: dict[str, tuple[dict[str, Any], Evidence]] | None = None
) -> list[Evidence]:
    """The pool as Evidence, ranked; ``cache`` (the run scope's) keeps each item validated
    once while the state holds the same dict for it."""
    pool = state.get("pool") or {}
    order = [r["id"] for r in state.get("ranking") or [] if r["id"] in pool]
    rest = sorted(set(pool) - set(order))
    out = []
    for i in [*order, *rest]:
        item = pool[i]
        hit = cache.get(i) if cache is not None else None
        if hit is not None and hit[0] is item:
            out.append(hit[1])
            continue
        evidence = Evidence.model_validate(item)
        if cache is not None:
            cache[i] = (item, evidence)
        out.append(evidence)
    return out


def view_of(state: ResearchState, run: Run, new_ids: list[str] | None = None) -> View:
    return View(
        question=run.ctx.question,
        round=state.get("round", 0),
        options=run.ctx.options,
        ranked=pool_ranked(state, run.scope.evidence),
        new_ids=new_ids or [],
        done_calls=set(state.get("done_calls") or []),
        policy_state=dict(state.get("policy_state") or {}),
        catalog=run.services.executor.catalog,
        titles=run.scope.tools.title_index(),
        project=run.ctx.caller.project,
        scores={r["id"]: r["score"] for r in state.get("ranking") or []},
    )


# -- routers --


def route_after_plan(
    update: dict[str, Any], review: bool = False
) -> Literal["review", "execute", "__end__"]:
    """A round with calls to make runs them (after a person's review, when the run asks
    for one); one with none ends (synthesis follows)."""
    if not update.get("plan"):
        return "__end__"
    return "review" if review else "execute"


def route_after_round(state: ResearchState) -> Literal["round", "synthesize"]:
    """Another round when the last one planned calls, its verdict asks for more, no bound
    was hit and it proposed calls; else the answer."""
    if not state.get("plan") or state.get("bound_hit"):
        return "synthesize"
    verdicts = state.get("verdicts") or []
    if not verdicts or verdicts[-1].get("decision") == "enough":
        return "synthesize"
    return "round" if state.get("next_calls") else "synthesize"


# -- one round --


async def plan(
    state: ResearchState, runtime: Runtime[RunContext]
) -> Command[Literal["review", "execute", "__end__"]]:
    update = await timed("plan", state, runtime, _plan)
    reviewed = "plan" in runtime.context.review and update.get("round") == 1
    return Command(update=update, goto=route_after_plan(update, reviewed))


async def _plan(state: ResearchState, run: Run) -> Step:
    round_no = state.get("round", 0) + 1
    opts = run.ctx.options
    update: dict[str, Any] = {"round": round_no, "next_calls": []}
    warnings: list[str] = []
    ahead: list[str] = []
    ahead_s = 0.0
    planned_ahead = round_no == 1 and run.scope.first_plan is not None
    if round_no == 1:
        if run.scope.first_plan is not None:
            step, ahead_s = run.scope.first_plan, run.scope.first_plan_s
        else:
            step = await run.services.policy.plan(view_of(state, run))
        calls = step.calls
        ahead = step.embed
        update["policy_state"] = step.policy_state
        update["tokens"] = state.get("tokens", 0) + step.tokens
        warnings += step.warnings
    else:
        calls = [ToolCall.model_validate(c) for c in state.get("next_calls") or []]
    fresh, skipped = fresh_calls(state, opts, calls)
    if skipped:
        update["bound_hit"] = "max_tool_calls"
        warnings.append(f"max_tool_calls ({opts.max_tool_calls}) reached: some calls were skipped")
    update["plan"] = [c.model_dump() for c in fresh]
    # The round's searches start embedding their queries now (no-op for those assess
    # started), while the step is saved.
    run.services.executor.embed_ahead(fresh, run.scope.tools, also=ahead)
    update["warnings"] = warnings
    run.emit(
        "plan",
        node="plan",
        round=round_no,
        calls=[{"tool": c.tool, "args": c.args, "reason": c.reason} for c in fresh],
        planned_ahead=planned_ahead,
    )
    return Step(update, {"calls": len(fresh)}, ahead_s)


async def plan_ahead(run: Run) -> None:
    """Make round one's plan as a new run starts (``run.scope.first_plan``, with what
    making it took), its searches' queries embedding already.

    Only for a policy that plans offline (its plan reads the view alone): the view is the
    one the plan node builds for a new run (an empty pool), so the plan is the one it
    would make, and the node uses it. Started now, the embedding runs while the run is
    recorded and LangGraph sets up. A run killed before its first checkpoint resumes by
    planning in the node, to the same plan.
    """
    policy = run.services.policy
    if not getattr(policy, "plans_offline", False):
        return
    started = time.perf_counter()
    empty: ResearchState = {}
    step = await policy.plan(view_of(empty, run))
    fresh, _ = fresh_calls(empty, run.ctx.options, step.calls)
    run.services.executor.embed_ahead(fresh, run.scope.tools, also=step.embed)
    run.scope.first_plan, run.scope.first_plan_s = step, time.perf_counter() - started


def fresh_calls(
    state: ResearchState, opts: RunOptions, calls: list[ToolCall]
) -> tuple[list[ToolCall], bool]:
    """The calls a round runs: not made before, no repeats, within max_tool_calls (and
    whether some were cut for it)."""
    done = set(state.get("done_calls") or [])
    fresh: list[ToolCall] = []
    for call in calls:
        if call.key() not in done and call.key() not in {c.key() for c in fresh}:
            fresh.append(call)
    remaining = opts.max_tool_calls - state.get("tool_calls", 0)
    if len(fresh) > remaining:
        return fresh[: max(remaining, 0)], True
    return fresh, False


async def execute(state: ResearchState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    return await timed("execute", state, runtime, _execute)


async def _execute(state: ResearchState, run: Run) -> Step:
    round_no = state["round"]
    calls = [ToolCall.model_validate(c) for c in state.get("plan") or []]
    for c in calls:
        run.emit("tool_call", node="execute", round=round_no, tool=c.tool, args=c.args)
    outcomes = await run.services.executor.run(calls, run.scope.tools, round_no)
    warnings: list[str] = []
    for o in outcomes:
        run.emit(
            "tool_result",
            node="execute",
            round=round_no,
            tool=o.call.tool,
            query=o.call.query,
            ok=o.ok,
            error=o.error,
            attempts=o.attempts,
            duration_ms=round(o.duration_ms, 1),
            results=[{"id": e.id, "title": e.title, "score": e.score} for e in o.evidence],
            detail=o.detail,
        )
        if not o.ok:
            warnings.append(f"degraded leg: {o.call.tool}({o.call.query!r}) failed: {o.error}")
        warnings += [f"{o.call.tool}: {w}" for w in o.warnings]
    update = {
        # The state keeps what fuse needs; each call's detail (legs, timings) is in its
        # tool_result event, not in the checkpoints.
        "outcomes": [o.model_dump(mode="json", exclude={"detail"}) for o in outcomes],
        "done_calls": [c.key() for c in calls],
        "tool_calls": state.get("tool_calls", 0) + len(calls),
        "warnings": warnings,
    }
    return Step(update, {"calls": len(calls), "failed": sum(not o.ok for o in outcomes)})


async def fuse(state: ResearchState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    return await timed("fuse", state, runtime, _fuse)


async def _fuse(state: ResearchState, run: Run) -> Step:
    # The outcomes are the JSON dumps execute wrote (CallOutcome, validated there): fused
    # as they are, not validated and dumped again.
    exclude = state.get("excluded") or []
    outcomes = [
        {**o, "evidence": [e for e in o["evidence"] if not excluded(e, exclude)]}
        for o in state.get("outcomes") or []
    ]
    rankings = {
        f"{i}:{o['call']['tool']}:{ToolCall.model_validate(o['call']).query}": [
            e["id"] for e in o["evidence"]
        ]
        for i, o in enumerate(outcomes)
        if o["ok"]
    }
    fused = rrf_fuse(rankings)
    found: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        for e in o["evidence"]:
            if e["id"] in found:  # the same passage from two calls of this round
                first = found[e["id"]]
                found[e["id"]] = {
                    **first,
                    **wider_read(first, e),
                    "provenance": [*first["provenance"], *e["provenance"]],
                }
            else:
                found[e["id"]] = e
    before = state.get("pool") or {}
    entered = [f.id for f in fused if f.id not in before]
    run.emit(
        "evidence",
        node="fuse",
        round=state["round"],
        entered=[{"id": i, "title": found[i]["title"]} for i in entered],
        fused=[{"id": f.id, "score": round(f.score, 5)} for f in fused[:_TOP_IN_TRACE]],
        pool_size=len(set(before) | set(found)),
    )
    update = {
        "pool": found,
        "outcomes": [],  # consumed: the pool holds the round's evidence now
        "round_ranking": [{"id": f.id, "score": f.score} for f in fused],
    }
    return Step(update, {"found": len(found), "entered": len(entered)})


async def rerank(state: ResearchState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    return await timed("rerank", state, runtime, _rerank)


async def _rerank(state: ResearchState, run: Run) -> Step:
    view = view_of(state, run)
    ranked = run.services.policy.rank(view)
    budget = view.options.budget
    old_top = [r["id"] for r in (state.get("ranking") or [])[:budget]]
    new_top = [i for i, _ in ranked[:budget]]
    run.emit(
        "evidence",
        node="rerank",
        round=state["round"],
        top=[{"id": i, "score": round(s, 4)} for i, s in ranked[:budget]],
        entered_top=[i for i in new_top if i not in old_top],
        left_top=[i for i in old_top if i not in new_top],
    )
    return Step({"ranking": [{"id": i, "score": s} for i, s in ranked]}, {"pool": len(ranked)})


def _bound(state: ResearchState, opts: RunOptions, tokens: int) -> BoundName | None:
    if state.get("round", 0) >= opts.max_rounds:
        return "max_rounds"
    if state.get("tool_calls", 0) >= opts.max_tool_calls:
        return "max_tool_calls"
    if state.get("elapsed_s", 0.0) >= opts.wall_time_s:
        return "wall_time"
    if tokens >= opts.max_tokens:
        return "max_tokens"
    return None


async def assess(state: ResearchState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    return await timed("assess", state, runtime, _assess)


async def _assess(state: ResearchState, run: Run) -> Step:
    opts = run.ctx.options
    new_ids = [r["id"] for r in state.get("round_ranking") or []]
    step = await run.services.policy.assess(view_of(state, run, new_ids))
    verdict = step.verdict
    update: dict[str, Any] = {
        "verdicts": [{"round": state["round"], **verdict.model_dump(mode="json")}],
        "next_calls": [c.model_dump() for c in verdict.next_calls],
        "tokens": state.get("tokens", 0) + step.tokens,
        "warnings": list(step.warnings),
    }
    if step.policy_state:
        update["policy_state"] = step.policy_state
    bound = None
    if verdict.decision != "enough":
        bound = _bound(state, opts, update["tokens"])
        if bound is not None:
            update["bound_hit"] = bound
            update["warnings"].append(
                f"stopped at bound {bound}: answering from the evidence gathered so far"
            )
    if verdict.decision != "enough" and bound is None and not state.get("bound_hit"):
        # The next round is decided: its searches start embedding their queries now, not
        # after this step is saved and the next one planned (plan runs exactly these).
        run.services.executor.embed_ahead(
            fresh_calls(state, opts, verdict.next_calls)[0], run.scope.tools
        )
    run.emit(
        "round",
        node="assess",
        round=state["round"],
        decision=verdict.decision,
        reason=verdict.reason,
        missing=verdict.missing,
        next_calls=[{"tool": c.tool, "args": c.args} for c in verdict.next_calls],
        bound_hit=bound,
    )
    return Step(update, {"decision": verdict.decision, "bound_hit": bound})
