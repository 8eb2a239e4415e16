"""The event sink of one run: numbers events, stores them, streams them as they happen."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from graph.models import EventType, TraceEvent
from graph.trace_store import TraceStore

OnEvent = Callable[[TraceEvent], Awaitable[None]]


class EventSink:
    """Events are streamed (``on_event``) the moment they are emitted, and stored in one
    transaction per node: ``flush`` runs at the end of every node (``graph.nodes.traced``)
    and of the run. A process killed mid-node loses that node's stored events only; the
    resumed run runs the node again and emits them again (numbered after the stored ones).
    """

    def __init__(
        self, run_id: str, store: TraceStore | None = None, on_event: OnEvent | None = None
    ) -> None:
        self.run_id = run_id
        self.store = store
        self.on_event = on_event
        self._seq = store.next_seq(run_id) if store else 1
        self.events: list[TraceEvent] = []  # this process's events (tests, CLI)
        self._unstored: list[TraceEvent] = []

    async def emit(
        self, type: EventType, node: str | None = None, round: int = 0, **data: Any
    ) -> TraceEvent:
        event = TraceEvent(
            run_id=self.run_id,
            seq=self._seq,
            type=type,
            ts=time.time(),
            node=node,
            round=round,
            data=data,
        )
        self._seq += 1
        self.events.append(event)
        if self.store is not None:
            self._unstored.append(event)
        if self.on_event is not None:
            await self.on_event(event)
        return event

    def flush(self) -> None:
        """Store the events emitted since the last flush (one transaction)."""
        if self.store is not None and self._unstored:
            pending, self._unstored = self._unstored, []
            self.store.append_many(pending)
