"""Durable task state: tasks, their events, webhook deliveries, idempotency keys, the run
ownership registry and source-sync jobs.

:class:`TaskStore` is the interface and the row mapping both backends share;
``TaskStore.open(url)`` picks the backend from ``WAYPOINT_TASKS_URL``:

- ``sqlite:///path`` (the default): :class:`SqliteTaskStore` below. Every write is one
  short transaction (WAL, ``synchronous=NORMAL``).
- ``postgresql://...``: :class:`api.tasks.pg_store.PostgresTaskStore` (needs the optional
  ``psycopg`` + ``psycopg-pool`` dependencies), the same tables and semantics.

The interface is synchronous and its calls block (disk, network): the service calls them
in worker threads (``run_in_threadpool``), never on the event loop.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from api.schemas import (
    TERMINAL,
    RunSummary,
    SourceJob,
    Task,
    TaskProgress,
    WebhookDelivery,
    WebhookState,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    key_id TEXT NOT NULL,
    status TEXT NOT NULL,
    request TEXT NOT NULL,
    run_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    progress TEXT NOT NULL DEFAULT '{}',
    result TEXT,
    error TEXT,
    resume INTEGER NOT NULL DEFAULT 0,
    resumed INTEGER NOT NULL DEFAULT 0,
    webhook_url TEXT,
    webhook_state TEXT NOT NULL DEFAULT 'none',
    webhook_id TEXT,
    webhook_body TEXT
);
CREATE INDEX IF NOT EXISTS tasks_user ON tasks(user, created_at);
CREATE INDEX IF NOT EXISTS tasks_status ON tasks(status, created_at);
CREATE INDEX IF NOT EXISTS tasks_webhook ON tasks(webhook_state);
CREATE TABLE IF NOT EXISTS task_events (
    task_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
);
CREATE TABLE IF NOT EXISTS deliveries (
    task_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    webhook_id TEXT NOT NULL,
    at REAL NOT NULL,
    status_code INTEGER,
    error TEXT,
    ok INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS idempotency (
    user TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    state TEXT NOT NULL,
    task_id TEXT,
    response TEXT,
    created_at REAL NOT NULL,
    PRIMARY KEY (user, key)
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    kind TEXT NOT NULL,
    task_id TEXT,
    question TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    finished_at REAL
);
CREATE INDEX IF NOT EXISTS runs_user ON runs(user, created_at);
CREATE TABLE IF NOT EXISTS source_jobs (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    user TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    finished_at REAL,
    report TEXT,
    failures TEXT,
    error TEXT
);
CREATE TABLE IF NOT EXISTS webhook_outbox (
    webhook_id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_outbox_task ON webhook_outbox(task_id);
CREATE TABLE IF NOT EXISTS workers (
    owner TEXT PRIMARY KEY,
    lease_until REAL NOT NULL,
    started_at REAL NOT NULL,
    pid INTEGER,
    host TEXT
);
"""

# A running task back to the queue, marked to resume from its checkpoints, held by no one
# (completed with the condition on which tasks).
_REQUEUE = "UPDATE tasks SET status = 'queued', resume = 1, owner = NULL WHERE status = 'running'"
_UNSENT_WEBHOOK = "webhook_state = 'pending' AND status IN ('succeeded', 'failed', 'cancelled')"

# A webhook attempt logged before it is sent, and what it says once the process that sent
# it is known to have stopped before its outcome was logged.
DELIVERY_IN_FLIGHT = "in flight"
DELIVERY_INTERRUPTED = "interrupted: the sending process stopped; the outcome is unknown"

# Columns added after the first release, added to an older database when it is opened
# (new ones get them the same way): who holds a running task, a sync job or an
# idempotency claim (a store object's ``owner``), a cancel asked of another process, and
# a paused task's review: what it asks (JSON) and the decision it resumes with (JSON).
ADDED_COLUMNS = (
    ("tasks", "owner", "TEXT"),
    ("tasks", "cancel_requested", "INTEGER NOT NULL DEFAULT 0"),
    ("tasks", "review_request", "TEXT"),
    ("tasks", "review_decision", "TEXT"),
    ("tasks", "traceparent", "TEXT"),  # the request that queued it (W3C trace context)
    ("idempotency", "owner", "TEXT"),
    ("source_jobs", "owner", "TEXT"),
)


class TasksUrlError(ValueError):
    """WAYPOINT_TASKS_URL names a backend this build cannot open."""


PG_SCHEMES = ("postgres://", "postgresql://")


def is_postgres_url(url: str) -> bool:
    return url.startswith(PG_SCHEMES)


def sqlite_path_from_url(url: str) -> Path:
    if is_postgres_url(url):
        raise TasksUrlError(f"WAYPOINT_TASKS_URL is a Postgres URL, not sqlite:///path: {url!r}")
    if not url.startswith("sqlite:///"):
        raise TasksUrlError(
            f"WAYPOINT_TASKS_URL must look like sqlite:///path or postgresql://..., got {url!r}"
        )
    return Path(url.removeprefix("sqlite:///"))


