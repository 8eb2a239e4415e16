"""Request options and the structured, fully inspectable result of one search."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from retrieval.records import Meta, Record


class SearchOptions(BaseModel):
    """Per-query options (apart from infrastructure settings)."""

    k: int = Field(default=10, ge=1, le=200)
    legs: list[str] = Field(default_factory=lambda: ["lexical", "dense"])
    leg_weights: dict[str, float] = Field(default_factory=dict)  # default 1.0 per leg
    rrf_k: int = 60
    depth: int | None = None  # per-leg recall depth; None = dynamic from corpus size
    per_doc_cap: int = 2
    rerank: bool = True
    idf_gate: float | None = None  # drop hits whose mean IDF is below this
    age_decay_half_life_days: float | None = None
    expand_neighbors: int = 0  # expand the final top-N hits with adjacent sections
    rewrite: bool = True
    sources: list[str] | None = None
    time_from: datetime | None = None
    time_to: datetime | None = None
    # Added by the search pipeline (all optional, defaults keep the original behaviour):
    rerank_depth: int = Field(default=50, ge=1, le=200)  # fused candidates the reranker scores
    leg_timeout_s: float = Field(default=30.0, gt=0)  # a slower leg is dropped with a warning
    # Which query the dense leg embeds (see retrieval/pipeline.py for the measurement).
    dense_query: Literal["original", "rewritten"] = "original"
    # How many entries of each ranked list (legs, fused, capped, reranked) the result keeps;
    # None = all. A caller that reports only the top of each list (the research loop's
    # trace) need not have the rest built.
    explain_depth: int | None = Field(default=None, ge=1, le=1000)


class Locator(BaseModel):
    """Where a cited passage lives."""

    doc_id: str
    chunk_id: str
    char_start: int | None = None
    char_end: int | None = None
    heading_path: list[str] = Field(default_factory=list)
    url: str | None = None


def locator_for(record: Record) -> Locator:
    """The citation locator of a stored chunk, read from its well-known metadata."""
    meta = record.metadata
    return Locator(
        doc_id=record.doc_id,
        chunk_id=record.id,
        char_start=meta.get(Meta.CHAR_START),
        char_end=meta.get(Meta.CHAR_END),
        heading_path=list(meta.get(Meta.HEADING_PATH) or []),
        url=meta.get(Meta.URL),
    )


class RankedItem(BaseModel):
    id: str
    rank: int
    score: float
    title: str = ""


class SearchHit(BaseModel):
    id: str
    doc_id: str
    title: str
    text: str
    score: float
    source: str
    timestamp: datetime
    locator: Locator
    metadata: dict[str, Any] = Field(default_factory=dict)
    rerank_score: float | None = None
    expanded_from: str | None = None  # set on neighbour sections added by expansion


class SearchResult(BaseModel):
    original_query: str
    rewritten_query: str
    legs: dict[str, list[RankedItem]] = Field(default_factory=dict)
    fused: list[RankedItem] = Field(default_factory=list)
    capped: list[RankedItem] = Field(default_factory=list)
    reranked: list[RankedItem] | None = None
    hits: list[SearchHit] = Field(default_factory=list)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    depth: int = 0
    corpus_size: int = 0
    # Added by the search pipeline (optional):
    leg_queries: dict[str, str] = Field(default_factory=dict)  # the text each leg received
    signals: dict[str, Any] = Field(default_factory=dict)  # idf_gate / age_decay when applied
    rerank_model: str | None = None  # the cross-encoder path that produced ``reranked``
