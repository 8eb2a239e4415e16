"""The task store in PostgreSQL (``WAYPOINT_TASKS_URL=postgresql://...``).

Same tables, encodings and semantics as :class:`api.tasks.store.SqliteTaskStore` (times
as epoch seconds in ``double precision``, JSON as text), so the SQL, the status
transitions and the row mapping are the shared code in :class:`api.tasks.store.TaskStore`;
this module supplies the connections, the schema and the locking. Each call is one short
transaction on a connection from a small psycopg 3 pool; the interface stays
synchronous like the SQLite store's, and the service calls it in worker threads.

What Postgres changes beyond the SQL dialect:

- claiming a task uses ``FOR UPDATE SKIP LOCKED``, so several processes sharing one
  database never claim the same task;
- an event's sequence id is assigned under a per-task transaction-scoped advisory lock,
  so concurrent appenders still get 1, 2, 3, ... without gaps or duplicates;
- an idempotency claim is ``INSERT ... ON CONFLICT DO NOTHING`` (exactly one claimant).

- several service processes may share one database: each holds a lease it renews
  (``TaskStore.heartbeat``), and any of them takes back the running tasks, idempotency
  claims and sync jobs of an owner whose lease lapsed (``TaskStore.recover``). A process
  starting up does not take back what another left running until that lease lapses
  (SQLite, one process per file, takes it back at once). Leases compare the hosts' wall
  clocks, so the hosts keep them in sync (NTP): a skew near the lease would let a peer take
  back live work. Work without an owner (rows from a version before leases) counts as
  gone: stop every process of an older version before starting this one.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from psycopg import Connection
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from api.tasks.store import ADDED_COLUMNS, TaskStore, TasksUrlError, Tx

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
CREATE TABLE IF NOT EXISTS webhook_outbox (
    webhook_id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_outbox_task ON webhook_outbox(task_id);
CREATE TABLE IF NOT EXISTS workers (
    owner TEXT PRIMARY KEY,
    lease_until DOUBLE PRECISION NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    pid INTEGER,
    host TEXT
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
    # Several processes may share one database: a claim skips rows another one holds.
    _CLAIM_LOCK: ClassVar[str] = " FOR UPDATE SKIP LOCKED"

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
                # Looked up first: ALTER TABLE locks the table even when it adds nothing.
                have = {
                    (r["table_name"], r["column_name"])
                    for r in db.execute(
                        "SELECT table_name, column_name FROM information_schema.columns"
                        " WHERE table_schema = current_schema()"
                    )
                }
                for table, column, decl in ADDED_COLUMNS:
                    if (table, column) not in have:
                        db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}".encode())
        except BaseException:
            self._pool.close()
            raise
        super().__init__()

    def close(self) -> None:
        self._pool.close()

    # Every `with self._pool.connection() as db:` block is one transaction: committed on
    # a normal exit, rolled back on an exception.
    @contextmanager
    def _tx(self) -> Iterator[Tx]:
        with self._pool.connection() as db:

            def execute(sql: str, args: tuple[Any, ...]) -> Any:
                # The shared SQL has no literal "?" or "%", so this is the whole translation.
                return db.execute(sql.replace("?", "%s").encode(), args)

            yield Tx(execute)

    _read = _tx

    def _lock_task_events(self, db: Tx, task_id: str) -> None:
        # Transaction-scoped: concurrent appenders to one task get 1, 2, 3, ... in turn.
        db.one("SELECT pg_advisory_xact_lock(?)", (_event_lock_key(task_id),))