def check_tasks_url(url: str) -> None:
    """Fail early (one line) on a URL this build cannot open; does not connect."""
    if is_postgres_url(url):
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError as exc:
            raise TasksUrlError(
                "a Postgres WAYPOINT_TASKS_URL needs the optional dependencies psycopg and "
                "psycopg-pool (pip install 'waypoint[postgres]')"
            ) from exc
        return
    sqlite_path_from_url(url)


def _ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


IdemOutcome = Literal["new", "replay", "mismatch", "in_flight"]


@dataclass
class IdemClaim:
    outcome: IdemOutcome
    response: dict[str, Any] | None = None


@dataclass(frozen=True)
class Closing:
    """The event that ends a task's stream (``done`` or ``error``), stored with the
    terminal status that it announces."""

    type: Literal["done", "error"]
    data: dict[str, Any]

    def event(self, run_id: str, ts: float) -> dict[str, Any]:
        return {"run_id": run_id, "type": self.type, "ts": ts, "data": self.data}


@dataclass
class Recovered:
    """What :meth:`TaskStore.recover` took back from owners that are gone."""

    tasks: int = 0  # running tasks put back in the queue, marked to resume
    idempotency_keys: int = 0  # claims left 'creating', freed
    source_jobs: int = 0  # queued or running sync jobs, failed

    def __bool__(self) -> bool:
        return bool(self.tasks or self.idempotency_keys or self.source_jobs)


@dataclass
class Pruned:
    """What :meth:`TaskStore.prune` deleted."""

    tasks: int = 0  # finished tasks, with their events, deliveries and run entries
    runs: int = 0  # finished answer and CLI runs (the run registry, not their traces)
    idempotency_keys: int = 0
    source_jobs: int = 0

    def __bool__(self) -> bool:
        return bool(self.tasks or self.runs or self.idempotency_keys or self.source_jobs)


# Finished tasks a retention pass may delete: ended before the cutoff, webhook settled
# (a pending one is still to be sent, whatever its age).
_EXPIRED_TASKS = (
    "SELECT id FROM tasks WHERE status IN ('succeeded', 'failed', 'cancelled')"
    " AND finished_at < ? AND webhook_state <> 'pending'"
)
# Tasks deleted per transaction: a long retention pass never holds the write lock long.
PRUNE_BATCH = 500

# A stored row: sqlite3.Row or a dict (Postgres); both are read as row["column"].
TaskRow = Any


