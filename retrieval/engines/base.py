"""The engine contract shared by every lexical and dense backend.

Filters are pushed *into* each engine's native query (tantivy / Elasticsearch bool
filters, Qdrant payload filters): an unauthorised record must never leave the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from retrieval.records import Record


@dataclass(frozen=True)
class SearchFilter:
    """Scope, permission and time constraints applied inside the engine query.

    ``acl_groups=None`` means "no ACL filter" (trusted internal use only, e.g. the
    indexer); a list means the record's ACL must intersect it. ``sources=None`` means
    every source. ``doc_ids`` restricts to the chunks of those documents.
    """

    acl_groups: tuple[str, ...] | None = ()
    sources: tuple[str, ...] | None = None
    doc_ids: tuple[str, ...] | None = None
    time_from: datetime | None = None
    time_to: datetime | None = None

    @staticmethod
    def for_groups(groups: Sequence[str], **kw: Any) -> SearchFilter:
        from retrieval.records import PUBLIC_GROUP

        return SearchFilter(acl_groups=tuple(sorted({*groups, PUBLIC_GROUP})), **kw)


@dataclass
class Hit:
    """One ranked result from one engine leg (1-based ``rank``)."""

    record: Record
    score: float
    rank: int = 0
    leg: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.record.id


@runtime_checkable
class LexicalEngine(Protocol):
    """BM25 over record text. Stores the full record so hits carry text + metadata."""

    name: str

    def upsert(self, records: Sequence[Record], *, delete_ids: Sequence[str] = ()) -> None:
        """Add or replace records and drop ``delete_ids`` in one commit (atomic swap)."""
        ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def delete_source(self, source: str) -> None: ...

    def search(self, query: str, k: int, flt: SearchFilter) -> list[Hit]: ...

    def get(self, ids: Sequence[str]) -> list[Record]: ...

    def ids_for_doc(self, doc_id: str) -> list[str]: ...

    def count(self) -> int: ...

    def doc_freq(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """Document frequency per (analysed) term and the total document count (for IDF)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class DenseEngine(Protocol):
    """Vector search over record embeddings; payload carries the full record."""

    name: str

    def upsert(self, records: Sequence[Record], vectors: Sequence[Sequence[float]]) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def delete_source(self, source: str) -> None: ...

    def search(self, vector: Sequence[float], k: int, flt: SearchFilter) -> list[Hit]: ...

    def get(self, ids: Sequence[str]) -> list[Record]: ...

    def count(self) -> int: ...

    def optimize(self) -> None:
        """Build / refresh the ANN index after a batch (kept off the query path)."""
        ...

    def close(self) -> None: ...
