"""The Postgres task store against a real server, held to the SQLite store's behaviour.

Three layers:

1. a store-level suite parametrised over both backends (idempotency keys, event sequence
   ids and replay, status transitions, the webhook delivery log, restart recovery, runs,
   source jobs), so the two stores are checked by the same assertions;
2. concurrency only Postgres promises (several processes sharing one database):
   concurrent event appends and concurrent claims;
3. the service-level task tests of tests/unit/api/test_tasks_and_streams.py, re-run
   with ``WAYPOINT_TASKS_URL`` pointing at the Postgres server (lifecycle, ownership,
   pagination, idempotency over HTTP, cancel, restart-resume, signed webhooks).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from api.schemas import TaskProgress, WebhookDelivery
from api.settings import ApiSettings
from api.tasks.store import (
    DELIVERY_INTERRUPTED,
    Closing,
    SqliteTaskStore,
    TaskStore,
    TasksUrlError,
    check_tasks_url,
    sqlite_path_from_url,
)

# The service-level cases, re-run below against Postgres: their fixtures and tests.
from tests.unit.api import test_tasks_and_streams as unit
from tests.unit.api.conftest import auth_file, client, harness, researcher  # noqa: F401

pytestmark = pytest.mark.integration

REQ = {"question": "what is the failover runbook?", "mode": "hybrid"}


def result_for(run_id: str, answer: str = "x") -> dict[str, object]:
    return {
        "run_id": run_id,
        "question": REQ["question"],
        "mode": "hybrid",
        "answer": answer,
        "answerable": True,
    }


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'tasks.sqlite'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(store_url: str) -> Iterator[TaskStore]:
    s = TaskStore.open(store_url)
    yield s
    s.close()


def test_open_selects_backend(store: TaskStore, store_url: str) -> None:
    if store_url.startswith("postgresql://"):
        from api.tasks.pg_store import PostgresTaskStore

        assert isinstance(store, PostgresTaskStore)
    else:
        assert isinstance(store, SqliteTaskStore)
    check_tasks_url(store_url)


def test_bad_urls_are_one_line_errors() -> None:
    with pytest.raises(TasksUrlError, match="sqlite:///path or postgresql://"):
        check_tasks_url("mysql://x/y")
    check_tasks_url("postgres://u@h/db")  # psycopg is installed here: accepted, no connect


def test_unreachable_postgres_is_a_one_line_error() -> None:
    pytest.importorskip("psycopg_pool")
    from api.tasks.pg_store import PostgresTaskStore

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    url = f"postgresql://u:secret@127.0.0.1:{port}/db?connect_timeout=1"
    with pytest.raises(TasksUrlError, match="cannot connect") as err:
        PostgresTaskStore(url, connect_timeout_s=1.5)
    assert "secret" not in str(err.value) and "\n" not in str(err.value)


# ------------------------------------------------------------------ task lifecycle
def test_create_get_and_ownership(store: TaskStore) -> None:
    t = store.create_task("ana", "kA", REQ, None)
    assert t.status == "queued" and t.question == REQ["question"] and t.webhook is None
    assert store.get_task(t.id, "ana") == t
    assert store.get_task(t.id, "bob") is None
    assert store.get_task("task_missing") is None
    assert store.count_active("kA") == 1 and store.count_active("kB") == 0
    run = store.get_run(t.run_id, "ana")
    assert run is not None and run.kind == "task" and run.task_id == t.id
    assert store.get_run(t.run_id, "bob") is None


def test_list_newest_first_with_cursor(store: TaskStore) -> None:
    ids = [store.create_task("ana", "kA", {**REQ, "question": f"q{i}"}, None).id for i in range(5)]
    store.create_task("bob", "kB", REQ, None)
    page, cursor = store.list_tasks("ana", 2, None)
    seen = [t.id for t in page]
    while cursor:
        page, cursor = store.list_tasks("ana", 2, cursor)
        seen += [t.id for t in page]
    assert seen == list(reversed(ids))


def test_claim_transitions_and_finish_once(store: TaskStore) -> None:
    a = store.create_task("ana", "kA", REQ, None)
    b = store.create_task("ana", "kA", REQ, None)
    row = store.claim_next()
    assert row is not None and row["id"] == a.id and row["status"] == "running"
    assert row["user"] == "ana" and row["resume"] == 0
    got = store.get_task(a.id)
    assert got is not None and got.status == "running" and got.started_at is not None
    run = store.get_run(a.run_id, "ana")
    assert run is not None and run.status == "running"
    progress = TaskProgress(round=2, tool_calls=3, evidence=4)
    store.set_progress(a.id, progress)
    assert store.finish(a.id, "succeeded", result=result_for(a.run_id)) is True
    assert store.finish(a.id, "failed", error={"code": "late"}) is False
    done = store.get_task(a.id)
    assert done is not None and done.status == "succeeded" and done.result is not None
    assert done.result.answer == "x" and done.result.run_id == a.run_id
    assert done.progress == progress and done.finished_at is not None and done.error is None
    run = store.get_run(a.run_id, "ana")
    assert run is not None and run.status == "succeeded" and run.finished_at is not None
    # cancel only touches queued tasks
    assert store.cancel_queued(a.id) is False
    assert store.cancel_queued(b.id) is True
    assert store.cancel_queued(b.id) is False
    cancelled = store.get_task(b.id)
    assert cancelled is not None and cancelled.status == "cancelled"
    assert store.claim_next() is None
    assert store.count_active("kA") == 0
    assert store.finish(b.id, "failed") is False


def test_the_closing_event_is_stored_with_the_terminal_status(store: TaskStore) -> None:
    """A reader that sees a task ended sees its stream's last event too."""
    t = store.create_task("ana", "kA", REQ, None)
    queued = store.create_task("ana", "kA", REQ, None)
    store.claim_next()
    failed = Closing("error", {"code": "run_failed", "message": "boom"})
    assert store.finish(t.id, "failed", error=failed.data, closing=failed)
    assert not store.finish(t.id, "succeeded", closing=Closing("done", {}))  # ended already
    (event,) = store.events_after(t.id, 0)
    assert (event["type"], event["data"], event["run_id"]) == ("error", failed.data, t.run_id)
    cancelled = Closing("error", {"code": "cancelled", "message": "cancelled"})
    assert store.cancel_queued(queued.id, cancelled)
    assert not store.cancel_queued(queued.id, cancelled)
    assert [e["type"] for e in store.events_after(queued.id, 0)] == ["error"]


