"""The task store in PostgreSQL (``WAYPOINT_TASKS_URL=postgresql://...``).

Same tables, encodings and semantics as :class:`api.tasks.store.SqliteTaskStore` (times
as epoch seconds in ``double precision``, JSON as text), so rows map to the API models
with the shared code in :class:`api.tasks.store.TaskStore`. Each call is one short
transaction on a connection from a small psycopg 3 pool; the interface stays
synchronous like the SQLite store's (calls are short round trips on a local network).

What Postgres changes beyond the SQL dialect:

- claiming a task uses ``FOR UPDATE SKIP LOCKED``, so several processes sharing one
  database never claim the same task;
- an event's sequence id is assigned under a per-task transaction-scoped advisory lock,
  so concurrent appenders still get 1, 2, 3, ... without gaps or duplicates;
- an idempotency claim is ``INSERT ... ON CONFLICT DO NOTHING`` (exactly one claimant).

Recovery at startup (``requeue_interrupted``, ``idem_clear_stale``) assumes, as with
SQLite, that the process starting up owns every task left running: run one service
process per database (there is no lease or heartbeat per worker yet).
"""

from __future__ import annotations

import json
import time
import zlib
from typing import Any

from psycopg import Connection
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from api.schemas import RunSummary, SourceJob, Task, TaskProgress, WebhookDelivery
from api.tasks.store import IdemClaim, TaskRow, TaskStore, TasksUrlError, new_id

# "user" is a reserved word in Postgres: quoted everywhere.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    "user" TEXT NOT NULL,
    key_id TEXT NOT NULL,
    status TEXT NOT NULL,
    request TEXT NOT NULL,
    run_id TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    started_at DOUBLE PRECISION,
    finished_at DOUBLE PRECISION,
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
CREATE INDEX IF NOT EXISTS tasks_user ON tasks("user", created_at);
CREATE INDEX IF NOT EXISTS tasks_status ON tasks(status, created_at);
CREATE INDEX IF NOT EXISTS tasks_key_active ON tasks(key_id, status);
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
    at DOUBLE PRECISION NOT NULL,
    status_code INTEGER,
    error TEXT,
    ok INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_task ON deliveries(task_id, at, attempt);
CREATE TABLE IF NOT EXISTS idempotency (
    "user" TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    state TEXT NOT NULL,
    task_id TEXT,
    response TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY ("user", key)
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    "user" TEXT NOT NULL,
    kind TEXT NOT NULL,
    task_id TEXT,
    question TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    finished_at DOUBLE PRECISION
);
CREATE INDEX IF NOT EXISTS runs_user ON runs("user", created_at);
CREATE TABLE IF NOT EXISTS source_jobs (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    "user" TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    finished_at DOUBLE PRECISION,
    report TEXT,
    failures TEXT,
    error TEXT
);
"""

# Serialises schema creation between processes starting at once (CREATE ... IF NOT
# EXISTS is not safe against a concurrent creator).
_SCHEMA_LOCK = 0x57_41_59_50  # "WAYP"


def _redact(url: str) -> str:
    """The URL without its password, for error messages."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not at or ":" not in creds:
        return url
    return f"{scheme}{sep}{creds.split(':', 1)[0]}:***@{host}"


def _event_lock_key(task_id: str) -> int:
    return zlib.crc32(task_id.encode())


