"""One checkpointer per Researcher per event loop, shared by every run on that loop.

A connection per run made concurrent runs race on SQLite's schema setup and write lock
(``database is locked`` under 20 concurrent answers). One aiosqlite connection serialises
this process's writes through the saver's own lock; WAL lets readers (``waypoint trace``,
another process) read while it writes; ``busy_timeout`` makes a writer in another process
wait for the lock instead of failing.

The saver is bound to the loop that opened it (aiosqlite futures, the saver's asyncio.Lock),
so a Researcher used from several loops (tests, ``asyncio.run`` per command) gets one per
loop; savers of loops that have since closed are stopped when the next one opens.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class _Opened:
    saver: Any
    stack: contextlib.AsyncExitStack
    # Closes the connection without a running loop (SQLite: its worker thread does it).
    stop: Callable[[], object] | None = None


class Checkpoints:
    def __init__(self, path: Path, url: str | None = None, busy_timeout_s: float = 30.0) -> None:
        self.path = path
        self.url = url
        self.busy_timeout_s = busy_timeout_s
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
        saver = await stack.enter_async_context(AsyncPostgresSaver.from_conn_string(url))
        await saver.setup()
        return saver

    async def _open_sqlite(self, stack: contextlib.AsyncExitStack) -> _Opened:
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = aiosqlite.connect(str(self.path), timeout=self.busy_timeout_s)
        # A forgotten close must not keep the interpreter alive at exit (the worker thread
        # is not a daemon by default); SQLite's journal keeps an interrupted write safe.
        worker = getattr(conn, "_thread", None)
        if worker is not None:
            worker.daemon = True
        conn = await stack.enter_async_context(conn)
        await conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
        await conn.execute("PRAGMA journal_mode = WAL")
        # WAL + NORMAL: a commit is durable against a process kill (not a power cut) and
        # costs no fsync, which matters with every node of every run checkpointing.
        await conn.execute("PRAGMA synchronous = NORMAL")
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        return _Opened(saver, stack, stop=conn.stop)

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
        with warnings.catch_warnings():
            # aiosqlite's stop() asks for the current loop; outside one, 3.11 warns.
            warnings.simplefilter("ignore", DeprecationWarning)
            opened.stop()


async def _result_or_none(task: asyncio.Task[_Opened]) -> _Opened | None:
    try:
        return await task
    except Exception:  # noqa: BLE001 - it failed to open: there is nothing to close
        return None
