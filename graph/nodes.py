"""The nodes of the loop: plan -> execute -> fuse -> rerank -> assess -> (plan | synthesize).

Each node is ``async def node(state, runtime)`` returning a partial update; ``traced``
adds the start/end events, the duration and the node's trace summary around it. The two
nodes that branch (plan, assess) return a ``Command`` whose ``goto`` their router decides
from the state and the node's own update: routing is part of the node's step, not a
separate runnable LangGraph invokes (with its own callbacks) after every such step.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal, cast

from langgraph.runtime import Runtime
from langgraph.types import Command

from graph.claims import check_answer
from graph.context import RunContext
from graph.extractive import CANNOT_ANSWER, NO_SUPPORTED_CLAIM, extractive_answer
from graph.models import BoundName, RunOptions
from graph.policies.base import View
from graph.state import ResearchState
from retrieval.fusion import rrf_fuse
from retrieval.placement import engine_call
from tools.evidence import Evidence
from tools.executor import ToolCall

Node = Callable[[ResearchState, Runtime[RunContext]], Awaitable[dict[str, Any]]]
# A branching node's router: the next node, from the state and the node's update.
Router = Callable[[ResearchState, dict[str, Any]], str]
_TOP_IN_TRACE = 10


def traced(name: str, route: Router | None = None) -> Callable[[Node], Node]:
    def wrap(fn: Node) -> Node:
        @functools.wraps(fn)
        async def node(state: ResearchState, runtime: Runtime[RunContext]) -> Any:
            sink = runtime.context.sink
            round_no = state.get("round", 0) + (1 if name == "plan" else 0)
            await sink.emit("node_start", node=name, round=round_no)
            started = time.perf_counter()
            update = await fn(state, runtime)
            # plus work done for the node before it ran (round one planned ahead): the
            # wall-time budget and the trace count it where it belongs
            took = time.perf_counter() - started + update.pop("_ahead_s", 0.0)
            summary = update.pop("_summary", {})
            await sink.emit(
                "node_end", node=name, round=round_no, duration_ms=round(took * 1000, 1), **summary
            )
            sink.flush()  # the node's events, stored in one transaction
            update["elapsed_s"] = took
            # A write that changes nothing still gives its channel a new version, saved in
            # the step's writes and again in its checkpoint: no warnings, or the token count
            # as it was (no tokens spent), no write.
            if not update.get("warnings"):
                update.pop("warnings", None)
            if update.get("tokens") == state.get("tokens", 0):
                update.pop("tokens", None)
            update["trace"] = [
                {"node": name, "round": round_no, "ms": round(took * 1000, 1), **summary}
            ]
            if route is not None:
                return Command(update=update, goto=route(state, update))
            return update

        return node

    return wrap


def options_of(state: ResearchState) -> RunOptions:
    return RunOptions.model_validate(state["options"])


def pool_ranked(
    state: ResearchState, cache: dict[str, tuple[dict[str, Any], Evidence]] | None = None
) -> list[Evidence]:
    """The pool as Evidence, ranked; ``cache`` (the run context's) keeps each item validated
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


def view_of(state: ResearchState, ctx: RunContext, new_ids: list[str] | None = None) -> View:
    return View(
        question=state["question"],
        round=state.get("round", 0),
        options=options_of(state),
        ranked=pool_ranked(state, ctx.evidence),
        new_ids=new_ids or [],
        done_calls=set(state.get("done_calls") or []),
        policy_state=dict(state.get("policy_state") or {}),
        catalog=ctx.executor.catalog,
        titles=ctx.tools.title_index(),
        project=(state.get("caller") or {}).get("project"),
        scores={r["id"]: r["score"] for r in state.get("ranking") or []},
    )


def route_after_plan(
    state: ResearchState, update: dict[str, Any]
) -> Literal["execute", "synthesize"]:
    return "execute" if update.get("plan") else "synthesize"


@traced("plan", route=route_after_plan)
async def plan(state: ResearchState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    round_no = state.get("round", 0) + 1
    opts = options_of(state)
    update: dict[str, Any] = {"round": round_no, "next_calls": []}
    warnings: list[str] = []
    ahead: list[str] = []
    if round_no == 1:
        if ctx.first_plan is not None:
            step, update["_ahead_s"] = ctx.first_plan, ctx.first_plan_s
        else:
            step = await ctx.policy.plan(view_of(state, ctx))
        calls = step.calls
        ahead = step.embed
        update["policy_state"] = step.policy_state
        update["tokens"] = state.get("tokens", 0) + step.tokens
        warnings += step.warnings
    else:
        calls = [ToolCall.model_validate(c) for c in state.get("next_calls") or []]
    fresh, skipped = _fresh_calls(state, opts, calls)
    if skipped:
        update["bound_hit"] = "max_tool_calls"
        warnings.append(f"max_tool_calls ({opts.max_tool_calls}) reached: some calls were skipped")
    update["plan"] = [c.model_dump() for c in fresh]
    # The round's searches start embedding their queries now (no-op for those assess
    # started), while the step is saved.
    ctx.executor.embed_ahead(fresh, ctx.tools, also=ahead)
    update["warnings"] = warnings
    await ctx.sink.emit(
        "plan",
        node="plan",
        round=round_no,
        calls=[{"tool": c.tool, "args": c.args, "reason": c.reason} for c in fresh],
        planned_ahead=round_no == 1 and ctx.first_plan is not None,
    )
    update["_summary"] = {"calls": len(fresh)}
    return update


async def plan_ahead(ctx: RunContext, graph_input: dict[str, Any]) -> None:
    """Make round one's plan as a new run starts (``ctx.first_plan``, with what making it
    took), its searches' queries embedding already.

    Only for a policy that plans offline (its plan reads the view alone): the view is the
    one the plan node builds from the same input (an empty pool), so the plan is the one
    it would make, and the node uses it. Embedding is a round's long pole (~10 ms for two
    queries here); started now it runs while the run is recorded, LangGraph sets up and
    the first step is saved, instead of after (~2 ms later). A run killed before its first
    checkpoint resumes by planning in the node, to the same plan.
    """
    if not getattr(ctx.policy, "plans_offline", False):
        return
    started = time.perf_counter()
    state = cast(ResearchState, graph_input)  # what the plan node first reads (read only)
    step = await ctx.policy.plan(view_of(state, ctx))
    fresh, _ = _fresh_calls(state, options_of(state), step.calls)
    ctx.executor.embed_ahead(fresh, ctx.tools, also=step.embed)
    ctx.first_plan, ctx.first_plan_s = step, time.perf_counter() - started


def _fresh_calls(
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


@traced("execute")
async def execute(state: ResearchState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    round_no = state["round"]
    calls = [ToolCall.model_validate(c) for c in state.get("plan") or []]
    for c in calls:
        await ctx.sink.emit("tool_call", node="execute", round=round_no, tool=c.tool, args=c.args)
    outcomes = await ctx.executor.run(calls, ctx.tools, round_no)
    warnings: list[str] = []
    for o in outcomes:
        await ctx.sink.emit(
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
    return {
        # The state keeps what fuse needs; each call's detail (legs, timings) is in its
        # tool_result event, not re-saved with every checkpoint of the round.
        "outcomes": [o.model_dump(mode="json", exclude={"detail"}) for o in outcomes],
        "done_calls": [c.key() for c in calls],
        "tool_calls": state.get("tool_calls", 0) + len(calls),
        "warnings": warnings,
        "_summary": {"calls": len(calls), "failed": sum(not o.ok for o in outcomes)},
    }


@traced("fuse")
async def fuse(state: ResearchState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    # The outcomes are the JSON dumps execute wrote (CallOutcome, validated there): fused
    # as they are, not validated and dumped again.
    outcomes = state.get("outcomes") or []
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
                found[e["id"]] = {**first, "provenance": [*first["provenance"], *e["provenance"]]}
            else:
                found[e["id"]] = e
    before = state.get("pool") or {}
    entered = [f.id for f in fused if f.id not in before]
    await runtime.context.sink.emit(
        "evidence",
        node="fuse",
        round=state["round"],
        entered=[{"id": i, "title": found[i]["title"]} for i in entered],
        fused=[{"id": f.id, "score": round(f.score, 5)} for f in fused[:_TOP_IN_TRACE]],
        pool_size=len(set(before) | set(found)),
    )
    return {
        "pool": found,
        "outcomes": [],  # consumed: the pool holds the round's evidence now
        "round_ranking": [{"id": f.id, "score": f.score} for f in fused],
        "_summary": {"found": len(found), "entered": len(entered)},
    }


@traced("rerank")
async def rerank(state: ResearchState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    view = view_of(state, ctx)
    ranked = ctx.policy.rank(view)
    budget = view.options.budget
    old_top = [r["id"] for r in (state.get("ranking") or [])[:budget]]
    new_top = [i for i, _ in ranked[:budget]]
    await ctx.sink.emit(
        "evidence",
        node="rerank",
        round=state["round"],
        top=[{"id": i, "score": round(s, 4)} for i, s in ranked[:budget]],
        entered_top=[i for i in new_top if i not in old_top],
        left_top=[i for i in old_top if i not in new_top],
    )
    return {
        "ranking": [{"id": i, "score": s} for i, s in ranked],
        "_summary": {"pool": len(ranked)},
    }


def _bound(state: ResearchState, opts: RunOptions) -> BoundName | None:
    if state.get("round", 0) >= opts.max_rounds:
        return "max_rounds"
    if state.get("tool_calls", 0) >= opts.max_tool_calls:
        return "max_tool_calls"
    if state.get("elapsed_s", 0.0) >= opts.wall_time_s:
        return "wall_time"
    if state.get("tokens", 0) >= opts.max_tokens:
        return "max_tokens"
    return None


def route_after_assess(
    state: ResearchState, update: dict[str, Any]
) -> Literal["plan", "synthesize"]:
    verdict = update["verdicts"][-1]
    if verdict.get("decision") == "enough" or state.get("bound_hit") or update.get("bound_hit"):
        return "synthesize"
    return "plan" if update.get("next_calls") else "synthesize"


@traced("assess", route=route_after_assess)
async def assess(state: ResearchState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    opts = options_of(state)
    new_ids = [r["id"] for r in state.get("round_ranking") or []]
    step = await ctx.policy.assess(view_of(state, ctx, new_ids))
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
        bound = _bound({**state, "tokens": update["tokens"]}, opts)  # type: ignore[typeddict-item]
        if bound is not None:
            update["bound_hit"] = bound
            update["warnings"].append(
                f"stopped at bound {bound}: answering from the evidence gathered so far"
            )
    if verdict.decision != "enough" and bound is None and not state.get("bound_hit"):
        # The next round is decided: its searches start embedding their queries now, not
        # after this step is saved and the next one planned (plan runs exactly these).
        ctx.executor.embed_ahead(_fresh_calls(state, opts, verdict.next_calls)[0], ctx.tools)
    await ctx.sink.emit(
        "round",
        node="assess",
        round=state["round"],
        decision=verdict.decision,
        reason=verdict.reason,
        missing=verdict.missing,
        next_calls=[{"tool": c.tool, "args": c.args} for c in verdict.next_calls],
        bound_hit=bound,
    )
    update["_summary"] = {"decision": verdict.decision, "bound_hit": bound}
    return update


@traced("synthesize")
async def synthesize(state: ResearchState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    opts = options_of(state)
    question = state["question"]
    chosen = pool_ranked(state, ctx.evidence)[: opts.budget]
    # Permission is checked again here: nothing unauthorised reaches synthesis or a citation.
    store = ctx.tools.store
    allowed = await engine_call(
        store, "get_records", store.get_records, [e.id for e in chosen], ctx.tools.flt
    )
    allowed_ids = {r.id for r in allowed}
    warnings: list[str] = []
    if len(allowed_ids) < len(chosen):
        warnings.append(
            f"{len(chosen) - len(allowed_ids)} evidence item(s) failed the permission re-check"
        )
    evidence = [e for e in chosen if e.id in allowed_ids]

    async def on_token(delta: str) -> None:
        await ctx.sink.emit("token", node="synthesize", round=state.get("round", 0), text=delta)

    try:
        answer = await ctx.policy.synthesize(question, evidence, on_token)
    except Exception as exc:  # noqa: BLE001 - any policy failure falls back, and says so
        answer = extractive_answer(
            question, evidence, note=f"synthesis failed ({type(exc).__name__}): extractive answer"
        )
    if not answer.streamed:
        for line in answer.text.splitlines(keepends=True):
            await on_token(line)
    checked = check_answer(answer.text, evidence, allowed_ids, question)
    if answer.answerable and not answer.extractive and not any(c.supported for c in checked.claims):
        # An LLM answer none of whose claims its passages support is not an answer.
        answer = extractive_answer(
            question, evidence, note="no claim of the llm answer is supported: extractive answer"
        )
        checked = check_answer(answer.text, evidence, allowed_ids, question)
    if checked.removed_markers:
        warnings.append(
            f"removed {len(checked.removed_markers)} unresolvable citation(s): "
            + " ".join(checked.removed_markers)
        )
    dropped = [c for c in checked.claims if not c.supported]
    if dropped and answer.answerable:
        warnings.append(f"removed {len(dropped)} unsupported claim(s)")
    answerable = answer.answerable and any(c.supported for c in checked.claims)
    short = answer.short_answer if answerable else None
    if answerable:
        text = f"{short}\n\n{checked.text}" if short else checked.text
    else:
        text = answer.text if not answer.answerable else f"{CANNOT_ANSWER} {NO_SUPPORTED_CLAIM}"
    citations = checked.citations if answerable else []
    for c in citations:
        await ctx.sink.emit(
            "citation", node="synthesize", n=c.n, evidence_id=c.evidence_id, title=c.title
        )
    for claim in checked.claims if answer.answerable else []:
        await ctx.sink.emit("claim", node="synthesize", **claim.model_dump(mode="json"))
    all_warnings = [*(state.get("warnings") or []), *answer.warnings, *warnings]
    result = {
        "run_id": state["run_id"],
        "question": question,
        "mode": opts.mode,
        "short_answer": short,
        "answer": text,
        "answerable": answerable,
        "claims": [c.model_dump(mode="json") for c in checked.claims] if answer.answerable else [],
        "citations": [c.model_dump(mode="json") for c in citations],
        "evidence": [e.model_dump(mode="json") for e in evidence],
        "removed_citations": checked.removed_markers,
        "warnings": list(dict.fromkeys(all_warnings)),
        "bound_hit": state.get("bound_hit"),
        "rounds": state.get("round", 0),
        "tool_calls": state.get("tool_calls", 0),
        "usage": {
            "tokens": state.get("tokens", 0) + answer.tokens,
            "elapsed_s": round(state.get("elapsed_s", 0.0), 3),
            "pool_size": len(state.get("pool") or {}),
            "policy": ctx.policy.name,
        },
    }
    await ctx.sink.emit(
        "done",
        node="synthesize",
        round=state.get("round", 0),
        answerable=answerable,
        short_answer=short,
        bound_hit=state.get("bound_hit"),
        citations=len(citations),
        warnings=result["warnings"],
    )
    return {
        "result": result,
        "warnings": answer.warnings + warnings,
        "_summary": {"evidence": len(evidence), "citations": len(citations)},
    }
