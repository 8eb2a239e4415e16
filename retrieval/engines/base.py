"""The engine contract shared by every lexical and dense backend.

Filters are pushed *into* each engine's native query (tantivy / Elasticsearch bool
filters, Qdrant payload filters): an unauthorised record must never leave the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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

    @property
    def doc_id(self) -> str:
        return self.record.doc_id


class RecordLoader:
    """The records of one search's deferred hits, fetched in one call when first needed.

    ``fetch(ids)`` returns the records of those ids that the search's own filter still
    admits: one changed or deleted since the search returns nothing, and its hit is gone
    (:meth:`missing`), never shown with a record the caller may no longer see.
    """

    def __init__(self, fetch: Callable[[Sequence[str]], Iterable[Record]]) -> None:
        self._fetch = fetch
        self._records: dict[str, Record] = {}
        self._gone: set[str] = set()

    def load(self, ids: Iterable[str]) -> set[str]:
        """Fetch the records of ``ids`` not fetched yet (one call); the ids that are gone."""
        ids = list(ids)
        wanted = [i for i in dict.fromkeys(ids) if i not in self._records and i not in self._gone]
        if wanted:
            for record in self._fetch(wanted):
                self._records[record.id] = record
            self._gone.update(i for i in wanted if i not in self._records)
        return {i for i in ids if i in self._gone}

    def fresh(self) -> RecordLoader:
        """A loader of the same records that has fetched none yet (another search's)."""
        return RecordLoader(self._fetch)

    def get(self, record_id: str) -> Record:
        if record_id not in self._records:
            self.load([record_id])
        if record_id in self._gone:
            raise LookupError(f"record {record_id!r} is gone since the search that found it")
        return self._records[record_id]


class DeferredHit(Hit):
    """A hit whose record is fetched when first read (:class:`RecordLoader`).

    The search returned its id and document id only: a leg ranks ~50 hits, and a result
    shows ~10 of them, so reading every payload whole was most of a dense query's time.
    """

    def __init__(
        self, record_id: str, doc_id: str, loader: RecordLoader, score: float, rank: int, leg: str
    ) -> None:
        self._id, self._doc_id, self.loader = record_id, doc_id, loader
        self.score, self.rank, self.leg = score, rank, leg
        self.extra = {}

    @property  # type: ignore[override]
    def record(self) -> Record:
        return self.loader.get(self._id)

    @record.setter
    def record(self, value: Record) -> None:
        raise AttributeError("a deferred hit's record is read from its engine")

    @property
    def id(self) -> str:
        return self._id

    @property
    def doc_id(self) -> str:
        return self._doc_id

    # Not the dataclass's: those read the record (a fetch, or an error once it is gone).
    def __repr__(self) -> str:
        fields = f"id={self._id!r}, score={self.score!r}, rank={self.rank}, leg={self.leg!r}"
        return f"DeferredHit({fields})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeferredHit):
            return NotImplemented
        return (self._id, self.score, self.rank, self.leg) == (
            other._id,
            other.score,
            other.rank,
            other.leg,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass's hits are


def load_records(hits: Iterable[Hit]) -> set[str]:
    """Fetch the records of the deferred ``hits`` (one call per search); the ids gone."""
    by_loader: dict[int, tuple[RecordLoader, list[str]]] = {}
    for hit in hits:
        if isinstance(hit, DeferredHit):
            by_loader.setdefault(id(hit.loader), (hit.loader, []))[1].append(hit.id)
    gone: set[str] = set()
    for loader, ids in by_loader.values():
        gone |= loader.load(ids)
    return gone


def is_engine_panic(exc: BaseException) -> bool:
    """Whether ``exc`` is a panic inside a Rust engine binding (pyo3's ``PanicException``).

    pyo3 derives it from BaseException, so ``except Exception`` lets it through as if the
    interpreter were exiting; it is an engine failure like any other (tantivy panicked with
    "capacity overflow" on a recall depth of 2^62) and is handled as one.
    """
    kind = type(exc)
    return kind.__name__ == "PanicException" and kind.__module__ == "pyo3_runtime"


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
