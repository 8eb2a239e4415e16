"""What a tool call runs against: the store and the caller's scope, resolved once per run.

Scope and permissions are applied here, by the tools, never by a prompt: every store call
below receives ``flt``, the caller's filter, so an unauthorised record never leaves the
engine.
"""

from __future__ import annotations

from collections.abc import Sequence
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


# Building the index scans every title; reuse it while the store's content is unchanged.
_INDEX_CACHE: dict[tuple[int, SearchFilter], tuple[Any, TitleIndex]] = {}
_CACHE_SIZE = 32


def _cached_index(store: Any, flt: SearchFilter, list_titles: Any) -> TitleIndex:
    version = _content_version(store)
    key = (id(store), flt)
    hit = _INDEX_CACHE.get(key)
    if hit is not None and version is not None and hit[0] == version:
        return hit[1]
    index = TitleIndex(list_titles(flt))
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
