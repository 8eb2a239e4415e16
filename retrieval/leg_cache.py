"""A dense leg shared by the searches of one research run that ask the same thing.

A research round often runs two searches with one dense query: a rewritten question and
its own inner description both seek meaning near the same frame and the same feedback
passage, and two bridge candidates read off one passage do too (MuSiQue: 222 of 743
dense legs repeated one of their run's). Their lexical legs differ, their dense legs
return the same ranking, so the later search awaits the earlier one's.

What is shared is the ranking only: ids, document ids, scores. Each search reads the
records it shows itself, under its own loader (:class:`retrieval.engines.base.
RecordLoader`), so a record changed or revoked since the shared query is dropped by
every search that would show it, as it is without sharing. A leg whose hits carry records
read with the query (not deferred) is not shared at all. The key holds the store's content
version (an ingest, a delete, an ACL change, in any process, bumps it), the query
vector's bytes, the depth and the filter: a search after a change queries again.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable, Hashable, Sequence

from retrieval.engines.base import DeferredHit, Hit, RecordLoader, SearchFilter

LegKey = tuple[Hashable, bytes, int, SearchFilter]


def leg_key(version: Hashable, vector: Sequence[float], depth: int, flt: SearchFilter) -> LegKey:
    return (version, struct.pack(f"{len(vector)}d", *vector), depth, flt)


class DenseLegCache:
    """One per :class:`tools.context.ToolContext` (a research run's; an MCP server's for
    its life), never shared between callers: the key holds the caller's filter. Bounded by
    ``max_entries`` (first in, first out); a leg that failed is forgotten, so a later
    search runs it again."""

    def __init__(self, max_entries: int = 256) -> None:
        self.max_entries = max_entries
        self._legs: dict[LegKey, asyncio.Task[list[Hit]]] = {}
        self.shared = 0  # searches that took an earlier search's ranking

    async def hits(self, key: LegKey, search: Callable[[], Awaitable[list[Hit]]]) -> list[Hit]:
        task = self._legs.get(key)
        if task is None:
            if len(self._legs) >= self.max_entries:
                self._legs.pop(next(iter(self._legs)))
            task = asyncio.ensure_future(search())
            task.add_done_callback(lambda done: self._forget_unshareable(key, done))
            self._legs[key] = task
            # shield: a search that times out stops waiting; the leg goes on for the others.
            # The hits' own loader is this search's: a later one reads through a fresh one.
            return list(await asyncio.shield(task))
        found = await asyncio.shield(task)
        if not _deferred(found):
            return list(await search())  # records read with the query: query them afresh
        self.shared += 1
        return _with_own_loader(found)

    def _forget_unshareable(self, key: LegKey, task: asyncio.Task[list[Hit]]) -> None:
        if task.cancelled() or task.exception() is not None or not _deferred(task.result()):
            if self._legs.get(key) is task:
                del self._legs[key]


def _deferred(hits: list[Hit]) -> bool:
    return all(isinstance(h, DeferredHit) for h in hits)


def _with_own_loader(hits: list[Hit]) -> list[Hit]:
    """The hits, each deferred one reading its record through a loader of a later search's
    own (one per loader of the shared hits: one fetch call per search, as unshared)."""
    loaders: dict[int, RecordLoader] = {}
    out: list[Hit] = []
    for hit in hits:
        if isinstance(hit, DeferredHit):
            loader = loaders.get(id(hit.loader))
            if loader is None:
                loader = loaders[id(hit.loader)] = hit.loader.fresh()
            hit = DeferredHit(hit.id, hit.doc_id, loader, hit.score, hit.rank, hit.leg)
        out.append(hit)
    return out