class Tx:
    """One unit of work on a backend connection.

    The shared SQL is written once with ``?`` placeholders and ``"user"`` quoted (a
    reserved word in Postgres; SQLite reads a quoted identifier the same); each backend
    passes an ``execute`` that adapts the placeholder style to its driver.
    """

    def __init__(self, execute: Callable[[str, tuple[Any, ...]], Any]) -> None:
        self._execute = execute

    def one(self, sql: str, args: tuple[Any, ...] = ()) -> TaskRow | None:
        cur = self._execute(sql, args)
        # Closing finishes a RETURNING statement before the transaction commits.
        try:
            return cur.fetchone()
        finally:
            cur.close()

    def all(self, sql: str, args: tuple[Any, ...] = ()) -> list[TaskRow]:
        return list(self._execute(sql, args).fetchall())

    def rowcount(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        return int(self._execute(sql, args).rowcount)


class TaskStore(ABC):
    """The task store: the SQL, the status transitions, the idempotency bookkeeping and
    the row mapping live here once. Rows use the same columns and encodings in every
    backend (times as epoch seconds, JSON as text); a backend supplies its connections
    (:meth:`_tx`, :meth:`_read`), its schema and the few places its concurrency differs
    (:attr:`_CLAIM_LOCK`, :meth:`_lock_task_events`)."""

    # Appended to the claim sub-select: how this backend keeps two workers from claiming
    # the same queued task ("" where the write transaction already serialises them).
    _CLAIM_LOCK: ClassVar[str] = ""
    # Whether one process has the database to itself (SQLite: one service process per
    # file). Then, at start-up, whatever another owner left running is taken back at
    # once; in a shared database (Postgres) only what an owner whose lease lapsed left.
    exclusive: ClassVar[bool] = False

    def __init__(self) -> None:
        # This store object's identity as the holder of running work (one per process).
        self.owner = new_id("proc")

    @classmethod
    def open(cls, url: str) -> TaskStore:
        if is_postgres_url(url):
            check_tasks_url(url)
            from api.tasks.pg_store import PostgresTaskStore

            return PostgresTaskStore(url)
        return SqliteTaskStore(sqlite_path_from_url(url))

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def _tx(self) -> AbstractContextManager[Tx]:
        """One write transaction: committed on a normal exit, rolled back on an exception."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Tx]:
        """A connection for reads."""

    def _lock_task_events(self, db: Tx, task_id: str) -> None:
        """Serialise event appends for one task inside ``db`` (no-op where ``_tx`` already
        serialises every writer)."""
        return None

    def _one(self, sql: str, args: tuple[Any, ...] = ()) -> TaskRow | None:
        with self._read() as db:
            return db.one(sql, args)

    def _all(self, sql: str, args: tuple[Any, ...] = ()) -> list[TaskRow]:
        with self._read() as db:
            return db.all(sql, args)

    def _count(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        row = self._one(sql, args)
        return int(row["n"]) if row else 0

    def _write(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        with self._tx() as db:
            return db.rowcount(sql, args)

    # ---------------------------------------------------------------- tasks
    def create_task(
        self,
        user: str,
        key_id: str,
        request: dict[str, Any],
        webhook_url: str | None,
        traceparent: str | None = None,
    ) -> Task:
        task_id, run_id, now = new_id("task"), new_id("run"), time.time()
        with self._tx() as db:
            db.rowcount(
                'INSERT INTO tasks (id, "user", key_id, status, request, run_id, created_at,'
                " webhook_url, webhook_state, traceparent)"
                " VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)",
                (
                    task_id,
                    user,
                    key_id,
                    json.dumps(request),
                    run_id,
                    now,
                    webhook_url,
                    "pending" if webhook_url else "none",
                    traceparent,
                ),
            )
            db.rowcount(
                'INSERT INTO runs (run_id, "user", kind, task_id, question, status, created_at)'
                " VALUES (?, ?, 'task', ?, ?, 'queued', ?)",
                (run_id, user, task_id, request["question"], now),
            )
        task = self.get_task(task_id)
        assert task is not None
        return task

    def count_active(self, key_id: str) -> int:
        return self._count(
            # a task paused for review is unfinished work of its key too
            "SELECT COUNT(*) AS n FROM tasks WHERE key_id = ?"
            " AND status IN ('queued', 'running', 'input_required')",
            (key_id,),
        )

    def queue_stats(self) -> dict[str, tuple[int, float | None]]:
        """Tasks queued, running and paused for review, all processes of the store: status
        -> (count, creation time of the oldest)."""
        rows = self._all(
            "SELECT status, COUNT(*) AS n, MIN(created_at) AS oldest FROM tasks"
            " WHERE status IN ('queued', 'running', 'input_required') GROUP BY status"
        )
        return {
            row["status"]: (int(row["n"]), None if row["oldest"] is None else float(row["oldest"]))
            for row in rows
        }

    def get_task(self, task_id: str, user: str | None = None) -> Task | None:
        row = self.task_row(task_id)
        if row is None or (user is not None and row["user"] != user):
            return None
        return self._task(row)

    def task_row(self, task_id: str) -> TaskRow | None:
        return self._one("SELECT * FROM tasks WHERE id = ?", (task_id,))

    def list_tasks(
        self, user: str, limit: int, cursor: str | None
    ) -> tuple[list[Task], str | None]:
        args: tuple[Any, ...]
        if cursor:
            # The cursor is "<created_at>:<id>" of the last item on the previous page.
            created, _, last_id = cursor.partition(":")
            args = (user, float(created), float(created), last_id, limit + 1)
            sql = (
                'SELECT * FROM tasks WHERE "user" = ? AND (created_at < ? OR (created_at = ?'
                " AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?"
            )
        else:
            args = (user, limit + 1)
            sql = 'SELECT * FROM tasks WHERE "user" = ? ORDER BY created_at DESC, id DESC LIMIT ?'
        rows = self._all(sql, args)
        more = len(rows) > limit
        rows = rows[:limit]
        nxt = f"{rows[-1]['created_at']!r}:{rows[-1]['id']}" if more and rows else None
        return [self._task(r) for r in rows], nxt

    def claim_next(self) -> TaskRow | None:
        """Atomically move the oldest queued task to running, held by this store's
        ``owner``, and return it."""
        with self._tx() as db:
            row = db.one(
                "UPDATE tasks SET status = 'running', started_at = COALESCE(started_at, ?),"
                " owner = ?"
                " WHERE id = (SELECT id FROM tasks WHERE status = 'queued'"
                f" ORDER BY created_at, id LIMIT 1{self._CLAIM_LOCK}) RETURNING *",
                (time.time(), self.owner),
            )
            if row is not None:
                db.rowcount("UPDATE runs SET status = 'running' WHERE run_id = ?", (row["run_id"],))
        return row

    # ------------------------------------------------------ owners and leases
    def heartbeat(self, lease_s: float) -> None:
        """This owner is alive for ``lease_s`` more seconds (its work is not taken back)."""
        now = time.time()
        self._write(
            "INSERT INTO workers (owner, lease_until, started_at, pid, host)"
            " VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (owner) DO UPDATE SET lease_until = excluded.lease_until",
            (self.owner, now + lease_s, now, os.getpid(), socket.gethostname()),
        )

    def release(self, task_id: str | None = None) -> int:
        """A clean stop: this owner's running tasks go back to the queue (marked to resume)
        and its unsent webhooks (and outbox messages) to no one, for any process to take
        now; its lease ends.
        With ``task_id``: only that task goes back (this process could not go on with it)."""
        if task_id is not None:
            return self._write(f"{_REQUEUE} AND id = ? AND owner = ?", (task_id, self.owner))
        with self._tx() as db:
            n = db.rowcount(f"{_REQUEUE} AND owner = ?", (self.owner,))
            db.rowcount(
                f"UPDATE tasks SET owner = NULL WHERE owner = ? AND {_UNSENT_WEBHOOK}",
                (self.owner,),
            )
            db.rowcount(
                "UPDATE webhook_outbox SET owner = NULL WHERE owner = ? AND state = 'pending'",
                (self.owner,),
            )
            db.rowcount("DELETE FROM workers WHERE owner = ?", (self.owner,))
        return n

    def _gone(self, exclusive: bool, now: float) -> tuple[str, tuple[Any, ...]]:
        """The SQL condition (and its arguments) on a row's ``owner`` that says its owner
        is gone: its lease lapsed, or it never had one (a row from before leases); with
        ``exclusive``, every owner but this one."""
        if exclusive:
            return "(owner IS NULL OR owner <> ?)", (self.owner,)
        return (
            "(owner IS NULL OR owner NOT IN (SELECT owner FROM workers WHERE lease_until >= ?))",
            (now,),
        )

    def owned_unsent_webhooks(self) -> list[str]:
        """The tasks whose webhook this owner is to send and has not sent yet."""
        sql = f"SELECT id FROM tasks WHERE owner = ? AND {_UNSENT_WEBHOOK}"
        rows = self._all(sql, (self.owner,))
        return [r["id"] for r in rows]

    def claim_webhooks(self, exclusive: bool = False) -> list[str]:
        """The tasks whose webhook is still to be sent and whose owner is gone, made this
        owner's to send (a live owner is sending its own)."""
        gone, args = self._gone(exclusive, time.time())
        with self._tx() as db:
            rows = db.all(
                f"UPDATE tasks SET owner = ? WHERE {_UNSENT_WEBHOOK} AND {gone} RETURNING id",
                (self.owner, *args),
            )
        return [r["id"] for r in rows]

    def recover(self, exclusive: bool = False) -> Recovered:
        """Take back the work of owners that are gone: their running tasks are queued again
        (marked to resume from their checkpoints), their idempotency claims left
        'creating' are freed and their sync jobs fail (see :meth:`_gone`; ``exclusive``
        is for a process starting on a database it has to itself). A task asked to be
        cancelled stays asked: its next claimant cancels it instead of resuming it."""
        now = time.time()
        gone, args = self._gone(exclusive, now)
        with self._tx() as db:
            tasks = db.rowcount(f"{_REQUEUE} AND {gone}", args)
            keys = db.rowcount(f"DELETE FROM idempotency WHERE state = 'creating' AND {gone}", args)
            jobs = db.rowcount(
                "UPDATE source_jobs SET status = 'failed', finished_at = ?,"
                " error = 'interrupted: the server running it stopped; sync again'"
                f" WHERE status IN ('queued', 'running') AND {gone}",
                (now, *args),
            )
            db.rowcount("DELETE FROM workers WHERE lease_until < ?", (now,))
        return Recovered(tasks, keys, jobs)

    def owned_running(self) -> dict[str, bool]:
        """This owner's running tasks: id -> whether another process asked to cancel it."""
        rows = self._all(
            "SELECT id, cancel_requested FROM tasks WHERE status = 'running' AND owner = ?",
            (self.owner,),
        )
        return {r["id"]: bool(r["cancel_requested"]) for r in rows}

    def request_cancel(self, task_id: str) -> bool:
        """Ask the process running ``task_id`` to cancel it (it reads this at its next
        heartbeat); False if the task is not running."""
        return bool(
            self._write(
                "UPDATE tasks SET cancel_requested = 1 WHERE id = ? AND status = 'running'",
                (task_id,),
            )
        )

    def mark_resumed(self, task_id: str) -> None:
        """The task's run resumes now: the review decision it was queued with is taken (a
        stop before the run stores it leaves the run paused again, asking anew)."""
        self._write(
            "UPDATE tasks SET resumed = resumed + 1, resume = 0, review_decision = NULL"
            " WHERE id = ?",
            (task_id,),
        )

    def pause(self, task_id: str, asked: dict[str, Any]) -> bool:
        """A task this owner runs waits for a person's decision (``input_required``, held
        by no one: a restart leaves it paused); False if this owner no longer runs it.
        A task with a webhook gets its ``task.input_required`` message in the outbox in
        the same transaction (this owner's to send: see :meth:`claim_messages`)."""
        with self._tx() as db:
            row = db.one(
                "UPDATE tasks SET status = 'input_required', review_request = ?, owner = NULL"
                " WHERE id = ? AND status = 'running' AND owner = ? RETURNING *",
                (json.dumps(asked, default=str), task_id, self.owner),
            )
            if row is None:
                return False
            db.rowcount(
                "UPDATE runs SET status = 'input_required' WHERE run_id = ?", (row["run_id"],)
            )
            if row["webhook_url"]:
                body = webhook_body(self._task(row, deliveries=False), "input_required")
                db.rowcount(
                    "INSERT INTO webhook_outbox (webhook_id, task_id, body, state, owner,"
                    " created_at) VALUES (?, ?, ?, 'pending', ?, ?)",
                    (new_id("msg"), task_id, body, self.owner, time.time()),
                )
        return True

    def submit_review(self, task_id: str, user: str, decision: dict[str, Any]) -> bool:
        """Queue a paused task of ``user`` to resume with ``decision``; False if it is not
        (or no longer) waiting for one."""
        with self._tx() as db:
            row = db.one(
                "UPDATE tasks SET status = 'queued', resume = 1, review_request = NULL,"
                ' review_decision = ? WHERE id = ? AND "user" = ?'
                " AND status = 'input_required' RETURNING run_id",
                (json.dumps(decision), task_id, user),
            )
            if row is not None:
                db.rowcount("UPDATE runs SET status = 'queued' WHERE run_id = ?", (row["run_id"],))
        return row is not None

    def finish(
        self,
        task_id: str,
        status: str,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        closing: Closing | None = None,
    ) -> bool:
        """Set a terminal status on a task this owner is running; False (nothing written)
        when it is not: it has finished already, or it was taken back (this owner's lease
        lapsed) and is queued again or held by another process. ``closing``, the event
        that ends the task's stream, is stored in the same transaction: whoever sees the
        status sees it."""
        now = time.time()
        with self._tx() as db:
            row = db.one(
                "UPDATE tasks SET status = ?, finished_at = ?, result = ?, error = ?"
                " WHERE id = ? AND status = 'running' AND owner = ? RETURNING run_id",
                (
                    status,
                    now,
                    json.dumps(result) if result is not None else None,
                    json.dumps(error) if error is not None else None,
                    task_id,
                    self.owner,
                ),
            )
            if row is None:
                return False
            db.rowcount(
                "UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
                (status, now, row["run_id"]),
            )
            if closing is not None:
                self._append(db, task_id, closing.event(row["run_id"], now))
        return True

    def cancel_queued(self, task_id: str, closing: Closing | None = None) -> bool:
        """Cancel a queued or paused task (``closing`` stored with it, as in
        :meth:`finish`); False if it is neither."""
        now = time.time()
        with self._tx() as db:
            row = db.one(
                "UPDATE tasks SET status = 'cancelled', finished_at = ?, owner = ?,"
                " review_request = NULL WHERE id = ? AND status IN ('queued', 'input_required')"
                " RETURNING run_id",
                (now, self.owner, task_id),
            )
            if row is not None:
                db.rowcount(
                    "UPDATE runs SET status = 'cancelled', finished_at = ? WHERE run_id = ?",
                    (now, row["run_id"]),
                )
                if closing is not None:
                    self._append(db, task_id, closing.event(row["run_id"], now))
        return row is not None

    def set_progress(self, task_id: str, progress: TaskProgress) -> bool:
        """Record a running task's progress; False if this owner no longer runs it."""
        return bool(
            self._write(
                "UPDATE tasks SET progress = ? WHERE id = ? AND status = 'running' AND owner = ?",
                (progress.model_dump_json(), task_id, self.owner),
            )
        )

    # --------------------------------------------------------------- events
    def append_event(self, task_id: str, event: dict[str, Any]) -> int:
        """Store an event with the task's next sequence id and return it. Ids only grow:
        events replaced by :meth:`replace_redone_events` leave gaps, never reused ids (a
        client resuming after id n must not miss a later event numbered n)."""
        with self._tx() as db:
            return self._append(db, task_id, event)

    def _append(self, db: Tx, task_id: str, event: dict[str, Any]) -> int:
        self._lock_task_events(db, task_id)
        row = db.one(
            "SELECT COALESCE(MAX(seq), 0) AS n FROM task_events WHERE task_id = ?", (task_id,)
        )
        seq = int(row["n"] if row else 0) + 1
        db.rowcount(
            "INSERT INTO task_events (task_id, seq, event) VALUES (?, ?, ?)",
            (task_id, seq, json.dumps({**event, "seq": seq}, default=str)),
        )
        return seq

    def replace_redone_events(self, task_id: str, node: str, round_no: int, before: int) -> int:
        """A resumed run starts again with ``node`` of round ``round_no``: the events a
        stopped attempt stored from that node's start on (up to ``before``, the resumed
        task's own first event) are about to be emitted again, so they are deleted; the
        count deleted. The stream then holds each step once: the kept steps, the resume,
        the redone steps. Nothing is deleted when no stored step matches (the stopped
        attempt never reached it)."""
        with self._tx() as db:
            self._lock_task_events(db, task_id)
            rows = db.all(
                # The pattern is a parameter: a literal % would be a placeholder to psycopg.
                "SELECT seq, event FROM task_events WHERE task_id = ? AND seq < ?"
                " AND event LIKE ? ORDER BY seq",
                (task_id, before, "%node_start%"),
            )
            start = next(
                (int(r["seq"]) for r in rows if _starts(json.loads(r["event"]), node, round_no)),
                None,
            )
            if start is None:
                return 0
            return db.rowcount(
                "DELETE FROM task_events WHERE task_id = ? AND seq >= ? AND seq < ?",
                (task_id, start, before),
            )

    def events_after(self, task_id: str, after: int, limit: int = 500) -> list[dict[str, Any]]:
        rows = self._all(
            "SELECT event FROM task_events WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (task_id, after, limit),
        )
        return [json.loads(r["event"]) for r in rows]

    # ------------------------------------------------------------- webhooks
    def prepare_webhook(self, task_id: str, webhook_id: str, body: str) -> tuple[str, str]:
        """Fix the id and body once; retries and post-restart redeliveries reuse them."""
        with self._tx() as db:
            row = db.one(
                "UPDATE tasks SET webhook_id = COALESCE(webhook_id, ?),"
                " webhook_body = COALESCE(webhook_body, ?) WHERE id = ?"
                " RETURNING webhook_id, webhook_body",
                (webhook_id, body, task_id),
            )
        if row is None:
            raise KeyError(task_id)
        return row["webhook_id"], row["webhook_body"]

    def begin_delivery(self, task_id: str, attempt: int, webhook_id: str) -> None:
        """Log an attempt as in flight before it is sent: a process stopped while sending
        leaves it logged (see :meth:`interrupt_deliveries`), so the log never shows fewer
        attempts than the receiver may have had."""
        self.log_delivery(
            task_id,
            WebhookDelivery(
                attempt=attempt,
                webhook_id=webhook_id,
                at=datetime.now(UTC),
                error=DELIVERY_IN_FLIGHT,
                ok=False,
            ),
        )

    def log_delivery(self, task_id: str, delivery: WebhookDelivery) -> None:
        """Record an attempt's outcome: one row per attempt number (an attempt logged in
        flight is completed in place)."""
        args = (
            delivery.webhook_id,
            delivery.at.timestamp(),
            delivery.status_code,
            delivery.error,
            int(delivery.ok),
            task_id,
            delivery.attempt,
        )
        with self._tx() as db:
            updated = db.rowcount(
                "UPDATE deliveries SET webhook_id = ?, at = ?, status_code = ?, error = ?, ok = ?"
                " WHERE task_id = ? AND attempt = ?",
                args,
            )
            if not updated:
                db.rowcount(
                    "INSERT INTO deliveries (webhook_id, at, status_code, error, ok, task_id,"
                    " attempt) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    args,
                )

    def interrupt_deliveries(self, task_id: str) -> int:
        """Attempts left in flight by a process that stopped: their outcome is unknown
        (the receiver may have the webhook); said so in the log. The count."""
        return self._write(
            "UPDATE deliveries SET error = ? WHERE task_id = ? AND error = ?",
            (DELIVERY_INTERRUPTED, task_id, DELIVERY_IN_FLIGHT),
        )

    def count_deliveries(self, task_id: str) -> int:
        return self._count("SELECT COUNT(*) AS n FROM deliveries WHERE task_id = ?", (task_id,))

    def set_webhook_state(self, task_id: str, state: str) -> None:
        self._write("UPDATE tasks SET webhook_state = ? WHERE id = ?", (state, task_id))

    def pending_webhooks(self) -> list[str]:
        rows = self._all(f"SELECT id FROM tasks WHERE {_UNSENT_WEBHOOK} ORDER BY finished_at")
        return [r["id"] for r in rows]

    # A webhook message other than the final one (``task.input_required``) is written to
    # the outbox with the change it announces, and sent from there: a stop before it was
    # sent leaves it pending, for this or another process to send (same webhook id).
    def owned_unsent_messages(self) -> list[str]:
        """The outbox messages this owner is to send and has not sent yet."""
        rows = self._all(
            "SELECT webhook_id FROM webhook_outbox WHERE owner = ? AND state = 'pending'"
            " ORDER BY created_at",
            (self.owner,),
        )
        return [r["webhook_id"] for r in rows]

    def claim_messages(self, exclusive: bool = False) -> list[str]:
        """The outbox messages still to be sent whose owner is gone, made this owner's to
        send (a live owner is sending its own)."""
        gone, args = self._gone(exclusive, time.time())
        with self._tx() as db:
            rows = db.all(
                f"UPDATE webhook_outbox SET owner = ? WHERE state = 'pending' AND {gone}"
                " RETURNING webhook_id",
                (self.owner, *args),
            )
        return [r["webhook_id"] for r in rows]

    def outbox_message(self, webhook_id: str) -> TaskRow | None:
        """An outbox message with its task's webhook URL and key (None if it is gone)."""
        return self._one(
            "SELECT m.webhook_id, m.task_id, m.body, m.state, m.owner, t.webhook_url, t.key_id"
            " FROM webhook_outbox m JOIN tasks t ON t.id = m.task_id WHERE m.webhook_id = ?",
            (webhook_id,),
        )

    def settle_message(self, webhook_id: str, state: Literal["delivered", "failed"]) -> None:
        self._write(
            "UPDATE webhook_outbox SET state = ?, owner = NULL WHERE webhook_id = ?",
            (state, webhook_id),
        )

    def _deliveries(self, task_id: str) -> list[TaskRow]:
        return self._all(
            "SELECT * FROM deliveries WHERE task_id = ? ORDER BY at, attempt", (task_id,)
        )

    # ---------------------------------------------------------- idempotency
    def idem_begin(self, user: str, key: str, request_hash: str) -> IdemClaim:
        # Insert-if-absent is the claim: exactly one concurrent caller gets "new".
        while True:
            with self._tx() as db:
                inserted = db.one(
                    'INSERT INTO idempotency ("user", key, request_hash, state, created_at,'
                    " owner) VALUES (?, ?, ?, 'creating', ?, ?)"
                    ' ON CONFLICT ("user", key) DO NOTHING RETURNING key',
                    (user, key, request_hash, time.time(), self.owner),
                )
                if inserted is not None:
                    return IdemClaim("new")
                row = db.one('SELECT * FROM idempotency WHERE "user" = ? AND key = ?', (user, key))
            if row is None:  # abandoned between the two statements: claim it again
                continue
            if row["request_hash"] != request_hash:
                return IdemClaim("mismatch")
            if row["state"] == "creating":
                return IdemClaim("in_flight")
            return IdemClaim("replay", json.loads(row["response"]))

    def idem_finish(self, user: str, key: str, response: dict[str, Any]) -> None:
        self._write(
            "UPDATE idempotency SET state = 'done', response = ?, task_id = ?"
            ' WHERE "user" = ? AND key = ?',
            (json.dumps(response, default=str), response.get("id"), user, key),
        )

    def idem_abandon(self, user: str, key: str) -> None:
        """The first request failed before creating anything: the key is free again."""
        self._write(
            "DELETE FROM idempotency WHERE \"user\" = ? AND key = ? AND state = 'creating'",
            (user, key),
        )

    # ------------------------------------------------------------ retention
    def prune(self, before: float) -> Pruned:
        """Delete what ended before ``before`` (epoch seconds): finished tasks with their
        events, webhook deliveries, outbox messages and run entries; finished answer and
        CLI runs; done idempotency keys created before it; finished source-sync jobs. Queued
        and running work, and webhooks not yet sent, stay whatever their age."""
        pruned = Pruned()
        while True:
            with self._tx() as db:
                ids = [r["id"] for r in db.all(f"{_EXPIRED_TASKS} LIMIT ?", (before, PRUNE_BATCH))]
                if not ids:
                    break
                marks = ", ".join("?" for _ in ids)
                for table in ("task_events", "deliveries", "webhook_outbox", "runs"):
                    db.rowcount(f"DELETE FROM {table} WHERE task_id IN ({marks})", tuple(ids))
                pruned.tasks += db.rowcount(f"DELETE FROM tasks WHERE id IN ({marks})", tuple(ids))
        with self._tx() as db:
            pruned.runs = db.rowcount(
                "DELETE FROM runs WHERE task_id IS NULL AND status <> 'running'"
                " AND finished_at < ?",
                (before,),
            )
            pruned.idempotency_keys = db.rowcount(
                "DELETE FROM idempotency WHERE state = 'done' AND created_at < ?", (before,)
            )
            pruned.source_jobs = db.rowcount(
                "DELETE FROM source_jobs WHERE status IN ('succeeded', 'failed')"
                " AND finished_at < ?",
                (before,),
            )
        return pruned

    # ----------------------------------------------------------------- runs
    def register_run(self, run_id: str, user: str, question: str, kind: str = "answer") -> None:
        self._write(
            'INSERT INTO runs (run_id, "user", kind, question, status, created_at)'
            " VALUES (?, ?, ?, ?, 'running', ?) ON CONFLICT (run_id) DO NOTHING",
            (run_id, user, kind, question, time.time()),
        )

    def finish_run(self, run_id: str, status: str) -> None:
        self._write(
            "UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
            (status, time.time(), run_id),
        )

    def get_run(self, run_id: str, user: str) -> RunSummary | None:
        row = self._one('SELECT * FROM runs WHERE run_id = ? AND "user" = ?', (run_id, user))
        return None if row is None else self._run(row)

    def list_runs(self, user: str, limit: int = 100) -> list[RunSummary]:
        rows = self._all(
            'SELECT * FROM runs WHERE "user" = ? ORDER BY created_at DESC LIMIT ?', (user, limit)
        )
        return [self._run(r) for r in rows]

    # ---------------------------------------------------------- source jobs
    def create_source_job(self, source: str, user: str) -> SourceJob:
        job_id = new_id("job")
        self._write(
            'INSERT INTO source_jobs (id, source, "user", status, created_at, owner)'
            " VALUES (?, ?, ?, 'queued', ?, ?)",
            (job_id, source, user, time.time(), self.owner),
        )
        job = self.get_source_job(job_id)
        assert job is not None
        return job

    def active_source_job(self, source: str) -> str | None:
        row = self._one(
            "SELECT id FROM source_jobs WHERE source = ? AND status IN ('queued', 'running')",
            (source,),
        )
        return None if row is None else str(row["id"])

    def update_source_job(self, job_id: str, status: str, **fields: Any) -> None:
        report = fields.get("report")
        failures = fields.get("failures")
        # The casts type the untyped parameters for Postgres; SQLite reads them the same.
        self._write(
            "UPDATE source_jobs SET status = ?, report = COALESCE(?, report),"
            " failures = COALESCE(?, failures), error = COALESCE(?, error),"
            " finished_at = CASE WHEN CAST(? AS text) IN ('succeeded', 'failed')"
            " THEN CAST(? AS double precision) ELSE NULL END WHERE id = ?",
            (
                status,
                json.dumps(report) if report is not None else None,
                json.dumps(failures) if failures is not None else None,
                fields.get("error"),
                status,
                time.time(),
                job_id,
            ),
        )

    def get_source_job(self, job_id: str) -> SourceJob | None:
        row = self._one("SELECT * FROM source_jobs WHERE id = ?", (job_id,))
        return None if row is None else self._source_job(row)

    # -------------------------------------------------------------- mapping
    @staticmethod
    def _source_job(row: TaskRow) -> SourceJob:
        return SourceJob(
            id=row["id"],
            source=row["source"],
            status=row["status"],
            created_at=_dt(row["created_at"]),
            finished_at=_ts(row["finished_at"]),
            report=json.loads(row["report"]) if row["report"] else None,
            failures=json.loads(row["failures"]) if row["failures"] else [],
            error=row["error"],
        )

    def _task(self, row: TaskRow, deliveries: bool = True) -> Task:
        """The task of a row; without ``deliveries``, its webhook's log is left empty."""
        request = json.loads(row["request"])
        webhook = None
        if row["webhook_url"]:
            logged = self._deliveries(row["id"]) if deliveries else []
            webhook = WebhookState(
                url=row["webhook_url"],
                state=row["webhook_state"],
                webhook_id=row["webhook_id"],
                deliveries=[
                    WebhookDelivery(
                        attempt=d["attempt"],
                        webhook_id=d["webhook_id"],
                        at=_dt(d["at"]),
                        status_code=d["status_code"],
                        error=d["error"],
                        ok=bool(d["ok"]),
                    )
                    for d in logged
                ],
            )
        return Task(
            id=row["id"],
            status=row["status"],
            question=request["question"],
            project=request.get("project"),
            mode=request.get("mode"),
            max_rounds=request.get("max_rounds"),
            run_id=row["run_id"],
            created_at=_dt(row["created_at"]),
            started_at=_ts(row["started_at"]),
            finished_at=_ts(row["finished_at"]),
            progress=TaskProgress.model_validate_json(row["progress"] or "{}"),
            result=json.loads(row["result"]) if row["result"] else None,
            error=json.loads(row["error"]) if row["error"] else None,
            webhook=webhook,
            resumed=row["resumed"],
            review_request=json.loads(row["review_request"]) if row["review_request"] else None,
        )

    @staticmethod
    def _run(row: TaskRow) -> RunSummary:
        return RunSummary(
            run_id=row["run_id"],
            question=row["question"],
            kind=row["kind"],
            task_id=row["task_id"],
            status=row["status"],
            created_at=_dt(row["created_at"]),
            finished_at=_ts(row["finished_at"]),
        )


class SqliteTaskStore(TaskStore):
    """Every write is one ``BEGIN IMMEDIATE`` transaction under a process lock, which
    serialises writers (so claims and event sequence ids need no extra locking)."""

    exclusive: ClassVar[bool] = True  # one service process per file

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(_SCHEMA)
        for table, column, decl in ADDED_COLUMNS:
            have = {r["name"] for r in self._db.execute(f"PRAGMA table_info({table})")}
            if column not in have:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
        super().__init__()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _execute(self, sql: str, args: tuple[Any, ...]) -> sqlite3.Cursor:
        return self._db.execute(sql, args)

    @contextmanager
    def _tx(self) -> Iterator[Tx]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield Tx(self._execute)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[Tx]:
        with self._lock:
            yield Tx(self._execute)


def _starts(event: dict[str, Any], node: str, round_no: int) -> bool:
    """Whether a stored event is the start of ``node`` in round ``round_no``."""
    return (
        event.get("type") == "node_start"
        and event.get("node") == node
        and event.get("round") == round_no
    )


def is_terminal(status: str) -> bool:
    return status in TERMINAL


def webhook_body(task: Task, status: str | None = None) -> str:
    """A task webhook's body: ``task.<status>`` (the task's own status unless given), when,
    and the task as it is (without its webhook state)."""
    return json.dumps(
        {
            "type": f"task.{status or task.status}",
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "data": task.model_dump(mode="json", exclude={"webhook"}),
        },
        separators=(",", ":"),
    )
