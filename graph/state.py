"""The typed state of one research run: only what changes while it runs, with reducers.

The question, caller and options are the run's context (``graph.context``), not state.
Everything here is JSON-native (evidence as dicts) so any saver and serializer persist it
and a resumed run reads exactly what was written.

A round runs as a subgraph (``graph.builder``) whose output is written back into this
state: every reducer here is idempotent, so a round's whole output (the pool, verdicts,
calls and warnings it started with included) merges without duplicating anything.
"""

from __future__ import annotations

from typing import Annotated, Any

from typing_extensions import TypedDict


def merge_pool(
    left: dict[str, dict[str, Any]], right: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Deduplicate evidence by id; an item found again keeps every provenance entry, and
    the widest read of its text."""
    merged = dict(left or {})
    for eid, item in (right or {}).items():
        old = merged.get(eid)
        if old is None:
            merged[eid] = item
            continue
        if item is old:
            continue
        seen = {(p["round"], p["tool"], p["query"]) for p in old.get("provenance", [])}
        extra = [
            p for p in item.get("provenance", []) if (p["round"], p["tool"], p["query"]) not in seen
        ]
        score = max(old.get("score", 0.0), item.get("score", 0.0))
        read = wider_read(old, item)
        if not extra and score == old.get("score", 0.0) and not read:
            continue  # nothing new: the same dict stays (its validated Evidence with it)
        merged[eid] = {
            **old,
            **read,
            "score": score,
            "provenance": [*old.get("provenance", []), *extra],
        }
    return merged


def wider_read(old: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """The text and locator of ``item`` when it reads the same chunk further than ``old``
    (a lookup reads an entry a chunk boundary cut to its end; a search hit of the chunk
    does not), else nothing."""
    text, wider = old.get("text", ""), item.get("text", "")
    if len(wider) > len(text) and wider.startswith(text):
        return {"text": wider, "locator": item.get("locator")}
    return {}


def add_unique(left: list[str], right: list[str]) -> list[str]:
    out = list(left or [])
    out.extend(x for x in (right or []) if x not in out)
    return out


def by_round(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One verdict per round, in round order; a round's verdict written again replaces it."""
    rounds = {v["round"]: v for v in [*(left or []), *(right or [])]}
    return [rounds[r] for r in sorted(rounds)]


def excluded(item: dict[str, Any], exclude: list[str]) -> bool:
    """Whether a pool item (an Evidence dump) comes from an excluded source or document."""
    return item.get("source") in exclude or item.get("doc_id") in exclude


class ResearchState(TypedDict, total=False):
    round: int  # the round being planned / executed (1-based)
    plan: list[dict[str, Any]]  # ToolCall dumps of the current round
    outcomes: list[dict[str, Any]]  # this round's call outcomes, until fuse pools them
    done_calls: Annotated[list[str], add_unique]  # ToolCall.key() of every call made
    pool: Annotated[dict[str, dict[str, Any]], merge_pool]  # evidence id -> Evidence dump
    round_ranking: list[dict[str, Any]]  # fused order of this round: [{id, score}]
    ranking: list[dict[str, Any]]  # the whole pool ranked for the question: [{id, score}]
    verdicts: Annotated[list[dict[str, Any]], by_round]
    next_calls: list[dict[str, Any]]  # proposed by assess for the next round
    policy_state: dict[str, Any]  # the policy's own scratch (e.g. a decomposition chain)
    tool_calls: int
    tokens: int
    elapsed_s: float  # wall time spent in nodes so far (resume-safe)
    warnings: Annotated[list[str], add_unique]
    excluded: Annotated[list[str], add_unique]  # sources and documents a reviewer excluded
    bound_hit: str | None
    result: dict[str, Any]  # graph.models.ResearchResult, dumped


class OutputState(TypedDict):
    result: dict[str, Any]
