"""What a tool call runs against: the store and the caller's scope, resolved once per run.

Scope and permissions are applied here, by the tools, never by a prompt: every store call
below receives ``flt``, the caller's filter, so an unauthorised record never leaves the
engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from retrieval.engines.base import SearchFilter
from retrieval.records import Record
from tools.titles import TitleIndex


class StoreLike(Protocol):
    """The part of ``retrieval.store.Store`` the tools use (a fake satisfies it in tests)."""

    def filter_for(
        self, groups: Sequence[str], project: str | None = None, **kw: Any
    ) -> SearchFilter: ...

    def get_records(self, ids: Sequence[str], flt: SearchFilter) -> list[Record]: ...

    def get_document(self, doc_id: str, flt: SearchFilter) -> list[Record]: ...

    def neighbors(self, chunk_id: str, flt: SearchFilter, window: int = 1) -> list[Record]: ...

    def lookup(self, name: str, flt: SearchFilter, limit: int = 5) -> list[Record]: ...


@dataclass
class ToolContext:
    store: Any  # StoreLike; Any so the real Store (richer) and fakes both fit
    flt: SearchFilter
    default_k: int = 10
    # ``hybrid_search(store, query, flt, options)``; None = retrieval.pipeline's. Tests
    # and benchmarks swap it without touching the catalog.
    search_fn: Any = None
    _titles: TitleIndex | None = field(default=None, repr=False)
    # Dense-leg query text -> (batch future, position): embeddings computed ahead, one
    # encode call per batch of queries (see ``embed_ahead``). Per run, never shared.
    _vectors: dict[str, tuple[asyncio.Future[list[list[float]]], int]] = field(
        default_factory=dict, repr=False
    )

    def embed_ahead(self, queries: Sequence[str], options: Any = None) -> None:
        """Start embedding the dense-leg text of these search queries, in one batch.

        A round's searches would each encode their query in its own thread: one call for
        all of them costs little more than one query, where several concurrent calls
        contend for the same cores. Only for the default pipeline (a swapped ``search_fn``
        embeds as it likes) and a store with an embedder; text embedded already (or being
        embedded) in this run is not embedded again. The batch runs on
        :func:`retrieval.pipeline.query_encoder`'s threads, as a search's own query does.
        """
        embedder = getattr(self.store, "embedder", None)
        if self.search_fn is not None or embedder is None:
            return
        from retrieval.pipeline import dense_leg_query, query_encoder

        texts = [
            t
            for t in dict.fromkeys(dense_leg_query(q, options) for q in queries)
            if t and t not in self._vectors
        ]
        if not texts:
            return
        batch = asyncio.get_running_loop().run_in_executor(query_encoder(), embedder.encode, texts)
        # A failed batch no search awaits (the run ended first) is not an unretrieved error.
        batch.add_done_callback(lambda f: f.cancelled() or f.exception())
        for i, text in enumerate(texts):
            self._vectors[text] = (batch, i)

    def vector_ahead(
        self, query: str, options: Any = None
    ) -> Callable[[], Awaitable[Sequence[float] | None]] | None:
        """What ``hybrid_search(query_vector=...)`` awaits for ``query``, if it was embedded
        ahead (None: it was not; the search embeds it itself)."""
        from retrieval.pipeline import dense_leg_query

        entry = self._vectors.get(dense_leg_query(query, options))
        if entry is None:
            return None
        batch, i = entry

        async def vector() -> Sequence[float] | None:
            try:
                # shield: a timed-out or cancelled search must not cancel the shared batch
                vectors = await asyncio.shield(batch)
            except Exception:  # noqa: BLE001 - the search embeds (and reports) on its own
                return None
            return vectors[i]

        return vector

    def title_index(self) -> TitleIndex | None:
        """Titles the caller may read, if the store can list them (``store.titles(flt)``).

        ``None`` when it cannot: planners then fall back to names read off the text.
        """
        if self._titles is None:
            list_titles = getattr(self.store, "titles", None)
            if list_titles is None:
                return None
            self._titles = _cached_index(self.store, self.flt, list_titles)
        return self._titles

    @classmethod
    def for_caller(
        cls,
        store: Any,
        groups: Sequence[str],
        project: str | None = None,
        default_k: int = 10,
    ) -> ToolContext:
        return cls(store=store, flt=store.filter_for(list(groups), project), default_k=default_k)


class _MemoTitleIndex(TitleIndex):
    """A title index that remembers its answers: the planner scans the same passages for
    titles in every round (and ranking scans the question each time)."""

    _MEMO_SIZE = 8192

    def __init__(self, titles: Any) -> None:
        super().__init__(titles)
        self._memo: dict[tuple[str, frozenset[str]], tuple[str, ...]] = {}

    def mentions(self, text: str, exclude: frozenset[str] | set[str] = frozenset()) -> list[str]:
        key = (text, frozenset(exclude))
        found = self._memo.get(key)
        if found is None:
            found = tuple(super().mentions(text, exclude))
            if len(self._memo) >= self._MEMO_SIZE:
                self._memo.clear()  # a cache, not a record: start over
            self._memo[key] = found
        return list(found)


# Building the index scans every title; reuse it while the store's content is unchanged.
_INDEX_CACHE: dict[tuple[int, SearchFilter], tuple[Any, TitleIndex]] = {}
_CACHE_SIZE = 32


def _cached_index(store: Any, flt: SearchFilter, list_titles: Any) -> TitleIndex:
    version = _content_version(store)
    key = (id(store), flt)
    hit = _INDEX_CACHE.get(key)
    if hit is not None and version is not None and hit[0] == version:
        return hit[1]
    index = _MemoTitleIndex(list_titles(flt))
    if len(_INDEX_CACHE) >= _CACHE_SIZE:
        _INDEX_CACHE.pop(next(iter(_INDEX_CACHE)))
    _INDEX_CACHE[key] = (version, index)
    return index


def _content_version(store: Any) -> Any:
    """The store's change counter (``store.version()``: bumped by every ingest, delete and
    ACL change), or None: then nothing is cached, because a stale title list could put a
    revoked document's title into a trace."""
    version = getattr(store, "version", None)
    return version() if callable(version) else None
