"""An in-memory store and search for unit tests and examples (no engines, no models).

It honours the same contract as ``retrieval.store.Store`` for what the tools use,
including ACL filtering, so permission tests mean something at this level too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from retrieval.engines.base import SearchFilter
from retrieval.records import PUBLIC_GROUP, Meta, Record
from retrieval.search_models import Locator, RankedItem, SearchHit, SearchOptions, SearchResult
from tools.evidence import Evidence, Provenance
from tools.titles import base_title, tokens

_STOP = frozenset(
    "a an the of in on at to for by with and or is was were are be who what which when where "
    "how did does do from that this as it its his her their".split()
)


def _terms(text: str) -> set[str]:
    return {t for t in tokens(text) if t not in _STOP}


class MemoryStore:
    def __init__(
        self, records: Iterable[Record] = (), projects: dict[str, list[str]] | None = None
    ):
        self.records: dict[str, Record] = {}
        self.projects = projects or {}
        self.calls: list[tuple[str, Any]] = []  # what the tools asked (tests assert on it)
        self.ingest(records)

    def ingest(self, records: Iterable[Record]) -> None:
        for r in records:
            self.records[r.id] = r

    # -- scope --
    def filter_for(
        self, groups: Sequence[str], project: str | None = None, **_: Any
    ) -> SearchFilter:
        sources = tuple(self.projects[project]) if project else None
        return SearchFilter.for_groups(list(groups), sources=sources)

    def allowed(self, r: Record, flt: SearchFilter) -> bool:
        if flt.acl_groups is not None and not set(r.acl) & set(flt.acl_groups):
            return False
        if flt.sources is not None and r.source not in flt.sources:
            return False
        return flt.doc_ids is None or r.doc_id in flt.doc_ids

    def visible(self, flt: SearchFilter) -> list[Record]:
        return [r for r in self.records.values() if self.allowed(r, flt)]

    # -- reads --
    def get_records(self, ids: Sequence[str], flt: SearchFilter) -> list[Record]:
        self.calls.append(("get_records", list(ids)))
        return [
            self.records[i] for i in ids if i in self.records and self.allowed(self.records[i], flt)
        ]

    def get_document(self, doc_id: str, flt: SearchFilter) -> list[Record]:
        self.calls.append(("get_document", doc_id))
        chunks = [r for r in self.visible(flt) if r.doc_id == doc_id]
        return sorted(chunks, key=lambda r: r.chunk_index)

    def neighbors(self, chunk_id: str, flt: SearchFilter, window: int = 1) -> list[Record]:
        self.calls.append(("neighbors", chunk_id))
        me = self.records.get(chunk_id)
        if me is None or not self.allowed(me, flt):
            return []
        return [
            r
            for r in self.get_document(me.doc_id, flt)
            if r.id != chunk_id and abs(r.chunk_index - me.chunk_index) <= window
        ]

    def lookup(self, name: str, flt: SearchFilter, limit: int = 5) -> list[Record]:
        self.calls.append(("lookup", name))
        want = name.strip().casefold()
        firsts = [r for r in self.visible(flt) if r.chunk_index == 0]
        exact = [r for r in firsts if want in (r.title.casefold(), base_title(r.title).casefold())]
        fuzzy = [r for r in firsts if r not in exact and want and want in r.title.casefold()]
        return (exact + fuzzy)[:limit]

    def titles(self, flt: SearchFilter) -> list[tuple[str, str]]:
        return sorted({(r.title, r.doc_id) for r in self.visible(flt) if r.title})

    def corpus_size(self) -> int:
        return len(self.records)


async def memory_search(
    store: MemoryStore, query: str, flt: SearchFilter, options: SearchOptions | None = None
) -> SearchResult:
    """Term-overlap ranking with the real ``SearchResult`` shape."""
    options = options or SearchOptions()
    store.calls.append(("search", query))
    q = _terms(query)
    scored = []
    for r in store.visible(flt):
        overlap = len(q & (_terms(r.text) | _terms(r.title)))
        if overlap:
            scored.append((overlap / (len(q) or 1), r))
    scored.sort(key=lambda x: (-x[0], x[1].id))
    top = scored[: options.k]
    ranked = [
        RankedItem(id=r.id, rank=i + 1, score=s, title=r.title) for i, (s, r) in enumerate(top)
    ]
    hits = [
        SearchHit(
            id=r.id,
            doc_id=r.doc_id,
            title=r.title,
            text=r.text,
            score=s,
            source=r.source,
            timestamp=r.timestamp,
            locator=Locator(doc_id=r.doc_id, chunk_id=r.id),
            metadata=dict(r.metadata),
        )
        for s, r in top
    ]
    return SearchResult(
        original_query=query,
        rewritten_query=query,
        legs={"lexical": ranked},
        fused=ranked,
        hits=hits,
        corpus_size=len(store.records),
    )


class RecordingEmbedder:
    """An embedder double: records every encode call, raises ``error`` for the first
    ``failures`` calls, and otherwise returns small vectors that depend on the text."""

    def __init__(self, failures: int = 0, error: Exception | None = None) -> None:
        self.calls: list[list[str]] = []
        self.failures = failures
        self.error = error or RuntimeError("encoder busy")

    def encode(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.failures > 0:
            self.failures -= 1
            raise self.error
        return [[float(len(t)), float(sum(map(ord, t)) % 7)] for t in texts]


def passage(
    doc: str,
    title: str,
    text: str,
    source: str = "wiki",
    acl: list[str] | None = None,
    index: int = 0,
) -> Record:
    """A one-chunk record the way connectors emit it (doc id ``source:doc``)."""
    doc_id = f"{source}:{doc}"
    return Record(
        id=f"{doc_id}#{index}",
        source=source,
        text=text,
        metadata={
            Meta.TITLE: title,
            Meta.DOC_ID: doc_id,
            Meta.CHUNK_INDEX: index,
            Meta.ACL: acl or [PUBLIC_GROUP],
        },
    )


def evidence(doc: str, text: str, *provenance: Provenance, title: str | None = None) -> Evidence:
    """One evidence item (``doc#0``) titled ``title`` or like its document, for policy and
    ranking tests."""
    return Evidence(
        id=f"{doc}#0",
        doc_id=doc,
        title=title if title is not None else doc,
        text=text,
        score=1.0,
        source="wiki",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        locator=Locator(doc_id=doc, chunk_id=f"{doc}#0"),
        provenance=list(provenance),
    )


LEDGER_QUESTION = "Which team does the engineer who wrote the Ledger runbook lead?"


def ledger_corpus(*extra: Record) -> MemoryStore:
    """A two-hop corpus: the runbook names its author, the author's page names the team."""
    return MemoryStore(
        [
            passage(
                "runbook", "Ledger runbook", "The Ledger runbook was written by engineer Dana Ruiz."
            ),
            passage("dana", "Dana Ruiz", "Dana Ruiz heads the Payments Platform group."),
            passage("noise", "Cafeteria", "The cafeteria opens at eight."),
            *extra,
        ]
    )