def test_failure_keeps_error(store: TaskStore) -> None:
    t = store.create_task("ana", "kA", REQ, None)
    store.claim_next()
    assert store.finish(t.id, "failed", error={"code": "run_failed", "message": "boom"})
    got = store.get_task(t.id)
    assert got is not None and got.error is not None
    assert (got.error.code, got.error.message) == ("run_failed", "boom")


# ------------------------------------------------------------------------- events
def test_event_sequence_ids_and_replay(store: TaskStore) -> None:
    t = store.create_task("ana", "kA", REQ, None)
    other = store.create_task("ana", "kA", REQ, None)
    seqs = [store.append_event(t.id, {"event": "progress", "data": {"i": i}}) for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5]
    assert store.append_event(other.id, {"event": "x"}) == 1  # per task
    events = store.events_after(t.id, 0)
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5]
    assert events[2] == {"event": "progress", "data": {"i": 2}, "seq": 3}
    # Last-Event-ID: 3 -> resume with 4
    assert [e["seq"] for e in store.events_after(t.id, 3)] == [4, 5]
    assert [e["seq"] for e in store.events_after(t.id, 1, limit=2)] == [2, 3]
    assert store.events_after(t.id, 5) == []
    # non-JSON values are stored as strings rather than failing
    when = datetime(2026, 1, 2, tzinfo=UTC)
    seq = store.append_event(t.id, {"event": "t", "at": when})
    assert store.events_after(t.id, seq - 1)[0]["at"] == str(when)


def test_a_resumed_runs_redone_steps_replace_the_stopped_attempts(store: TaskStore) -> None:
    t = store.create_task("ana", "kA", REQ, None)

    def step(etype: str, node: str, rnd: int) -> int:
        return store.append_event(t.id, {"type": etype, "node": node, "round": rnd, "data": {}})

    store.append_event(t.id, {"type": "metadata", "data": {"resumed": False}})
    step("node_start", "plan", 2)
    step("node_end", "plan", 2)
    first_redone = step("node_start", "execute", 2)
    step("tool_call", "execute", 2)
    last = step("node_start", "fuse", 2)
    marker = store.append_event(t.id, {"type": "metadata", "data": {"resumed": True}})
    assert store.replace_redone_events(t.id, "plan", 9, marker) == 0  # never reached: kept
    assert store.replace_redone_events(t.id, "execute", 2, marker) == last - first_redone + 1
    assert store.append_event(t.id, {"type": "node_start", "node": "execute", "round": 2}) == (
        marker + 1  # ids only grow
    )
    kept = [(e["type"], e.get("node"), e["seq"]) for e in store.events_after(t.id, 0)]
    assert kept == [
        ("metadata", None, 1),
        ("node_start", "plan", 2),
        ("node_end", "plan", 3),
        ("metadata", None, marker),
        ("node_start", "execute", marker + 1),
    ]


