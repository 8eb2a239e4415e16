"""One checkpointer per Researcher per event loop, shared by every run on that loop.

A connection per run made concurrent runs race on SQLite's schema setup and write lock
(``database is locked`` under 20 concurrent answers). One connection serialises this
process's writes through the saver's own lock; WAL lets readers (``waypoint trace``,
another process) read while it writes; ``busy_timeout`` makes a writer in another process
wait for the lock instead of failing.

A Researcher used from several loops (tests, ``asyncio.run`` per command) gets a saver per
loop (the Postgres saver's connection is bound to its loop); savers of loops that have
since closed are stopped when the next one opens.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from graph.trace_store import WalCheckpoints

log = logging.getLogger(__name__)

CheckpointEvery = Literal["round", "step"]
# The steps a run is durable at when it checkpoints once a round: the input (LangGraph's
# input checkpoint, then the step that applies it), the end of each round (assess wrote
# its verdict) and the end of the run (synthesize wrote the result).
_ROUND_END_CHANNELS = frozenset({"question", "verdicts", "result"})
_OPEN_THREADS = 4096  # threads with skipped checkpoints remembered at once


def ends_a_round(checkpoint: Checkpoint, metadata: CheckpointMetadata) -> bool:
    """Whether a checkpoint is one a run resumes from when it checkpoints once a round.

    The ones LangGraph takes inside a round (before execute, fuse, rerank and assess) are
    not: a run killed there resumes from the end of its last finished round, and redoes
    only the unfinished round's retrieval (its plan's writes are kept, see
    :class:`RoundDurability`). A checkpoint that does not say which channels it updated
    (an older format) is kept.
    """
    updated = checkpoint.get("updated_channels")
    return (
        metadata.get("source") == "input"
        or updated is None
        or not _ROUND_END_CHANNELS.isdisjoint(updated)
    )


@dataclass
class _Skipping:
    """A thread's checkpoints skipped since its last stored one (``head``; None: none)."""

    head: str | None
    skipped: set[str]


