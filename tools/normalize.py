"""Turn each tool's native output (records, search hits) into the one evidence schema."""

from __future__ import annotations

from typing import Any

from retrieval.records import Meta, Record
from retrieval.search_models import locator_for
from tools.evidence import Evidence

# Metadata keys worth carrying to synthesis and the trace (the rest stays in the store).
_KEPT_META = (Meta.KIND, Meta.AUTHOR, Meta.ACL, Meta.ENTITIES, Meta.HEADING_PATH, Meta.URL)


def evidence_from_record(record: Record, score: float) -> Evidence:
    return Evidence(
        id=record.id,
        doc_id=record.doc_id,
        title=record.title,
        text=record.text,
        score=score,
        source=record.source,
        timestamp=record.timestamp,
        locator=locator_for(record),
        metadata={k: record.metadata[k] for k in _KEPT_META if k in record.metadata},
    )


def evidence_from_hit(hit: Any) -> Evidence:
    """From a ``retrieval.search_models.SearchHit`` (rerank score preferred when present)."""
    score = hit.rerank_score if hit.rerank_score is not None else hit.score
    meta = dict(hit.metadata or {})
    return Evidence(
        id=hit.id,
        doc_id=hit.doc_id,
        title=hit.title,
        text=hit.text,
        score=float(score),
        source=hit.source,
        timestamp=hit.timestamp,
        locator=hit.locator,
        metadata={k: meta[k] for k in _KEPT_META if k in meta},
    )
