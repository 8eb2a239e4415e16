"""Runs and their trace events, persisted beside the checkpoints (SQLite, one file).

Writes are small and synchronous, one short transaction each (a node's events go in one:
``append_many``); a lock keeps them safe from the worker threads the tools use. WAL lets
readers (``waypoint trace``, the HTTP layer, another process) read while a run writes, and
``busy_timeout`` makes a writer in another process wait for the write lock instead of
failing with ``database is locked``. WAL checkpoints run in a background thread
(:class:`WalCheckpoints`), not in the writing one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from graph.models import TraceEvent

log = logging.getLogger(__name__)

_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS


def _dumps(value: Any) -> str:
    """JSON text of an event's data, a run's input or result, by orjson: a tool_result
    event's data takes 2.4 us against 18 us with ``json.dumps`` here, and the research
    loop stores its events on its event loop, a node at a time. Anything JSON lacks is
    written as its ``str``; NaN and infinities as null (valid JSON for every reader, where
    ``json.dumps`` writes NaN). An integer past 64 bits is beyond orjson (events and results
    carry values that callers and connectors handed in, such as a record's entities): such a
    value is written by ``json.dumps``, exactly, as before."""
    try:
        return orjson.dumps(value, default=str, option=_JSON_OPTIONS).decode("utf-8")
    except TypeError:  # orjson.JSONEncodeError: an int past 64 bits, or a key json refuses
        return json.dumps(value, default=str)


class WalCheckpoints:
    """SQLite's automatic WAL checkpoint, moved out of the thread that commits.

    SQLite checkpoints the WAL into the database file on the commit that takes it past
    1,000 pages, in the committing connection: with ``synchronous=NORMAL`` that is the
    only step that fsyncs, 15-25 ms here, and the research loop commits on its event loop
    (a node's events, each checkpoint), so every few questions one node took that long.
    The writer's connection is set to ``wal_autocheckpoint=0`` and calls :meth:`committed`
    after each commit; every ``every`` commits a thread checkpoints the WAL (PASSIVE, its
    own connection: it waits for no writer and no writer waits for it). The WAL stays
    bounded: while a checkpoint is still running when the next is due, or when the last
    one failed (logged), the committing connection checkpoints itself, as SQLite would.
    Durability is unchanged: a commit is in the WAL either way.
    """

    def __init__(self, path: Path, every: int = 200, busy_timeout_s: float = 30.0) -> None:
        self.path = path
        self.every = every
        self.busy_timeout_s = busy_timeout_s
        self._commits = 0
        self._thread: threading.Thread | None = None
        self._failed: BaseException | None = None
        self.done = 0  # background checkpoints completed (tests, benchmarks)

    @staticmethod
    def disable_auto(conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA wal_autocheckpoint = 0")

    def committed(self, conn: sqlite3.Connection) -> None:
        """Count a commit of ``conn`` (the writer); checkpoint when one is due."""
        self._commits += 1
        if self._commits < self.every:
            return
        self._commits = 0
        running = self._thread is not None and self._thread.is_alive()
        if running or self._failed is not None:
            self._failed = None  # this checkpoint raises on its own if the cause persists
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            return
        self._thread = threading.Thread(target=self._checkpoint, name="wal-checkpoint", daemon=True)
        self._thread.start()

    def join(self) -> None:
        """Wait for a running checkpoint (before the writer's connection closes)."""
        thread = self._thread
        if thread is not None:
            thread.join()

    def _checkpoint(self) -> None:
        try:
            conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout_s)
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            finally:
                conn.close()
        except Exception as exc:  # reported here; the writer checkpoints itself next time
            log.warning("background WAL checkpoint of %s failed: %s", self.path, exc)
            self._failed = exc
        else:
            self.done += 1


_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    question TEXT NOT NULL,
    created REAL NOT NULL,
    status TEXT NOT NULL,
    input TEXT NOT NULL,
    result TEXT
);
CREATE INDEX IF NOT EXISTS runs_user ON runs(user, created);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    ts REAL NOT NULL,
    node TEXT,
    round INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""


_DELETE_BATCH = 500  # runs deleted per transaction: a long pass never holds the lock long


class TraceStore:
    def __init__(self, path: Path, busy_timeout_s: float = 30.0) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=busy_timeout_s)
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        self._db.execute("PRAGMA journal_mode=WAL")
        # A commit per node's events: in WAL mode NORMAL skips the fsync per commit and
        # stays consistent after a process kill.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._wal = WalCheckpoints(path, busy_timeout_s=busy_timeout_s)
        WalCheckpoints.disable_auto(self._db)
        self._lock = threading.Lock()

    def close(self) -> None:
        self._wal.join()
        with self._lock:
            self._db.close()

    def create_run(self, run_id: str, user: str, question: str, run_input: dict[str, Any]) -> None:
        with self._write():
            self._db.execute(
                "INSERT INTO runs (run_id, user, question, created, status, input) "
                "VALUES (?, ?, ?, ?, 'running', ?)",
                (run_id, user, question, time.time(), _dumps(run_input)),
            )

    def run_input(self, run_id: str) -> dict[str, Any] | None:
        row = self._one("SELECT input FROM runs WHERE run_id = ?", (run_id,))
        return json.loads(row[0]) if row else None

    def finish_run(self, run_id: str, status: str, result: dict[str, Any] | None) -> None:
        with self._write():
            self._db.execute(
                "UPDATE runs SET status = ?, result = ? WHERE run_id = ?",
                (status, _dumps(result) if result is not None else None, run_id),
            )

    def set_status(self, run_id: str, status: str) -> None:
        with self._write():
            self._db.execute("UPDATE runs SET status = ? WHERE run_id = ?", (status, run_id))

    def result(self, run_id: str) -> dict[str, Any] | None:
        row = self._one("SELECT result FROM runs WHERE run_id = ?", (run_id,))
        return json.loads(row[0]) if row and row[0] else None

    def list_runs(self, user: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT run_id, question, created, status FROM runs WHERE user = ? "
                "ORDER BY created DESC",
                (user,),
            ).fetchall()
        return [
            dict(zip(("run_id", "question", "created", "status"), r, strict=True)) for r in rows
        ]

    def ended_before(self, before: float) -> list[str]:
        """Runs created before ``before`` (epoch seconds) that no longer wait for anyone: a
        run paused for review stays, whatever its age (a run lasts hours at most)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT run_id FROM runs WHERE created < ? AND status <> 'input_required'",
                (before,),
            ).fetchall()
        return [r[0] for r in rows]

    def delete_runs(self, run_ids: list[str]) -> int:
        """Delete runs and their events; the number of runs deleted."""
        deleted = 0
        for at in range(0, len(run_ids), _DELETE_BATCH):
            ids = run_ids[at : at + _DELETE_BATCH]
            marks = ", ".join("?" for _ in ids)
            with self._write():
                self._db.execute(f"DELETE FROM events WHERE run_id IN ({marks})", ids)
                deleted += self._db.execute(
                    f"DELETE FROM runs WHERE run_id IN ({marks})", ids
                ).rowcount
        return deleted

    def next_seq(self, run_id: str) -> int:
        row = self._one("SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = ?", (run_id,))
        return int(row[0]) + 1 if row else 1

    def append(self, event: TraceEvent) -> None:
        self.append_many([event])

    def append_many(self, events: list[TraceEvent]) -> None:
        """Store events in one transaction (a node's events: one commit, not one each)."""
        rows = [(e.run_id, e.seq, e.type, e.ts, e.node, e.round, _dumps(e.data)) for e in events]
        with self._write():
            self._db.executemany(
                "INSERT INTO events (run_id, seq, type, ts, node, round, data) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def replace_redone(self, run_id: str, node: str, round_no: int, before: int) -> int:
        """A resumed run starts again with ``node`` of round ``round_no``: the events the
        stopped attempt stored from that node's start on (up to ``before``, the resume's
        own first event) are about to be emitted again, so they are deleted; the count
        deleted. Nothing is deleted when the stopped attempt stored no such start."""
        with self._write():
            return self._db.execute(
                "DELETE FROM events WHERE run_id = ? AND seq < ? AND seq >= ("
                " SELECT MIN(seq) FROM events WHERE run_id = ? AND seq < ?"
                " AND type = 'node_start' AND node = ? AND round = ?)",
                (run_id, before, run_id, before, node, round_no),
            ).rowcount

    def events(self, run_id: str) -> list[TraceEvent]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, type, ts, node, round, data FROM events WHERE run_id = ? ORDER BY seq",
                (run_id,),
            ).fetchall()
        return [
            TraceEvent(run_id=run_id, seq=s, type=t, ts=ts, node=n, round=r, data=json.loads(d))
            for s, t, ts, n, r, d in rows
        ]

    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        """One transaction, committed (or rolled back) on exit; counted for the WAL."""
        with self._lock:
            with self._db:
                yield
            self._wal.committed(self._db)

    def _one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        with self._lock:
            row = self._db.execute(sql, params).fetchone()
        return tuple(row) if row else None