class RoundDurability:
    """Which of a run's checkpoints and writes a saver stores when it keeps one a round.

    A skipped checkpoint still gets its id (LangGraph carries the run on in memory); the
    next stored one names the last stored one as its parent, so a thread's history is a
    chain of stored checkpoints. A task's writes are stored unless the task ran from a
    checkpoint this saver skipped: the plan node's are (it runs from the end of a round,
    and a resumed run does not plan that round again).

    Only ids this object skipped are rewritten or dropped: a checkpoint another process
    stored, or one a caller forks from, is taken as stored. Made for LangGraph's
    ``durability="sync"`` (what the runner uses), a graph without interrupts or subgraphs
    (an interrupt inside a round would be written to a skipped checkpoint).

    ``every="step"`` stores every checkpoint and every write, as LangGraph's savers do.
    """

    def __init__(self, every: CheckpointEvery = "round") -> None:
        self.every = every
        # thread -> the checkpoints skipped since its last stored one (bounded: an entry
        # ends when the thread's next checkpoint is stored)
        self._open: dict[tuple[str, str], _Skipping] = {}

    @staticmethod
    def thread(config: RunnableConfig) -> tuple[str, str]:
        conf = config["configurable"]
        return str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))

    def skip(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> RunnableConfig | None:
        """The config LangGraph continues with, when this checkpoint is not stored."""
        if self.every == "step" or ends_a_round(checkpoint, metadata):
            return None
        thread = self.thread(config)
        parent = config["configurable"].get("checkpoint_id")
        open_ = self._open.get(thread)
        if open_ is None or parent not in open_.skipped:  # its parent is a stored one
            open_ = _Skipping(head=None if parent is None else str(parent), skipped=set())
            self._open.pop(thread, None)  # re-inserted last: the oldest is evicted first
            if len(self._open) >= _OPEN_THREADS:
                del self._open[next(iter(self._open))]
            self._open[thread] = open_
        open_.skipped.add(str(checkpoint["id"]))
        return {
            "configurable": {
                "thread_id": thread[0],
                "checkpoint_ns": thread[1],
                "checkpoint_id": checkpoint["id"],
            }
        }

    def parent(self, config: RunnableConfig) -> RunnableConfig:
        """``config`` naming the last stored checkpoint as the parent."""
        open_ = self._open.get(self.thread(config))
        parent = config["configurable"].get("checkpoint_id")
        if open_ is None or parent not in open_.skipped:
            return config
        conf = {k: v for k, v in config["configurable"].items() if k != "checkpoint_id"}
        if open_.head is not None:
            conf["checkpoint_id"] = open_.head
        return {**config, "configurable": conf}

    def stored(self, config: RunnableConfig) -> None:
        self._open.pop(self.thread(config), None)

    def keeps_writes(self, config: RunnableConfig) -> bool:
        open_ = self._open.get(self.thread(config))
        return open_ is None or config["configurable"].get("checkpoint_id") not in open_.skipped

    def forget(self, thread_id: str) -> None:
        for key in [k for k in self._open if k[0] == thread_id]:
            del self._open[key]


_BLOBS = """
CREATE TABLE IF NOT EXISTS checkpoint_blobs (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL,
    version TEXT NOT NULL,
    type TEXT NOT NULL,
    blob BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
)
"""
_KNOWN_THREADS = 256  # threads whose stored channel versions are remembered


class LoopSqliteSaver(SqliteSaver):
    """LangGraph's SQLite saver, its async methods run straight on the event loop, each
    channel value stored once per version.

    A checkpoint write is one small WAL commit (no fsync): well under a millisecond, less
    than the several thread hand-offs (execute, commit, cursor close) ``AsyncSqliteSaver``
    makes through aiosqlite's worker for every write, each a wait for a scheduler slot on
    a busy machine. The graph runs with ``durability="sync"``, so each super-step waits
    for its checkpoint either way: here the wait is the write itself. The trade-off: a
    write that waits for another process's write lock (``busy_timeout``) holds the loop;
    writers hold that lock for a commit's length.

    ``SqliteSaver`` writes every channel's value into every checkpoint: the whole evidence
    pool again at each of a run's ~20 super-steps, though only fuse changes it. Here, as
    LangGraph's Postgres saver does, a channel's value is written once per version (table
    ``checkpoint_blobs``, in the same transaction as its checkpoint) and a checkpoint row
    keeps its channel versions only; reading puts the values back. Rows written with the
    values inline (by ``AsyncSqliteSaver``, before this saver) are read as they are, and a
    run resumed from one stores its values on its next checkpoint.

    ``wal``: the WAL checkpoints of ``conn``'s database run in a background thread
    (:class:`graph.trace_store.WalCheckpoints`), not in a commit on the loop.

    ``every``: ``"round"`` (the default) stores a run's checkpoints at its start and at the
    end of each round only (:class:`RoundDurability`); ``"step"`` stores every one.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        serde: Any = None,
        wal: WalCheckpoints | None = None,
        every: CheckpointEvery = "round",
    ) -> None:
        super().__init__(conn, serde=serde)
        self.durability = RoundDurability(every)
        # thread -> (channel, version) pairs already in checkpoint_blobs (a bounded cache)
        self._known: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self.wal = wal
        if wal is not None:
            WalCheckpoints.disable_auto(conn)

    def setup(self) -> None:
        if self.is_setup:
            return
        super().setup()
        self.conn.execute(_BLOBS)
        self.conn.commit()

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        skipped = self.durability.skip(config, checkpoint, metadata)
        if skipped is not None:
            return skipped
        config = self.durability.parent(config)
        thread = (str(config["configurable"]["thread_id"]), config["configurable"]["checkpoint_ns"])
        # Every channel version not stored yet, those the skipped checkpoints made included.
        # A checkpoint with no parent starts its thread: nothing of it is stored yet.
        starts = not config["configurable"].get("checkpoint_id")
        known = self._stored_versions(thread, new_thread=starts)
        versions = checkpoint["channel_versions"]
        rows = [
            (*thread, channel, str(versions[channel]), *self.serde.dumps_typed(value))
            for channel, value in checkpoint["channel_values"].items()
            if channel in versions and (channel, str(versions[channel])) not in known
        ]
        inline = {c: v for c, v in checkpoint["channel_values"].items() if c not in versions}
        with self.cursor(transaction=False) as cur:  # committed with the checkpoint below
            cur.executemany(
                "INSERT OR REPLACE INTO checkpoint_blobs "
                "(thread_id, checkpoint_ns, channel, version, type, blob) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
        saved = super().put(
            config, {**checkpoint, "channel_values": inline}, metadata, new_versions
        )
        known.update((row[2], row[3]) for row in rows)
        self.durability.stored(config)
        self._committed()
        return saved

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not self.durability.keeps_writes(config):
            return
        super().put_writes(config, writes, task_id, task_path)
        self._committed()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = super().get_tuple(config)
        return self._with_values(found) if found is not None else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        # Read the rows first: the parent's generator holds the saver's lock between items.
        for found in [*super().list(config, filter=filter, before=before, limit=limit)]:
            yield self._with_values(found)

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)
        with self.cursor() as cur:
            cur.execute("DELETE FROM checkpoint_blobs WHERE thread_id = ?", (str(thread_id),))
        for key in [k for k in self._known if k[0] == str(thread_id)]:
            del self._known[key]
        self.durability.forget(str(thread_id))

    # -- internals --

    def _committed(self) -> None:
        if self.wal is not None:
            with self.lock:  # the saver's lock: no write of another thread is in progress
                self.wal.committed(self.conn)

    def _stored_versions(
        self, thread: tuple[str, str], new_thread: bool = False
    ) -> set[tuple[str, str]]:
        """(channel, version) pairs of this thread already in checkpoint_blobs (none for
        ``new_thread``, which is not read: every run starts one)."""
        known = self._known.get(thread)
        if known is None:
            known = set() if new_thread else self._read_versions(thread)
            if len(self._known) >= _KNOWN_THREADS:
                del self._known[next(iter(self._known))]  # the oldest
            self._known[thread] = known
        return known

    def _read_versions(self, thread: tuple[str, str]) -> set[tuple[str, str]]:
        with self.cursor(transaction=False) as cur:
            cur.execute(
                "SELECT channel, version FROM checkpoint_blobs "
                "WHERE thread_id = ? AND checkpoint_ns = ?",
                thread,
            )
            return {(c, v) for c, v in cur.fetchall()}

    def _with_values(self, found: CheckpointTuple) -> CheckpointTuple:
        checkpoint = found.checkpoint
        values = dict(checkpoint["channel_values"])
        missing = [
            (c, str(v)) for c, v in checkpoint["channel_versions"].items() if c not in values
        ]
        if not missing:
            return found
        thread = (
            str(found.config["configurable"]["thread_id"]),
            found.config["configurable"].get("checkpoint_ns", ""),
        )
        with self.cursor(transaction=False) as cur:
            for channel, version in missing:
                cur.execute(
                    "SELECT type, blob FROM checkpoint_blobs WHERE thread_id = ? "
                    "AND checkpoint_ns = ? AND channel = ? AND version = ?",
                    (*thread, channel, version),
                )
                row = cur.fetchone()
                if row is not None:
                    values[channel] = self.serde.loads_typed((row[0], row[1]))
        return found._replace(checkpoint={**checkpoint, "channel_values": values})

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)


@dataclass
class _Opened:
    saver: Any
    stack: contextlib.AsyncExitStack
    # Closes the connection without a running loop (SQLite: a plain close).
    stop: Callable[[], object] | None = None


def _round_durable_postgres(base: type[Any], every: CheckpointEvery) -> type[Any]:
    """LangGraph's async Postgres saver storing what :class:`RoundDurability` keeps."""

    class RoundDurablePostgresSaver(base):  # type: ignore[misc, valid-type]
        durability = RoundDurability(every)

        async def aput(
            self,
            config: RunnableConfig,
            checkpoint: Checkpoint,
            metadata: CheckpointMetadata,
            new_versions: ChannelVersions,
        ) -> RunnableConfig:
            skipped = self.durability.skip(config, checkpoint, metadata)
            if skipped is not None:
                return skipped
            # It writes the values of new_versions only: once a round, every channel's
            # current version (those the skipped steps changed among them; a blob already
            # stored is left as it is: ON CONFLICT DO NOTHING).
            if self.durability.every == "round":
                new_versions = dict(checkpoint["channel_versions"])
            saved: RunnableConfig = await super().aput(
                self.durability.parent(config), checkpoint, metadata, new_versions
            )
            self.durability.stored(config)
            return saved

        async def aput_writes(
            self,
            config: RunnableConfig,
            writes: Sequence[tuple[str, Any]],
            task_id: str,
            task_path: str = "",
        ) -> None:
            if self.durability.keeps_writes(config):
                await super().aput_writes(config, writes, task_id, task_path)

        async def adelete_thread(self, thread_id: str) -> None:
            await super().adelete_thread(thread_id)
            self.durability.forget(str(thread_id))

    return RoundDurablePostgresSaver


class Checkpoints:
    def __init__(
        self,
        path: Path,
        url: str | None = None,
        busy_timeout_s: float = 30.0,
        every: CheckpointEvery = "round",
    ) -> None:
        self.path = path
        self.url = url
        self.busy_timeout_s = busy_timeout_s
        self.every = every
        self._opening: dict[asyncio.AbstractEventLoop, asyncio.Task[_Opened]] = {}

    async def saver(self) -> Any:
        """This loop's saver, opened on first use (concurrent first callers share it)."""
        loop = asyncio.get_running_loop()
        self._stop_closed_loops()
        task = self._opening.get(loop)
        if task is None:
            task = loop.create_task(self._open())
            self._opening[loop] = task
        try:
            # shield: a cancelled run must not cancel the opening every other run awaits.
            opened = await asyncio.shield(task)
        except Exception:
            if task.done() and self._opening.get(loop) is task:
                del self._opening[loop]  # a failed open is retried by the next run
            raise
        return opened.saver

    async def aclose(self) -> None:
        """Close this loop's saver properly and stop the others."""
        loop = asyncio.get_running_loop()
        task = self._opening.pop(loop, None)
        self.close()
        if task is not None:
            opened = await _result_or_none(task)
            if opened is not None:
                await opened.stack.aclose()

    def close(self) -> None:
        """Stop every saver this object opened on other loops (no loop needed)."""
        for loop in list(self._opening):
            self._stop(loop)

    # -- internals --

    async def _open(self) -> _Opened:
        stack = contextlib.AsyncExitStack()
        try:
            if self.url:
                return _Opened(await self._open_postgres(stack, self.url), stack)
            return await self._open_sqlite(stack)
        except BaseException:
            await stack.aclose()
            raise

    async def _open_postgres(self, stack: contextlib.AsyncExitStack, url: str) -> Any:
        try:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        except ImportError as exc:
            raise RuntimeError(
                "WAYPOINT_CHECKPOINT_URL needs the optional dependency "
                "langgraph-checkpoint-postgres (pip install 'waypoint[postgres]')"
            ) from exc
        saver_class = _round_durable_postgres(AsyncPostgresSaver, self.every)
        saver = await stack.enter_async_context(saver_class.from_conn_string(url))
        await saver.setup()
        return saver

    async def _open_sqlite(self, stack: contextlib.AsyncExitStack) -> _Opened:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout_s, check_same_thread=False)
        wal = WalCheckpoints(self.path, busy_timeout_s=self.busy_timeout_s)
        stack.callback(conn.close)
        stack.callback(wal.join)  # runs first: the checkpoint ends before the close
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        # WAL + NORMAL: a commit is durable against a process kill (not a power cut) and
        # costs no fsync, which matters with every node of every run checkpointing.
        conn.execute("PRAGMA synchronous = NORMAL")
        saver = LoopSqliteSaver(conn, wal=wal, every=self.every)
        saver.setup()

        def stop() -> None:
            wal.join()
            conn.close()

        return _Opened(saver, stack, stop=stop)

    def _stop_closed_loops(self) -> None:
        for loop in [lp for lp in self._opening if lp.is_closed()]:
            self._stop(loop)

    def _stop(self, loop: asyncio.AbstractEventLoop) -> None:
        task = self._opening.pop(loop)
        if not task.done() or task.cancelled() or task.exception() is not None:
            return  # never opened (or still opening on a loop that is gone): nothing to stop
        opened = task.result()
        if opened.stop is None:
            log.warning("a checkpointer of a closed event loop was dropped without closing")
            return
        opened.stop()


async def _result_or_none(task: asyncio.Task[_Opened]) -> _Opened | None:
    try:
        return await task
    except Exception:  # noqa: BLE001 - it failed to open: there is nothing to close
        return None
