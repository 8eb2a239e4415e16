"""Record <-> Qdrant payload layout and filter spec, shared by every Qdrant-backed engine.

Qdrant point ids must be unsigned ints or UUIDs, so a point's id is the uuid5 of the
record id and the record id itself travels in the payload. The payload carries the whole
record, so a hit can rebuild its :class:`Record` from the point alone (Qdrant Edge's search
reads ids first and the shown records after: ``DeferredHit``). The fields that
filters touch (``acl``, ``source``, ``doc_id``, ``timestamp``) sit at the top level so
they can carry payload indexes.

The JSON conversion of a record, the time normalisation and id ordering are the ones the
lexical engines use (:mod:`retrieval.engines.record_codec`), so every engine stores and
returns the same record.

The filter spec is engine-neutral: each adapter turns it into its own client's classes
(``qdrant_edge`` and ``qdrant_client`` have look-alike but distinct types).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from retrieval.engines.base import Hit, SearchFilter
from retrieval.engines.record_codec import order_by_ids, record_from_dict, record_to_dict, to_utc
from retrieval.records import Record

# A fixed namespace: point ids must stay stable across processes and versions.
POINT_NAMESPACE = uuid.UUID("6f1c2a4e-5b7d-4e0a-9c3f-2d8e1b7a9c40")

# Payload keys.
RECORD_ID = "record_id"
SOURCE = "source"
TEXT = "text"
TIMESTAMP = "timestamp"
METADATA = "metadata"
ACL = "acl"
DOC_ID = "doc_id"
CHUNK_INDEX = "chunk_index"

KEYWORD_INDEXED = (ACL, SOURCE, DOC_ID)
DATETIME_INDEXED = (TIMESTAMP,)


def point_id(record_id: str) -> str:
    """The Qdrant point id (a UUID string) of a record id."""
    return str(uuid.uuid5(POINT_NAMESPACE, record_id))


def iso_utc(moment: datetime) -> str:
    """RFC 3339 in UTC, the form both Qdrant's core and local mode parse."""
    return to_utc(moment).isoformat()


def record_to_payload(record: Record) -> dict[str, Any]:
    data = record_to_dict(record)
    return {
        RECORD_ID: data["id"],
        SOURCE: data["source"],
        TEXT: data["text"],
        TIMESTAMP: iso_utc(record.timestamp),
        METADATA: data["metadata"],
        ACL: record.acl,
        DOC_ID: record.doc_id,
        CHUNK_INDEX: record.chunk_index,
    }


def payload_to_record(payload: Mapping[str, Any]) -> Record:
    return record_from_dict(
        {
            "id": payload[RECORD_ID],
            "source": payload[SOURCE],
            "text": payload[TEXT],
            "timestamp": payload[TIMESTAMP],
            "metadata": payload.get(METADATA) or {},
        }
    )


class StoredPoint(Protocol):
    """What both clients' retrieved points have in common (payload requested)."""

    @property
    def payload(self) -> Mapping[str, Any] | None: ...


class ScoredPoint(StoredPoint, Protocol):
    @property
    def score(self) -> float: ...


def dense_hits(points: Iterable[ScoredPoint]) -> list[Hit]:
    """Hits of a query's points, ranked in the engine's order."""
    return [
        Hit(
            record=payload_to_record(point.payload or {}),
            score=float(point.score),
            rank=rank,
            leg="dense",
        )
        for rank, point in enumerate(points, start=1)
    ]


def records_in_order(ids: Sequence[str], points: Iterable[StoredPoint]) -> list[Record]:
    """Retrieved points as records in the order of ``ids`` (missing skipped, repeats once)."""
    return order_by_ids(ids, [payload_to_record(point.payload or {}) for point in points])


def ids_in_chunk_order(points: Iterable[StoredPoint]) -> list[str]:
    """Record ids of points scrolled with ``RECORD_ID`` and ``CHUNK_INDEX``, in chunk order."""
    rows: list[tuple[int, str]] = []
    for point in points:
        data = point.payload or {}
        rows.append((int(data.get(CHUNK_INDEX, 0)), str(data[RECORD_ID])))
    return [rid for _, rid in sorted(rows)]


@dataclass(frozen=True)
class FilterSpec:
    """A SearchFilter in payload terms.

    ``matches`` are (key, allowed values) pairs that must all hold (each is "the field has
    any of these values"); an empty values tuple matches nothing. ``time_gte`` and
    ``time_lte`` bound the timestamp (inclusive).
    """

    matches: tuple[tuple[str, tuple[str, ...]], ...] = ()
    time_gte: datetime | None = None  # UTC-aware
    time_lte: datetime | None = None

    @property
    def is_empty(self) -> bool:
        return not self.matches and self.time_gte is None and self.time_lte is None

    @property
    def matches_nothing(self) -> bool:
        """True when some constraint allows no value at all (e.g. ``acl_groups=()``)."""
        return any(not values for _, values in self.matches)


def filter_spec(flt: SearchFilter) -> FilterSpec:
    matches: list[tuple[str, tuple[str, ...]]] = []
    for key, values in (
        (ACL, flt.acl_groups),
        (SOURCE, flt.sources),
        (DOC_ID, flt.doc_ids),
    ):
        if values is not None:
            matches.append((key, tuple(values)))
    return FilterSpec(
        matches=tuple(matches),
        time_gte=to_utc(flt.time_from) if flt.time_from is not None else None,
        time_lte=to_utc(flt.time_to) if flt.time_to is not None else None,
    )


def check_batch(records: Sequence[Record], vectors: Sequence[Sequence[float]], dim: int) -> None:
    """Reject a malformed batch before anything is written (nothing half-applied)."""
    if len(records) != len(vectors):
        raise ValueError(f"upsert got {len(records)} records but {len(vectors)} vectors")
    for record, vector in zip(records, vectors, strict=True):
        if len(vector) != dim:
            raise ValueError(
                f"record {record.id!r}: vector has {len(vector)} dimensions, engine expects {dim}"
            )


def last_wins(
    records: Sequence[Record], vectors: Sequence[Sequence[float]]
) -> list[tuple[Record, Sequence[float]]]:
    """One entry per record id, the last occurrence winning (as Qdrant itself would)."""
    latest: dict[str, tuple[Record, Sequence[float]]] = {}
    for record, vector in zip(records, vectors, strict=True):
        latest.pop(record.id, None)
        latest[record.id] = (record, vector)
    return list(latest.values())


def check_query_vector(vector: Sequence[float], dim: int) -> None:
    if len(vector) != dim:
        raise ValueError(f"query vector has {len(vector)} dimensions, engine expects {dim}")
