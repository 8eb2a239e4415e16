"""What a tool call runs against: the store and the caller's scope, resolved once per run.

Scope and permissions are applied here, by the tools, never by a prompt: every store call
below receives ``flt``, the caller's filter, so an unauthorised record never leaves the
engine.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from retrieval.engines.base import SearchFilter
from retrieval.leg_cache import DenseLegCache
from retrieval.placement import engine_call
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

    # (outgoing, incoming) retrieval.structure.Linked of a document, filtered by ``flt``
    def links(self, doc_id: str, flt: SearchFilter) -> tuple[list[Any], list[Any]]: ...


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
    # Dense legs: a search whose dense leg repeats an earlier one's shares its ranking
    # (retrieval.leg_cache). One per context: a research run's (an MCP server's).
    dense_legs: DenseLegCache = field(default_factory=DenseLegCache, repr=False)

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
        from retrieval.pipeline import dense_leg_query, encode_queries

        texts = [
            t
            for t in dict.fromkeys(dense_leg_query(q, options) for q in queries)
            if t and t not in self._vectors
        ]
        if not texts:
            return
        batch = encode_queries(embedder, texts)
        # A failed batch no search awaits (the run ended first) is not an unretrieved error.
        batch.add_done_callback(lambda f: f.cancelled() or f.exception())
        for i, text in enumerate(texts):
            self._vectors[text] = (batch, i)

    def dense_vector(
        self,
        texts: Sequence[str],
        options: Any = None,
        feedback: Sequence[str] = (),
        own_query: bool = True,
    ) -> Callable[[], Awaitable[Sequence[float] | None]] | None:
        """What ``hybrid_search(query_vector=...)`` awaits for a search whose dense leg
        embeds ``texts``: their embeddings (computed ahead when they were, else now),
        summed, moved toward the stored vectors of the ``feedback`` passages the caller
        may read (:func:`retrieval.embedding.moved_toward`, which also normalises).

        Several texts are the parts of a composed question: the vector of "What is the
        seat of ?" plus that of "county where Van Hook Township is located" looks for
        both at once, and neither is the long question the batch would otherwise pad to.

        None when there is nothing to add: one text, the search's own query
        (``own_query``), not embedded ahead and no feedback; the search embeds it itself.
        """
        from retrieval.pipeline import dense_leg_query

        dense_texts = list(dict.fromkeys(dense_leg_query(t, options) for t in texts))
        if not dense_texts:
            raise ValueError("no text for the dense leg")
        entries = [self._vectors.get(t) for t in dense_texts]
        if own_query and not feedback and len(dense_texts) == 1:
            ahead = entries[0]
            # Embedded ahead, or None: the search embeds it (and reports a failure) itself.
            return None if ahead is None else functools.partial(_embedded_ahead, ahead)

        async def part(text: str, entry: Any) -> Sequence[float] | None:
            found = await _embedded_ahead(entry) if entry is not None else None
            return found if found is not None else await self._embed_now(text)

        async def vector() -> Sequence[float] | None:
            parts = await asyncio.gather(
                *(part(t, e) for t, e in zip(dense_texts, entries, strict=True))
            )
            if any(p is None for p in parts):
                return None  # no embedder: the search embeds (and reports) on its own
            base, *others = [p for p in parts if p is not None]
            stored_vectors = getattr(self.store, "vectors", None)
            if not others and (not feedback or stored_vectors is None):
                return base
            if feedback and stored_vectors is not None:
                stored = await engine_call(
                    self.store, "vectors", stored_vectors, list(feedback), self.flt
                )
                others += [stored[i] for i in dict.fromkeys(feedback) if i in stored]
            from retrieval.embedding import moved_toward

            return moved_toward(base, others)

        return vector

    async def _embed_now(self, text: str) -> Sequence[float] | None:
        embedder = getattr(self.store, "embedder", None)
        if embedder is None:
            return None
        from retrieval.pipeline import encode_queries

        return (await encode_queries(embedder, [text]))[0]

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
# Keyed by the store object itself (weakly), never by ``id(store)``: a closed store's id is
# reused by the next one opened, and its titles must not be served for another index.
_INDEX_CACHE: weakref.WeakKeyDictionary[Any, dict[SearchFilter, tuple[Any, TitleIndex]]] = (
    weakref.WeakKeyDictionary()
)
_CACHE_SIZE = 32  # caller filters per store


def _cached_index(store: Any, flt: SearchFilter, list_titles: Any) -> TitleIndex:
    version = _content_version(store)
    per_store = _INDEX_CACHE.setdefault(store, {})
    hit = per_store.get(flt)
    if hit is not None and version is not None and hit[0] == version:
        return hit[1]
    index = _MemoTitleIndex(list_titles(flt))
    linking = getattr(store, "linking_documents", None)
    if callable(linking):
        index.linking = linking(flt)
    if len(per_store) >= _CACHE_SIZE:
        per_store.pop(next(iter(per_store)))
    per_store[flt] = (version, index)
    return index


def _content_version(store: Any) -> Any:
    """The store's change counter (``store.version()``: bumped by every ingest, delete and
    ACL change), or None: then nothing is cached, because a stale title list could put a
    revoked document's title into a trace."""
    version = getattr(store, "version", None)
    return version() if callable(version) else None


async def _embedded_ahead(
    entry: tuple[asyncio.Future[list[list[float]]], int],
) -> Sequence[float] | None:
    """The vector of a batch embedded ahead; None if the batch failed."""
    batch, i = entry
    try:
        # shield: a timed-out or cancelled search must not cancel the shared batch
        vectors = await asyncio.shield(batch)
    except Exception:  # noqa: BLE001 - the caller embeds (and reports) on its own
        return None
    return vectors[i]
