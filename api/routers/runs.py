"""Inspection of runs: the caller's runs and one run's full trace."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter

from api.deps import PrincipalDep, Services, ServicesDep
from api.errors import error_responses, not_found
from api.schemas import NodeSpan, RoundView, RunList, RunSummary, RunTrace
from graph.models import ResearchResult, TraceEvent

router = APIRouter(prefix="/v1/runs", tags=["runs"])
_ERRORS = error_responses(401, 404)


def _graph_runs(services: Services, user: str) -> list[RunSummary]:
    """Runs the research layer knows for this user (e.g. from the CLI)."""
    list_runs = getattr(services.researcher, "list_runs", None)
    if list_runs is None:
        return []
    out = []
    for r in list_runs(user):
        created = r.get("created") or r.get("created_at") or 0.0
        out.append(
            RunSummary(
                run_id=r["run_id"],
                question=r.get("question", ""),
                kind="cli",
                status=r.get("status", "unknown"),
                created_at=created
                if isinstance(created, datetime)
                else datetime.fromtimestamp(float(created), UTC),
            )
        )
    return out


def _owned_run(services: Services, run_id: str, user: str) -> RunSummary:
    run = services.tasks.get_run(run_id, user)
    if run is not None:
        return run
    for r in _graph_runs(services, user):
        if r.run_id == run_id:
            return r
    raise not_found("run")


@router.get("", response_model=RunList, operation_id="list_runs", responses=_ERRORS)
def list_runs(principal: PrincipalDep, services: ServicesDep) -> RunList:
    """The caller's runs (answers, tasks, and CLI runs under the same user), newest first."""
    mine = services.tasks.list_runs(principal.user)
    known = {r.run_id for r in mine}
    extra = [r for r in _graph_runs(services, principal.user) if r.run_id not in known]
    items = sorted([*mine, *extra], key=lambda r: r.created_at, reverse=True)
    return RunList(items=items[:200])


@router.get("/{run_id}", response_model=RunSummary, operation_id="get_run", responses=_ERRORS)
def get_run(run_id: str, principal: PrincipalDep, services: ServicesDep) -> RunSummary:
    return _owned_run(services, run_id, principal.user)


@router.get(
    "/{run_id}/trace", response_model=RunTrace, operation_id="get_run_trace", responses=_ERRORS
)
def get_run_trace(run_id: str, principal: PrincipalDep, services: ServicesDep) -> RunTrace:
    """Every node, event and round of one run: queries, each leg's ranked list, fused and
    reranked order, what entered the pool, the verdicts, timings."""
    run = _owned_run(services, run_id, principal.user)
    events: list[TraceEvent] = list(services.researcher.get_trace(run_id))
    result: ResearchResult | None = None
    get_result = getattr(services.researcher, "get_result", None)
    if get_result is not None:
        result = get_result(run_id)
    return RunTrace(
        run=run, nodes=_nodes(events), rounds=_rounds(events), events=events, result=result
    )


def _nodes(events: list[TraceEvent]) -> list[NodeSpan]:
    spans: list[NodeSpan] = []
    open_spans: dict[str, NodeSpan] = {}
    for e in events:
        if e.type == "node_start" and e.node:
            started = NodeSpan(node=e.node, round=e.round, start=e.ts)
            open_spans[e.node] = started
            spans.append(started)
        elif e.type == "node_end" and e.node:
            span = open_spans.pop(e.node, None) or NodeSpan(node=e.node, round=e.round, start=e.ts)
            if not any(s is span for s in spans):
                spans.append(span)  # an end without a start (e.g. across a resume)
            span.end = e.ts
            reported = e.data.get("duration_ms") or e.data.get("elapsed_ms")
            span.duration_ms = (
                float(reported)
                if isinstance(reported, int | float)
                else round((e.ts - span.start) * 1000, 3)
            )
    return spans


_ROUND_FIELDS = {
    "plan": "plan",
    "tool_call": "tool_calls",
    "tool_result": "tool_results",
    "evidence": "evidence",
    "round": "verdicts",
}


def _rounds(events: list[TraceEvent]) -> list[RoundView]:
    by_round: dict[int, RoundView] = {}
    for e in events:
        attr = _ROUND_FIELDS.get(e.type)
        if attr is None:
            continue
        view = by_round.setdefault(e.round, RoundView(round=e.round))
        getattr(view, attr).append({"seq": e.seq, "node": e.node, **e.data})
    return [by_round[r] for r in sorted(by_round)]
