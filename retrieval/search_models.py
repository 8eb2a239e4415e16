"""Request options and the structured, fully inspectable result of one search."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from retrieval.records import Meta, Record

# Upper bounds of the per-query options. Every number a caller sends is bounded, because
# the engines size their buffers from them: a recall depth of 10^12 once made tantivy
# reserve 16 TB and abort the process. The bounds sit well above any useful value.
MAX_K = 200
MAX_DEPTH = 1_000  # per-leg recall depth (the evaluations use 100 at most)
MAX_RRF_K = 1_000
MAX_LEG_WEIGHT = 100.0
MAX_PER_DOC_CAP = 200
MAX_IDF_GATE = 100.0  # a mean IDF is ln(N) at most: 100 is past any corpus
MAX_HALF_LIFE_DAYS = 36_500.0  # a century
MAX_EXPAND_NEIGHBORS = 200
MAX_LEG_TIMEOUT_S = 300.0
MAX_EXPLAIN_DEPTH = 1_000
MAX_SOURCES = 100
MAX_NAME_CHARS = 200  # a source or project name
LegName = Annotated[str, StringConstraints(pattern="^(lexical|dense)$")]


class SearchOptions(BaseModel):
    """Per-query options (apart from infrastructure settings). Every number is bounded
    (see the ``MAX_*`` constants) and floats must be finite: NaN or Infinity is refused."""

    k: int = Field(default=10, ge=1, le=MAX_K)
    legs: list[LegName] = Field(
        default_factory=lambda: ["lexical", "dense"], min_length=1, max_length=2
    )
    # default 1.0 per leg
    leg_weights: dict[LegName, Annotated[float, Field(ge=0, le=MAX_LEG_WEIGHT)]] = Field(
        default_factory=dict,
        max_length=2,
        # the schema says what validation does: keys other than the legs' are refused
        json_schema_extra={"additionalProperties": False},
    )
    rrf_k: int = Field(default=60, ge=0, le=MAX_RRF_K)
    # per-leg recall depth; None = dynamic from the size of what the caller may read
    depth: int | None = Field(default=None, ge=1, le=MAX_DEPTH)
    per_doc_cap: int = Field(default=2, ge=1, le=MAX_PER_DOC_CAP)
    rerank: bool = True
    # drop hits whose mean IDF is below this
    idf_gate: float | None = Field(default=None, ge=0, le=MAX_IDF_GATE)
    age_decay_half_life_days: float | None = Field(default=None, gt=0, le=MAX_HALF_LIFE_DAYS)
    # expand the final top-N hits with adjacent sections
    expand_neighbors: int = Field(default=0, ge=0, le=MAX_EXPAND_NEIGHBORS)
    rewrite: bool = True
    sources: list[Annotated[str, Field(max_length=MAX_NAME_CHARS)]] | None = Field(
        default=None, max_length=MAX_SOURCES
    )
    time_from: datetime | None = None
    time_to: datetime | None = None
    # Added by the search pipeline (all optional, defaults keep the original behaviour):
    # fused candidates the reranker scores
    rerank_depth: int = Field(default=50, ge=1, le=MAX_K)
    # a slower leg is dropped with a warning
    leg_timeout_s: float = Field(default=30.0, gt=0, le=MAX_LEG_TIMEOUT_S)
    # Which query the dense leg embeds (see retrieval/pipeline.py for the measurement).
    dense_query: Literal["original", "rewritten"] = "original"
    # How many entries of each ranked list (legs, fused, capped, reranked) the result keeps;
    # None = all. A caller that reports only the top of each list (the research loop's
    # trace) need not have the rest built.
    explain_depth: int | None = Field(default=None, ge=1, le=MAX_EXPLAIN_DEPTH)

    model_config = ConfigDict(allow_inf_nan=False)


class Locator(BaseModel):
    """Where a cited passage lives."""

    doc_id: str
    chunk_id: str
    char_start: int | None = None
    char_end: int | None = None
    heading_path: list[str] = Field(default_factory=list)
    url: str | None = None
    # Inside a paged / tabular file (None elsewhere): PDF page, slide, sheet and rows.
    page: int | None = None
    slide: int | None = None
    sheet: str | None = None
    row_start: int | None = None
    row_end: int | None = None
    # How a citation names the place: ``"report.pdf p. 12"``, ``"deck.pptx slide 3"``,
    # ``"budget.xlsx, sheet Q3, rows 2-40"``; None when there is no page, slide or sheet.
    label: str | None = None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def citation_label(record: Record) -> str | None:
    """``"report.pdf p. 12"`` and the like, from the chunk's page / slide / sheet / rows."""
    meta = record.metadata
    page, slide = _int_or_none(meta.get(Meta.PAGE)), _int_or_none(meta.get(Meta.SLIDE))
    sheet = meta.get(Meta.SHEET)
    rows = (_int_or_none(meta.get(Meta.ROW_START)), _int_or_none(meta.get(Meta.ROW_END)))
    if page is None and slide is None and sheet is None and rows[0] is None:
        return None
    path = str(meta.get(Meta.PATH) or record.doc_id.split(":", 1)[-1])
    parts = [path.rstrip("/").rsplit("/", 1)[-1]]
    if page is not None:
        return f"{parts[0]} p. {page}"
    if slide is not None:
        return f"{parts[0]} slide {slide}"
    if sheet:
        parts.append(f"sheet {sheet}")
    if rows[0] is not None:
        end = rows[1] if rows[1] is not None else rows[0]
        parts.append(f"row {rows[0]}" if end == rows[0] else f"rows {rows[0]}-{end}")
    return ", ".join(parts)


def locator_for(record: Record) -> Locator:
    """The citation locator of a stored chunk, read from its well-known metadata."""
    meta = record.metadata
    sheet = meta.get(Meta.SHEET)
    return Locator(
        doc_id=record.doc_id,
        chunk_id=record.id,
        char_start=meta.get(Meta.CHAR_START),
        char_end=meta.get(Meta.CHAR_END),
        heading_path=list(meta.get(Meta.HEADING_PATH) or []),
        url=meta.get(Meta.URL),
        page=_int_or_none(meta.get(Meta.PAGE)),
        slide=_int_or_none(meta.get(Meta.SLIDE)),
        sheet=str(sheet) if sheet else None,
        row_start=_int_or_none(meta.get(Meta.ROW_START)),
        row_end=_int_or_none(meta.get(Meta.ROW_END)),
        label=citation_label(record),
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
    # Records the caller may read within the search's scope (its ACL groups, project and
    # sources), never the whole index: hidden records are not counted.
    corpus_size: int = 0
    # Added by the search pipeline (optional):
    leg_queries: dict[str, str] = Field(default_factory=dict)  # the text each leg received
    signals: dict[str, Any] = Field(default_factory=dict)  # idf_gate / age_decay when applied
    rerank_model: str | None = None  # the cross-encoder path that produced ``reranked``
