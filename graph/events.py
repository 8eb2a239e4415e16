"""A run's trace events: emitted by nodes into LangGraph's ``custom`` stream, numbered and
stored by whoever consumes the stream (the runner's :class:`EventSink`).

A node's event is ``{"type", "node", "round", "ts", "data"}``; the consumer adds the run
id and the sequence number that make it a :class:`graph.models.TraceEvent`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.types import StreamWriter

from graph.models import EventType, TraceEvent
from graph.trace_store import TraceStore
from tools.telemetry import current_trace_id

OnEvent = Callable[[TraceEvent], Awaitable[None]]


def emit(
    writer: StreamWriter, type: EventType, node: str | None = None, round: int = 0, **data: Any
) -> None:
    writer({"type": type, "node": node, "round": round, "ts": time.time(), "data": data})


class EventSink:
    """Numbers a run's events, streams them (``on_event``) as they arrive, and stores them
    in one transaction per node: ``flush`` runs as each node's ``node_end`` is handled (the
    runner), before the node's update is checkpointed, and at the end of the run. A process
    killed mid-node stores none of that node's events; one killed after a node's end but
    before its checkpoint stored them, and the resumed run, which runs the node again,
    replaces them (``redo_before``): the trace holds each step once."""

    def __init__(
        self, run_id: str, store: TraceStore | None = None, on_event: OnEvent | None = None
    ) -> None:
        self.run_id = run_id
        self.store = store
        self.on_event = on_event
        self._seq = store.next_seq(run_id) if store else 1
        self.events: list[TraceEvent] = []  # this process's events (tests, CLI)
        self._unstored: list[TraceEvent] = []
        # A resumed run's first event: the stored events from the start of the step it
        # runs again up to here are its stopped attempt's, deleted as it starts that step.
        self.redo_before: int | None = None

    async def emit(
        self, type: EventType, node: str | None = None, round: int = 0, **data: Any
    ) -> TraceEvent:
        if type == "metadata":  # a run's (or a resume's) first event: where its trace is
            trace_id = current_trace_id()
            if trace_id is not None:
                data.setdefault("trace_id", trace_id)
        return await self.add(
            {"type": type, "node": node, "round": round, "ts": time.time(), "data": data}
        )

    async def add(self, emitted: dict[str, Any]) -> TraceEvent:
        """An event a node emitted (:func:`emit`), numbered, streamed and kept to store."""
        event = TraceEvent(run_id=self.run_id, seq=self._seq, **emitted)
        self._seq += 1
        if self.redo_before is not None and event.type == "node_start" and event.node:
            before, self.redo_before = self.redo_before, None  # only the first step redone
            if self.store is not None:
                self.store.replace_redone(self.run_id, event.node, event.round, before)
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
