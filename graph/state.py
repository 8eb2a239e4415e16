"""The typed state of one research run and its reducers.

Everything here is JSON-native (evidence as dicts) so the checkpointer can persist it with
any serializer and a resumed run reads exactly what was written.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict


def merge_pool(
    left: dict[str, dict[str, Any]], right: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Deduplicate evidence by id; an item found again keeps every provenance entry."""
    merged = dict(left or {})
    for eid, item in (right or {}).items():
        if eid not in merged:
            merged[eid] = item
            continue
        old = merged[eid]
        seen = {(p["round"], p["tool"], p["query"]) for p in old.get("provenance", [])}
        extra = [
            p for p in item.get("provenance", []) if (p["round"], p["tool"], p["query"]) not in seen
        ]
        merged[eid] = {
            **old,
            "score": max(old.get("score", 0.0), item.get("score", 0.0)),
            "provenance": [*old.get("provenance", []), *extra],
        }
    return merged


def add_unique(left: list[str], right: list[str]) -> list[str]:
    out = list(left or [])
    out.extend(x for x in (right or []) if x not in out)
    return out


class InputState(TypedDict):
    run_id: str
    question: str
    caller: dict[str, Any]  # graph.models.Caller, dumped
    options: dict[str, Any]  # graph.models.RunOptions, dumped


class OutputState(TypedDict):
    result: dict[str, Any]  # graph.models.ResearchResult, dumped


class ResearchState(InputState, total=False):
    round: int  # the round being planned / executed (1-based)
    plan: list[dict[str, Any]]  # ToolCall dumps of the current round
    outcomes: list[dict[str, Any]]  # this round's call outcomes (evidence ids, errors)
    done_calls: Annotated[list[str], add_unique]  # ToolCall.key() of every call made
    pool: Annotated[dict[str, dict[str, Any]], merge_pool]  # evidence id -> Evidence dump
    round_ranking: list[dict[str, Any]]  # fused order of this round: [{id, score}]
    ranking: list[dict[str, Any]]  # the whole pool ranked for the question: [{id, score}]
    verdicts: Annotated[list[dict[str, Any]], operator.add]
    next_calls: list[dict[str, Any]]  # proposed by assess for the next round
    policy_state: dict[str, Any]  # the policy's own scratch (e.g. a decomposition chain)
    tool_calls: int
    tokens: int
    elapsed_s: Annotated[float, operator.add]  # wall time spent in nodes (resume-safe)
    warnings: Annotated[list[str], add_unique]
    bound_hit: str | None
    trace: Annotated[list[dict[str, Any]], operator.add]  # one summary per node run
    result: dict[str, Any]