# ----------------------------------------------------------------------- webhooks
def test_an_attempt_logged_in_flight_is_completed_or_marked_interrupted(
    store: TaskStore,
) -> None:
    t = store.create_task("ana", "kA", REQ, "http://127.0.0.1:9/hook")
    store.begin_delivery(t.id, 1, "msg_1")
    assert store.count_deliveries(t.id) == 1
    assert store.interrupt_deliveries(t.id) == 1  # the process stopped mid-send
    store.begin_delivery(t.id, 2, "msg_1")
    at = datetime.now(UTC)
    store.log_delivery(
        t.id, WebhookDelivery(attempt=2, webhook_id="msg_1", at=at, status_code=204, ok=True)
    )
    got = store.get_task(t.id)
    assert got is not None and got.webhook is not None
    assert [(d.attempt, d.status_code, d.error, d.ok) for d in got.webhook.deliveries] == [
        (1, None, DELIVERY_INTERRUPTED, False),
        (2, 204, None, True),
    ]
    assert store.interrupt_deliveries(t.id) == 0


def test_webhook_id_fixed_and_delivery_log(store: TaskStore) -> None:
    t = store.create_task("ana", "kA", REQ, "http://127.0.0.1:9/hook")
    assert t.webhook is not None and t.webhook.state == "pending"
    assert store.pending_webhooks() == []  # not finished yet
    store.claim_next()
    store.finish(t.id, "succeeded", result=result_for(t.run_id, "a"))
    assert store.pending_webhooks() == [t.id]
    assert store.prepare_webhook(t.id, "msg_1", '{"a":1}') == ("msg_1", '{"a":1}')
    assert store.prepare_webhook(t.id, "msg_2", '{"b":2}') == ("msg_1", '{"a":1}')
    at = datetime.now(UTC)
    store.log_delivery(
        t.id, WebhookDelivery(attempt=1, webhook_id="msg_1", at=at, status_code=503, ok=False)
    )
    store.log_delivery(
        t.id,
        WebhookDelivery(
            attempt=2, webhook_id="msg_1", at=at, status_code=None, error="refused", ok=False
        ),
    )
    store.log_delivery(
        t.id, WebhookDelivery(attempt=3, webhook_id="msg_1", at=at, status_code=204, ok=True)
    )
    assert store.count_deliveries(t.id) == 3
    store.set_webhook_state(t.id, "delivered")
    assert store.pending_webhooks() == []
    got = store.get_task(t.id)
    assert got is not None and got.webhook is not None
    assert got.webhook.state == "delivered" and got.webhook.webhook_id == "msg_1"
    log = got.webhook.deliveries
    assert [(d.attempt, d.status_code, d.error, d.ok) for d in log] == [
        (1, 503, None, False),
        (2, None, "refused", False),
        (3, 204, None, True),
    ]
    assert abs(log[0].at.timestamp() - at.timestamp()) < 1e-3


# -------------------------------------------------------------------- idempotency
def test_idempotency_claims(store: TaskStore, store_url: str) -> None:
    assert store.idem_begin("ana", "k1", "h1").outcome == "new"
    assert store.idem_begin("ana", "k1", "h1").outcome == "in_flight"
    assert store.idem_begin("ana", "k1", "h2").outcome == "mismatch"
    assert store.idem_begin("bob", "k1", "h2").outcome == "new"  # keys are per user
    response = {"id": "task_1", "status": "queued", "n": [1, 2]}
    store.idem_finish("ana", "k1", response)
    replay = store.idem_begin("ana", "k1", "h1")
    assert replay.outcome == "replay" and replay.response == response
    assert store.idem_begin("ana", "k1", "h2").outcome == "mismatch"
    # a failed first request frees its key; a finished one is never abandoned
    assert store.idem_begin("ana", "k2", "h").outcome == "new"
    store.idem_abandon("ana", "k2")
    assert store.idem_begin("ana", "k2", "other").outcome == "new"
    store.idem_abandon("ana", "k1")
    assert store.idem_begin("ana", "k1", "h1").outcome == "replay"
    # claims still 'creating' are freed once their owner is gone, never while it lives
    other = TaskStore.open(store_url)
    try:
        store.heartbeat(60)
        assert other.recover().idempotency_keys == 0
        assert other.recover(exclusive=True).idempotency_keys == 2  # ana/k2 and bob/k1
    finally:
        other.close()
    assert store.idem_begin("bob", "k1", "h9").outcome == "new"


