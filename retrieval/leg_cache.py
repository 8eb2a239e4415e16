"""A dense leg shared by the searches of one research run that ask the same thing.

A research round often runs two searches with one dense query: a rewritten question and
its own inner description both seek meaning near the same frame and the same feedback
passage, and two bridge candidates read off one passage do too (MuSiQue: 222 of 743
dense legs repeated one of their run's). Their lexical legs differ, their dense legs
return the same hits, so the later search awaits the earlier one's.

The key is the store's content version, the query vector's bytes, the depth and the
filter. Any change of the content (an ingest, a delete, an ACL change, in any process)
bumps the version, so a shared leg is exactly what the engine would have returned. The
hits are shared too, and with them their deferred records: one fetched for an earlier
search is not fetched again.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable, Hashable, Sequence

from retrieval.engines.base import Hit, SearchFilter

LegKey = tuple[Hashable, bytes, int, SearchFilter]


def leg_key(version: Hashable, vector: Sequence[float], depth: int, flt: SearchFilter) -> LegKey:
    return (version, struct.pack(f"{len(vector)}d", *vector), depth, flt)


class DenseLegCache:
    """Per run (``tools.context.ToolContext``), never shared between callers: the key
    holds the caller's filter, but a run's cache also dies with the run. Bounded by
    ``max_entries``; a leg that failed is forgotten, so a later search runs it again."""

    def __init__(self, max_entries: int = 256) -> None:
        self.max_entries = max_entries
        self._legs: dict[LegKey, asyncio.Task[list[Hit]]] = {}
        self.shared = 0  # searches that awaited an earlier search's leg

    async def hits(self, key: LegKey, search: Callable[[], Awaitable[list[Hit]]]) -> list[Hit]:
        task = self._legs.get(key)
        if task is None:
            if len(self._legs) >= self.max_entries:
                self._legs.pop(next(iter(self._legs)))
            task = asyncio.ensure_future(search())
            task.add_done_callback(lambda done: self._forget_failed(key, done))
            self._legs[key] = task
        else:
            self.shared += 1
        # shield: a search that times out stops waiting; the leg goes on for the others
        return list(await asyncio.shield(task))

    def _forget_failed(self, key: LegKey, task: asyncio.Task[list[Hit]]) -> None:
        if task.cancelled() or task.exception() is not None:
            if self._legs.get(key) is task:
                del self._legs[key]
