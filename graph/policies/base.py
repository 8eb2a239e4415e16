"""What a policy decides, behind the same nodes: plan, assess, rank, synthesize."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from graph.models import RunOptions
from tools.catalog import Catalog
from tools.evidence import Evidence
from tools.executor import ToolCall
from tools.titles import TitleIndex

Decision = Literal["enough", "more", "next"]
OnToken = Callable[[str], Awaitable[None]]


class Verdict(BaseModel):
    """The sufficiency check after a round.

    enough: stop and synthesize; more: new or rewritten queries for the same need;
    next: a dependent call built from what was just found (the bridge entity).
    """

    decision: Decision
    reason: str = ""
    missing: list[str] = Field(default_factory=list)
    next_calls: list[ToolCall] = Field(default_factory=list)


class Answer(BaseModel):
    text: str  # [n] markers index the evidence list synthesis received (1-based)
    answerable: bool
    short_answer: str | None = None
    warnings: list[str] = Field(default_factory=list)
    tokens: int = 0
    streamed: bool = False  # tokens already emitted while generating
    extractive: bool = False  # read off the evidence (no LLM wrote it)


@dataclass
class View:
    """What a policy sees of the run (read-only by convention)."""

    question: str
    round: int
    options: RunOptions
    ranked: list[Evidence]  # the pool, best first
    new_ids: list[str]  # ids that entered the pool this round
    done_calls: set[str]
    policy_state: dict[str, Any]
    catalog: Catalog
    titles: TitleIndex | None
    project: str | None = None
    scores: dict[str, float] = field(default_factory=dict)


@dataclass
class PlanStep:
    calls: list[ToolCall]
    policy_state: dict[str, Any] = field(default_factory=dict)  # replaces the old scratch
    # Texts that later rounds' searches will embed (their ``dense_query``): embedded in
    # this round's batch, so a dependent round embeds nothing.
    embed: list[str] = field(default_factory=list)
    tokens: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass
class AssessStep:
    verdict: Verdict
    policy_state: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0
    warnings: list[str] = field(default_factory=list)


class Policy(Protocol):
    """A policy may also set ``plans_offline = True``: its ``plan`` depends on the view
    alone (no model call, nothing read beyond what the view holds), so the runner plans
    round one as a run starts (``graph.nodes.plan_ahead``) and the round's queries embed
    while the run is set up. A subclass whose plan reads more must set it False."""

    name: str

    async def plan(self, view: View) -> PlanStep: ...

    async def assess(self, view: View) -> AssessStep: ...

    def rank(self, view: View) -> list[tuple[str, float]]: ...

    async def synthesize(
        self, question: str, evidence: list[Evidence], on_token: OnToken
    ) -> Answer: ...