# ----------------------------------------------------------------------- recovery
def test_restart_recovery(store: TaskStore, store_url: str) -> None:
    running = store.create_task("ana", "kA", REQ, None)
    queued = store.create_task("ana", "kA", REQ, None)
    done = store.create_task("ana", "kA", REQ, None)
    assert store.claim_next() is not None  # running
    store.claim_next()
    store.finish(queued.id, "succeeded")  # second claimed is `queued`; finish it
    store.append_event(running.id, {"event": "progress"})
    store.close()
    # "crash": a new store on the same URL sees everything and recovers
    again = TaskStore.open(store_url)
    try:
        assert again.recover(exclusive=True).tasks == 1
        row = again.claim_next()
        assert row is not None and row["id"] == running.id and row["resume"] == 1
        again.mark_resumed(running.id)
        row2 = again.task_row(running.id)
        assert row2 is not None and row2["resume"] == 0
        got = again.get_task(running.id)
        assert got is not None and got.resumed == 1 and got.status == "running"
        assert again.append_event(running.id, {"event": "progress"}) == 2
        nxt = again.claim_next()
        assert nxt is not None and nxt["id"] == done.id and nxt["resume"] == 0
        assert again.claim_next() is None
    finally:
        again.close()


def test_work_of_an_owner_whose_lease_lapsed_is_taken_back(store_url: str) -> None:
    a, b = TaskStore.open(store_url), TaskStore.open(store_url)  # two processes
    try:
        task = a.create_task("ana", "kA", REQ, None)
        a.heartbeat(60)
        b.heartbeat(60)
        claimed = a.claim_next()
        assert claimed is not None and claimed["id"] == task.id
        assert a.idem_begin("ana", "k", "h").outcome == "new"
        job = a.create_source_job("wiki", "ana")
        assert not b.recover()  # a's lease holds: nothing of it is taken
        assert a.owned_running() == {task.id: False}
        # b cannot cancel a's run itself: it asks, and a reads it at its next heartbeat
        assert b.request_cancel(task.id) and a.owned_running() == {task.id: True}
        a.heartbeat(-1)  # a stopped renewing: its lease has lapsed
        got = b.recover()
        assert (got.tasks, got.idempotency_keys, got.source_jobs) == (1, 1, 1)
        row = b.claim_next()
        assert row is not None and row["id"] == task.id and row["resume"] == 1
        assert row["cancel_requested"] == 1  # still asked: the claimant cancels it (the pool)
        assert a.owned_running() == {}
        # a's late writes are refused: no progress, no finish
        assert a.set_progress(task.id, TaskProgress(round=9)) is False
        assert a.finish(task.id, "succeeded", result=result_for(task.run_id)) is False
        assert b.finish(task.id, "succeeded", result=result_for(task.run_id)) is True
        failed = b.get_source_job(job.id)
        assert failed is not None and failed.status == "failed"
        assert b.idem_begin("ana", "k", "h").outcome == "new"
        # an unsent webhook is its owner's to send while it lives, then anyone's
        hooked = a.create_task("ana", "kA", REQ, "http://127.0.0.1:9/hook")
        a.heartbeat(60)
        assert b.claim_next() is not None and b.finish(hooked.id, "succeeded") is True
        assert a.claim_webhooks() == [] and b.claim_webhooks() == []  # b lives: b sends it
        b.heartbeat(-1)
        assert a.claim_webhooks() == [hooked.id] and a.claim_webhooks() == []
        b.heartbeat(60)
        # a clean stop hands its running tasks back at once, marked to resume
        second = a.create_task("ana", "kA", REQ, None)
        held = b.claim_next()
        assert held is not None and held["id"] == second.id
        assert b.release() == 1
        again = a.claim_next()
        assert again is not None and again["id"] == second.id and again["resume"] == 1
    finally:
        a.close()
        b.close()


