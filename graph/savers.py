"""LangGraph's own savers for the research graph: SQLite (a file beside the index) or
Postgres (``WAYPOINT_CHECKPOINT_URL``), one per event loop, shared by every run on it.

A connection per run made concurrent runs race on SQLite's schema setup and write lock;
one connection serialises this process's writes through the saver's lock. WAL lets
readers (``waypoint trace``, another process) read while it writes; ``busy_timeout``
makes a writer in another process wait for the lock instead of failing.

Both savers' connections are bound to the loop that opened them. A Researcher used from
several loops (tests, ``asyncio.run`` per CLI command) gets a saver per loop; the savers
of loops that have since closed are stopped when the next one opens.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

log = logging.getLogger(__name__)


@dataclass
class _Opened:
    saver: Any
    stack: contextlib.AsyncExitStack
    stop: Callable[[], object] | None = None  # closes the connection without its loop


class Savers:
    def __init__(self, path: Path, url: str | None = None, busy_timeout_s: float = 30.0) -> None:
        self.path = path
        self.url = url
        self.busy_timeout_s = busy_timeout_s
        self._opening: dict[asyncio.AbstractEventLoop, asyncio.Task[_Opened]] = {}

    async def saver(self) -> Any:
        """This loop's saver, opened on first use (concurrent first callers share it)."""
        loop = asyncio.get_running_loop()
        for closed in [lp for lp in self._opening if lp.is_closed()]:
            self._stop(closed)
        task = self._opening.get(loop)
        if task is None:
            task = self._opening[loop] = loop.create_task(self._open())
        try:
            # shield: a cancelled run must not cancel the opening every other run awaits
            return (await asyncio.shield(task)).saver
        except Exception:
            if task.done() and self._opening.get(loop) is task:
                del self._opening[loop]  # a failed open is retried by the next run
            raise

    async def aclose(self) -> None:
        """Close this loop's saver properly and stop the others."""
        task = self._opening.pop(asyncio.get_running_loop(), None)
        self.close()
        if task is not None:
            with contextlib.suppress(Exception):  # it never opened: nothing to close
                await (await task).stack.aclose()

    def close(self) -> None:
        """Stop every saver this object opened on other loops (no loop needed)."""
        for loop in list(self._opening):
            self._stop(loop)

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
        saver = await stack.enter_async_context(AsyncPostgresSaver.from_conn_string(url))
        await saver.setup()
        return saver

    async def _open_sqlite(self, stack: contextlib.AsyncExitStack) -> _Opened:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(str(self.path), timeout=self.busy_timeout_s)
        stack.push_async_callback(conn.close)
        await conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
        await conn.execute("PRAGMA journal_mode = WAL")
        # WAL + NORMAL: a commit survives a process kill (not a power cut) without an fsync
        await conn.execute("PRAGMA synchronous = NORMAL")
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        stack.push_async_callback(_close_between_writes, saver, conn)
        return _Opened(saver, stack, stop=lambda: _close_without_its_loop(conn))

    def _stop(self, loop: asyncio.AbstractEventLoop) -> None:
        task = self._opening.pop(loop)
        if not task.done() or task.cancelled() or task.exception() is not None:
            return  # never opened (or still opening on a loop that is gone)
        opened = task.result()
        if opened.stop is None:
            log.warning("a checkpointer of a closed event loop was dropped without closing")
            return
        opened.stop()


async def _close_between_writes(saver: AsyncSqliteSaver, conn: aiosqlite.Connection) -> None:
    """Close once no checkpoint write is halfway, its transaction rolled back. LangGraph
    does not cancel a run's checkpoint writes with the run: one may still be running, its
    INSERT done and its commit not, and closing under it leaves the connection open (a
    statement of the write is still held: SQLite's close_v2) with the file's write lock,
    so the next saver on the file waits ``busy_timeout`` at its first write."""
    async with saver.lock:
        await _roll_back_and_close(conn)


async def _roll_back_and_close(conn: aiosqlite.Connection) -> None:
    with contextlib.suppress(sqlite3.Error, ValueError):  # nothing to roll back, or closed
        await conn.rollback()
    await conn.close()


def _close_without_its_loop(conn: aiosqlite.Connection) -> None:
    """Close an aiosqlite connection from outside the loop that opened it, and wait: on a
    loop of a thread of our own (the connection's worker reports each step to the loop
    that asked, which must outlive it; this thread's may be closing or gone)."""
    closer = threading.Thread(
        target=asyncio.run, args=(_roll_back_and_close(conn),), name="saver-close"
    )
    closer.start()
    closer.join()