class PostgresTaskStore(TaskStore):
    def __init__(
        self, url: str, min_size: int = 1, max_size: int = 4, connect_timeout_s: float = 15.0
    ) -> None:
        self.url = url
        self._pool: ConnectionPool[Connection[dict[str, Any]]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"row_factory": dict_row},
            connection_class=Connection[dict[str, Any]],
            open=False,
            name="waypoint-tasks",
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout_s)
        except PoolTimeout as exc:
            self._pool.close()
            raise TasksUrlError(
                f"cannot connect to the Postgres task store {_redact(url)} within "
                f"{connect_timeout_s:g}s (is the server up and the database created?)"
            ) from exc
        try:
            with self._pool.connection() as db:
                db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement.encode())
        except BaseException:
            self._pool.close()
            raise

    def close(self) -> None:
        self._pool.close()

    # Every `with self._pool.connection() as db:` block is one transaction: committed on
    # a normal exit, rolled back on an exception.
    def _one(self, sql: str, args: tuple[Any, ...] = ()) -> dict[str, Any] | None:
        with self._pool.connection() as db:
            return db.execute(sql.encode(), args).fetchone()

    def _all(self, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self._pool.connection() as db:
            return db.execute(sql.encode(), args).fetchall()

    def _count(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        row = self._one(sql, args)
        return int(row["n"]) if row else 0

    def _rowcount(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        with self._pool.connection() as db:
            return db.execute(sql.encode(), args).rowcount

    # ---------------------------------------------------------------- tasks
    def create_task(
        self, user: str, key_id: str, request: dict[str, Any], webhook_url: str | None
    ) -> Task:
        task_id, run_id, now = new_id("task"), new_id("run"), time.time()
        with self._pool.connection() as db:
            db.execute(
                'INSERT INTO tasks (id, "user", key_id, status, request, run_id, created_at,'
                " webhook_url, webhook_state) VALUES (%s, %s, %s, 'queued', %s, %s, %s, %s, %s)",
                (
                    task_id,
                    user,
                    key_id,
                    json.dumps(request),
                    run_id,
                    now,
                    webhook_url,
                    "pending" if webhook_url else "none",
                ),
            )
            db.execute(
                'INSERT INTO runs (run_id, "user", kind, task_id, question, status, created_at)'
                " VALUES (%s, %s, 'task', %s, %s, 'queued', %s)",
                (run_id, user, task_id, request["question"], now),
            )
        task = self.get_task(task_id)
        assert task is not None
        return task

    def count_active(self, key_id: str) -> int:
        return self._count(
            "SELECT COUNT(*) AS n FROM tasks WHERE key_id = %s AND status IN ('queued', 'running')",
            (key_id,),
        )

    def task_row(self, task_id: str) -> dict[str, Any] | None:
        return self._one("SELECT * FROM tasks WHERE id = %s", (task_id,))

    def list_tasks(
        self, user: str, limit: int, cursor: str | None
    ) -> tuple[list[Task], str | None]:
        args: tuple[Any, ...]
        if cursor:
            # The cursor is "<created_at>:<id>" of the last item on the previous page.
            created, _, last_id = cursor.partition(":")
            args = (user, float(created), float(created), last_id, limit + 1)
            sql = (
                'SELECT * FROM tasks WHERE "user" = %s AND (created_at < %s OR (created_at = %s'
                " AND id < %s)) ORDER BY created_at DESC, id DESC LIMIT %s"
            )
        else:
            args = (user, limit + 1)
            sql = 'SELECT * FROM tasks WHERE "user" = %s ORDER BY created_at DESC, id DESC LIMIT %s'
        rows = self._all(sql, args)
        more = len(rows) > limit
        rows = rows[:limit]
        nxt = f"{rows[-1]['created_at']!r}:{rows[-1]['id']}" if more and rows else None
        return [self._task(r) for r in rows], nxt

    def claim_next(self) -> dict[str, Any] | None:
        with self._pool.connection() as db:
            row = db.execute(
                "UPDATE tasks SET status = 'running', started_at = COALESCE(started_at, %s)"
                " WHERE id = (SELECT id FROM tasks WHERE status = 'queued'"
                " ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING *",
                (time.time(),),
            ).fetchone()
            if row is not None:
                db.execute("UPDATE runs SET status = 'running' WHERE run_id = %s", (row["run_id"],))
        return row

    def requeue_interrupted(self) -> int:
        return self._rowcount(
            "UPDATE tasks SET status = 'queued', resume = 1 WHERE status = 'running'"
        )

    def mark_resumed(self, task_id: str) -> None:
        self._rowcount(
            "UPDATE tasks SET resumed = resumed + 1, resume = 0 WHERE id = %s", (task_id,)
        )

    def finish(
        self,
        task_id: str,
        status: str,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> bool:
        now = time.time()
        with self._pool.connection() as db:
            row = db.execute(
                "UPDATE tasks SET status = %s, finished_at = %s, result = %s, error = %s"
                " WHERE id = %s AND status NOT IN ('succeeded', 'failed', 'cancelled')"
                " RETURNING run_id",
                (
                    status,
                    now,
                    json.dumps(result) if result is not None else None,
                    json.dumps(error) if error is not None else None,
                    task_id,
                ),
            ).fetchone()
            if row is None:
                return False
            db.execute(
                "UPDATE runs SET status = %s, finished_at = %s WHERE run_id = %s",
                (status, now, row["run_id"]),
            )
        return True

    def cancel_queued(self, task_id: str) -> bool:
        now = time.time()
        with self._pool.connection() as db:
            row = db.execute(
                "UPDATE tasks SET status = 'cancelled', finished_at = %s WHERE id = %s"
                " AND status = 'queued' RETURNING run_id",
                (now, task_id),
            ).fetchone()
            if row is not None:
                db.execute(
                    "UPDATE runs SET status = 'cancelled', finished_at = %s WHERE run_id = %s",
                    (now, row["run_id"]),
                )
        return row is not None

    def set_progress(self, task_id: str, progress: TaskProgress) -> None:
        self._rowcount(
            "UPDATE tasks SET progress = %s WHERE id = %s",
            (progress.model_dump_json(), task_id),
        )

    # --------------------------------------------------------------- events
    def append_event(self, task_id: str, event: dict[str, Any]) -> int:
        with self._pool.connection() as db:
            db.execute("SELECT pg_advisory_xact_lock(%s)", (_event_lock_key(task_id),))
            row = db.execute(
                "SELECT COALESCE(MAX(seq), 0) AS n FROM task_events WHERE task_id = %s",
                (task_id,),
            ).fetchone()
            seq = int(row["n"] if row else 0) + 1
            db.execute(
                "INSERT INTO task_events (task_id, seq, event) VALUES (%s, %s, %s)",
                (task_id, seq, json.dumps({**event, "seq": seq}, default=str)),
            )
        return seq

    def events_after(self, task_id: str, after: int, limit: int = 500) -> list[dict[str, Any]]:
        rows = self._all(
            "SELECT event FROM task_events WHERE task_id = %s AND seq > %s ORDER BY seq LIMIT %s",
            (task_id, after, limit),
        )
        return [json.loads(r["event"]) for r in rows]

    # ------------------------------------------------------------- webhooks
    def prepare_webhook(self, task_id: str, webhook_id: str, body: str) -> tuple[str, str]:
        with self._pool.connection() as db:
            row = db.execute(
                "UPDATE tasks SET webhook_id = COALESCE(webhook_id, %s),"
                " webhook_body = COALESCE(webhook_body, %s) WHERE id = %s"
                " RETURNING webhook_id, webhook_body",
                (webhook_id, body, task_id),
            ).fetchone()
        if row is None:
            raise KeyError(task_id)
        return row["webhook_id"], row["webhook_body"]

    def log_delivery(self, task_id: str, delivery: WebhookDelivery) -> None:
        self._rowcount(
            "INSERT INTO deliveries (task_id, attempt, webhook_id, at, status_code, error, ok)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (
                task_id,
                delivery.attempt,
                delivery.webhook_id,
                delivery.at.timestamp(),
                delivery.status_code,
                delivery.error,
                int(delivery.ok),
            ),
        )

    def count_deliveries(self, task_id: str) -> int:
        return self._count("SELECT COUNT(*) AS n FROM deliveries WHERE task_id = %s", (task_id,))

    def set_webhook_state(self, task_id: str, state: str) -> None:
        self._rowcount("UPDATE tasks SET webhook_state = %s WHERE id = %s", (state, task_id))

    def pending_webhooks(self) -> list[str]:
        rows = self._all(
            "SELECT id FROM tasks WHERE webhook_state = 'pending'"
            " AND status IN ('succeeded', 'failed', 'cancelled') ORDER BY finished_at"
        )
        return [r["id"] for r in rows]

    def _deliveries(self, task_id: str) -> list[TaskRow]:
        return list(
            self._all(
                "SELECT * FROM deliveries WHERE task_id = %s ORDER BY at, attempt", (task_id,)
            )
        )

    # ---------------------------------------------------------- idempotency
    def idem_begin(self, user: str, key: str, request_hash: str) -> IdemClaim:
        while True:
            with self._pool.connection() as db:
                inserted = db.execute(
                    'INSERT INTO idempotency ("user", key, request_hash, state, created_at)'
                    " VALUES (%s, %s, %s, 'creating', %s)"
                    ' ON CONFLICT ("user", key) DO NOTHING RETURNING key',
                    (user, key, request_hash, time.time()),
                ).fetchone()
                if inserted is not None:
                    return IdemClaim("new")
                row = db.execute(
                    'SELECT * FROM idempotency WHERE "user" = %s AND key = %s', (user, key)
                ).fetchone()
            if row is None:  # abandoned between the two statements: claim it again
                continue
            if row["request_hash"] != request_hash:
                return IdemClaim("mismatch")
            if row["state"] == "creating":
                return IdemClaim("in_flight")
            return IdemClaim("replay", json.loads(row["response"]))

    def idem_finish(self, user: str, key: str, response: dict[str, Any]) -> None:
        self._rowcount(
            "UPDATE idempotency SET state = 'done', response = %s, task_id = %s"
            ' WHERE "user" = %s AND key = %s',
            (json.dumps(response, default=str), response.get("id"), user, key),
        )

    def idem_abandon(self, user: str, key: str) -> None:
        self._rowcount(
            "DELETE FROM idempotency WHERE \"user\" = %s AND key = %s AND state = 'creating'",
            (user, key),
        )

    def idem_clear_stale(self) -> int:
        return self._rowcount("DELETE FROM idempotency WHERE state = 'creating'")

    # ----------------------------------------------------------------- runs
    def register_run(self, run_id: str, user: str, question: str, kind: str = "answer") -> None:
        self._rowcount(
            'INSERT INTO runs (run_id, "user", kind, question, status, created_at)'
            " VALUES (%s, %s, %s, %s, 'running', %s) ON CONFLICT (run_id) DO NOTHING",
            (run_id, user, kind, question, time.time()),
        )

    def finish_run(self, run_id: str, status: str) -> None:
        self._rowcount(
            "UPDATE runs SET status = %s, finished_at = %s WHERE run_id = %s",
            (status, time.time(), run_id),
        )

    def get_run(self, run_id: str, user: str) -> RunSummary | None:
        row = self._one('SELECT * FROM runs WHERE run_id = %s AND "user" = %s', (run_id, user))
        return None if row is None else self._run(row)

    def list_runs(self, user: str, limit: int = 100) -> list[RunSummary]:
        rows = self._all(
            'SELECT * FROM runs WHERE "user" = %s ORDER BY created_at DESC LIMIT %s',
            (user, limit),
        )
        return [self._run(r) for r in rows]

    # ---------------------------------------------------------- source jobs
    def create_source_job(self, source: str, user: str) -> SourceJob:
        job_id = new_id("job")
        self._rowcount(
            'INSERT INTO source_jobs (id, source, "user", status, created_at)'
            " VALUES (%s, %s, %s, 'queued', %s)",
            (job_id, source, user, time.time()),
        )
        job = self.get_source_job(job_id)
        assert job is not None
        return job

    def active_source_job(self, source: str) -> str | None:
        row = self._one(
            "SELECT id FROM source_jobs WHERE source = %s AND status IN ('queued', 'running')",
            (source,),
        )
        return None if row is None else str(row["id"])

    def update_source_job(self, job_id: str, status: str, **fields: Any) -> None:
        report = fields.get("report")
        failures = fields.get("failures")
        self._rowcount(
            "UPDATE source_jobs SET status = %s, report = COALESCE(%s, report),"
            " failures = COALESCE(%s, failures), error = COALESCE(%s, error),"
            " finished_at = CASE WHEN %s::text IN ('succeeded', 'failed')"
            " THEN %s::double precision ELSE NULL END WHERE id = %s",
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

    def fail_interrupted_source_jobs(self) -> int:
        return self._rowcount(
            "UPDATE source_jobs SET status = 'failed', finished_at = %s,"
            " error = 'interrupted by a server restart; sync again'"
            " WHERE status IN ('queued', 'running')",
            (time.time(),),
        )

    def get_source_job(self, job_id: str) -> SourceJob | None:
        row = self._one("SELECT * FROM source_jobs WHERE id = %s", (job_id,))
        return None if row is None else self._source_job(row)