# The tables that gained columns, as the release before leases made them (one DDL both
# backends read: "user" quoted, DOUBLE PRECISION).
_BEFORE_LEASES = [
    'CREATE TABLE tasks (id TEXT PRIMARY KEY, "user" TEXT NOT NULL, key_id TEXT NOT NULL,'
    " status TEXT NOT NULL, request TEXT NOT NULL, run_id TEXT NOT NULL,"
    " created_at DOUBLE PRECISION NOT NULL, started_at DOUBLE PRECISION,"
    " finished_at DOUBLE PRECISION, progress TEXT NOT NULL DEFAULT '{}', result TEXT,"
    " error TEXT, resume INTEGER NOT NULL DEFAULT 0, resumed INTEGER NOT NULL DEFAULT 0,"
    " webhook_url TEXT, webhook_state TEXT NOT NULL DEFAULT 'none', webhook_id TEXT,"
    " webhook_body TEXT)",
    'CREATE TABLE idempotency ("user" TEXT NOT NULL, key TEXT NOT NULL,'
    " request_hash TEXT NOT NULL, state TEXT NOT NULL, task_id TEXT, response TEXT,"
    ' created_at DOUBLE PRECISION NOT NULL, PRIMARY KEY ("user", key))',
    'CREATE TABLE source_jobs (id TEXT PRIMARY KEY, source TEXT NOT NULL, "user" TEXT NOT NULL,'
    " status TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,"
    " finished_at DOUBLE PRECISION, report TEXT, failures TEXT, error TEXT)",
    'INSERT INTO tasks (id, "user", key_id, status, request, run_id, created_at)'
    """ VALUES ('task_old', 'ana', 'kA', 'running', '{"question": "q"}', 'run_old', 1.0)""",
    'INSERT INTO idempotency ("user", key, request_hash, state, created_at)'
    " VALUES ('ana', 'k', 'h', 'creating', 1.0)",
    'INSERT INTO source_jobs (id, source, "user", status, created_at)'
    " VALUES ('job_old', 'wiki', 'ana', 'running', 1.0)",
]


def test_a_database_from_before_leases_gets_the_new_columns(store_url: str) -> None:
    if store_url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_url) as conn:
            for statement in _BEFORE_LEASES:
                conn.execute(statement.encode())
    else:
        import sqlite3

        db = sqlite3.connect(sqlite_path_from_url(store_url))
        for statement in _BEFORE_LEASES:
            db.execute(statement)
        db.commit()
        db.close()
    store = TaskStore.open(store_url)
    try:
        # work the old version left has no owner: taken back even by a lease-reading peer
        store.heartbeat(60)
        got = store.recover()
        assert (got.tasks, got.idempotency_keys, got.source_jobs) == (1, 1, 1)
        row = store.claim_next()
        assert row is not None and row["id"] == "task_old" and row["owner"] == store.owner
        assert row["cancel_requested"] == 0
    finally:
        store.close()
    TaskStore.open(store_url).close()  # opening it again adds nothing and fails nothing


# ---------------------------------------------------------------- runs and jobs
def test_runs_registry(store: TaskStore) -> None:
    store.register_run("run_a", "ana", "q1")
    store.register_run("run_a", "ana", "ignored")  # idempotent
    store.register_run("run_b", "ana", "q2", kind="answer")
    store.finish_run("run_a", "succeeded")
    a = store.get_run("run_a", "ana")
    assert a is not None and a.question == "q1" and a.status == "succeeded"
    assert a.finished_at is not None and a.kind == "answer"
    assert [r.run_id for r in store.list_runs("ana")] == ["run_b", "run_a"]
    assert store.list_runs("bob") == []


def test_source_jobs(store: TaskStore, store_url: str) -> None:
    job = store.create_source_job("wiki", "ana")
    assert job.status == "queued" and job.finished_at is None
    assert store.active_source_job("wiki") == job.id
    store.update_source_job(job.id, "running")
    store.update_source_job(job.id, "succeeded", report={"added": 3}, failures=["a.md: bad"])
    got = store.get_source_job(job.id)
    assert got is not None and got.status == "succeeded" and got.report == {"added": 3}
    assert got.failures == ["a.md: bad"] and got.finished_at is not None
    assert store.active_source_job("wiki") is None
    other = store.create_source_job("tickets", "ana")
    after_restart = TaskStore.open(store_url)  # the process that started it is gone
    try:
        assert after_restart.recover(exclusive=True).source_jobs == 1
    finally:
        after_restart.close()
    failed = store.get_source_job(other.id)
    assert failed is not None and failed.status == "failed"
    assert "server running it stopped" in (failed.error or "")
    assert store.get_source_job("job_missing") is None


