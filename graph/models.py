"""Public models of a research run: who asks, with which options, and what comes back.

The API layer and the evaluation runner depend on these; keep them stable.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from retrieval.search_models import Locator
from tools.evidence import Evidence

BoundName = Literal["max_rounds", "max_tool_calls", "wall_time", "max_tokens"]


class Caller(BaseModel):
    """The principal a run acts for: its groups become the ACL of every retrieval."""

    user: str = "local"
    groups: list[str] = Field(default_factory=list)
    project: str | None = None


class RunOptions(BaseModel):
    """Per-run options (apart from infrastructure settings)."""

    mode: Literal["hybrid", "iterative"] = "iterative"
    max_rounds: int = Field(default=4, ge=1, le=10)
    max_tool_calls: int = Field(default=24, ge=1, le=200)
    wall_time_s: float = Field(default=120.0, gt=0, le=3_600, allow_inf_nan=False)
    max_tokens: int = Field(default=20_000, ge=100, le=1_000_000)
    budget: int = Field(default=10, ge=1, le=100)  # evidence items handed to synthesis
    k: int = Field(default=10, ge=1, le=100)  # hits per search call


class Citation(BaseModel):
    n: int  # the [n] marker in the answer
    evidence_id: str
    doc_id: str
    title: str
    text: str
    locator: Locator


class Claim(BaseModel):
    """One sentence or clause of the answer, with the citations meant to support it."""

    text: str
    citations: list[int] = Field(default_factory=list)  # [n] numbers of ``citations``
    supported: bool
    reason: str = ""  # why it is unsupported (a number, a name absent from its passages)


class ResearchResult(BaseModel):
    run_id: str
    question: str
    mode: str
    # The asked fact alone (a name, date, number, option, yes/no) when the evidence
    # determines it; None when it does not: a wrong value is worse than none.
    short_answer: str | None = None
    answer: str  # text with [n] markers numbered 1..n over ``citations``
    answerable: bool
    claims: list[Claim] = Field(default_factory=list)
    citations: list[Citation] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)  # what synthesis read, ranked
    removed_citations: list[str] = Field(default_factory=list)  # unresolvable, stripped
    warnings: list[str] = Field(default_factory=list)
    bound_hit: BoundName | None = None
    rounds: int = 0
    tool_calls: int = 0
    usage: dict[str, Any] = Field(default_factory=dict)  # tokens, wall time, ...


EventType = Literal[
    "metadata",
    "node_start",
    "node_end",
    "plan",
    "tool_call",
    "tool_result",
    "evidence",
    "round",
    "token",
    "citation",
    "claim",
    "done",
    "error",
]


class TraceEvent(BaseModel):
    """One structured event of a run; ``seq`` increases within a run."""

    run_id: str
    seq: int
    type: EventType
    ts: float
    node: str | None = None
    round: int = 0
    data: dict[str, Any] = Field(default_factory=dict)
