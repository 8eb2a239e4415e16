"""The one evidence schema every tool's output is normalised into."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from retrieval.search_models import Locator


class Provenance(BaseModel):
    """Which round, tool and query brought an item into the pool."""

    round: int
    tool: str
    query: str
    rank: int | None = None
    # Optional: the evidence id whose content led to this call (a hop), and the lead's
    # position among that passage's leads (0 = the closest to the question's words).
    parent: str | None = None
    lead: int | None = None
    # True when the call searched the question rewritten with a bridge entity an earlier
    # hop found (a dependent sub-question), not the question's words beside a lead.
    rewrite: bool = False


class Evidence(BaseModel):
    id: str  # the chunk id (stable; what citations point at)
    doc_id: str
    title: str
    text: str
    score: float
    source: str
    timestamp: datetime
    locator: Locator
    provenance: list[Provenance] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
