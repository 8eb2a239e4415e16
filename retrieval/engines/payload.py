"""Record <-> Qdrant payload layout and filter spec, shared by every Qdrant-backed engine.

Qdrant point ids must be unsigned ints or UUIDs, so a point's id is the uuid5 of the
record id and the record id itself travels in the payload. The payload carries the whole
record, so a hit rebuilds a :class:`Record` without a second lookup. The fields that
filters touch (``acl``, ``source``, ``doc_id``, ``timestamp``) sit at the top level so
they can carry payload indexes.

The filter spec is engine-neutral: each adapter turns it into its own client's classes
(``qdrant_edge`` and ``qdrant_client`` have look-alike but distinct types).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic_core import to_jsonable_python

from retrieval.engines.base import SearchFilter
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


def to_utc(moment: datetime) -> datetime:
    # Naive datetimes are taken as UTC so that comparisons inside the engine are total.
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def iso_utc(moment: datetime) -> str:
    """RFC 3339 in UTC, the form both Qdrant's core and local mode parse."""
    return to_utc(moment).isoformat()


def record_to_payload(record: Record) -> dict[str, Any]:
    # Metadata goes through JSON conversion so that what is stored is what comes back.
    metadata = to_jsonable_python(record.metadata)
    return {
        RECORD_ID: record.id,
        SOURCE: record.source,
        TEXT: record.text,
        TIMESTAMP: iso_utc(record.timestamp),
        METADATA: metadata,
        ACL: record.acl,
        DOC_ID: record.doc_id,
        CHUNK_INDEX: record.chunk_index,
    }


def payload_to_record(payload: Mapping[str, Any]) -> Record:
    return Record(
        id=str(payload[RECORD_ID]),
        source=str(payload[SOURCE]),
        text=str(payload[TEXT]),
        timestamp=datetime.fromisoformat(str(payload[TIMESTAMP])),
        metadata=dict(payload.get(METADATA) or {}),
    )


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


def order_records(ids: Sequence[str], found: Sequence[Record]) -> list[Record]:
    """Records in the order of ``ids`` (missing ids skipped, repeats collapsed)."""
    by_id = {record.id: record for record in found}
    out: list[Record] = []
    seen: set[str] = set()
    for rid in ids:
        if rid in by_id and rid not in seen:
            out.append(by_id[rid])
            seen.add(rid)
    return out