# -------------------------------------------------- Postgres-only: shared database
def test_pg_concurrent_event_appends_get_distinct_sequence_ids(pg_url: str) -> None:
    stores = [TaskStore.open(pg_url) for _ in range(3)]
    try:
        t = stores[0].create_task("ana", "kA", REQ, None)
        out: list[int] = []
        lock = threading.Lock()

        def append(s: TaskStore) -> None:
            for _ in range(20):
                seq = s.append_event(t.id, {"event": "e"})
                with lock:
                    out.append(seq)

        threads = [threading.Thread(target=append, args=(s,)) for s in stores for _ in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert sorted(out) == list(range(1, 121))
        assert [e["seq"] for e in stores[1].events_after(t.id, 0)] == list(range(1, 121))
    finally:
        for s in stores:
            s.close()


def test_pg_concurrent_claims_never_share_a_task(pg_url: str) -> None:
    stores = [TaskStore.open(pg_url) for _ in range(3)]
    try:
        ids = {stores[0].create_task("ana", "kA", REQ, None).id for _ in range(30)}
        claimed: list[str] = []
        lock = threading.Lock()

        def worker(s: TaskStore) -> None:
            while (row := s.claim_next()) is not None:
                with lock:
                    claimed.append(row["id"])

        threads = [threading.Thread(target=worker, args=(s,)) for s in stores for _ in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert len(claimed) == len(set(claimed)) == 30 and set(claimed) == ids
    finally:
        for s in stores:
            s.close()


# ------------------------------------------- service-level tests against Postgres
@pytest.fixture
def settings(tmp_path: Path, auth_file: Path, pg_url: str) -> ApiSettings:  # noqa: F811
    return ApiSettings(
        home=tmp_path / "home",
        auth_file=auth_file,
        tasks_url=pg_url,
        webhook_allow_private=True,
        webhook_backoff_initial_s=0.01,
        webhook_backoff_max_s=0.05,
        webhook_max_attempts=3,
        max_body_bytes=4_096,
        max_question_chars=200,
        task_workers=1,
    )


def test_service_uses_postgres(harness: unit.Harness) -> None:  # noqa: F811
    assert harness.settings.resolved_tasks_url().startswith("postgresql://")


test_pg_service_task_lifecycle_and_ownership = unit.test_task_lifecycle_and_ownership
test_pg_service_tasks_list_newest_first_with_cursor = unit.test_tasks_list_newest_first_with_cursor
test_pg_service_idempotency_replay_mismatch_in_flight = (
    unit.test_idempotency_replay_mismatch_in_flight
)
test_pg_service_failed_creation_frees_the_idempotency_key = (
    unit.test_failed_creation_frees_the_idempotency_key
)
test_pg_service_cap_on_active_tasks_per_key = unit.test_cap_on_active_tasks_per_key
test_pg_service_cancel_running_task = unit.test_cancel_running_task
test_pg_service_restart_resumes_running_task = unit.test_restart_resumes_running_task
test_pg_service_webhook_signed_retried_same_id = unit.test_webhook_signed_retried_same_id
test_pg_service_cancel_across_processes = (
    unit.test_a_task_running_in_another_process_is_cancelled_through_the_store
)
test_pg_service_task_taken_back_from_a_stalled_process = (
    unit.test_a_task_taken_back_from_a_stalled_process_finishes_once_elsewhere
)
test_pg_service_cancel_kept_across_a_stop = (
    unit.test_a_cancel_asked_of_a_process_that_stops_first_is_kept_by_the_next
)
test_pg_service_runs_dropped_in_an_outage_run_again = (
    unit.test_runs_dropped_in_a_store_outage_longer_than_the_lease_are_run_again
)
test_pg_service_unreadable_request_fails_its_task = (
    unit.test_an_unreadable_request_fails_its_task_and_the_worker_goes_on
)
test_pg_service_webhook_after_failed_done_event = (
    unit.test_the_webhook_goes_out_even_when_the_done_event_write_fails
)
