"""Retention: finished work older than WAYPOINT_RETENTION_DAYS is deleted, nothing else."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from api.auth import KeyRing
from api.tasks.store import PRUNE_BATCH, Pruned, SqliteTaskStore, TaskStore
from api.tasks.workers import WorkerPool
from api.webhooks import WebhookSender
from tests.unit.api.conftest import FakeResearcher

DAY = 86_400.0
NOW = time.time()
OLD = NOW - 40 * DAY  # past a 30-day retention
RECENT = NOW - 1 * DAY


def _task(store: TaskStore, status: str, finished: float | None, webhook: str = "none") -> str:
    """A task in ``status``, finished at ``finished``, with one event and one delivery."""
    task = store.create_task("ana", "k", {"question": "q"}, "http://h/x" if webhook else None)
    store._write(
        "UPDATE tasks SET status = ?, finished_at = ?, created_at = ?, webhook_state = ?"
        " WHERE id = ?",
        (status, finished, (finished or NOW) - 60, webhook, task.id),
    )
    store.append_event(task.id, {"type": "metadata", "data": {}})
    store.begin_delivery(task.id, 1, "msg_1")
    return task.id


def _ids(store: TaskStore, sql: str) -> set[str]:
    """The one column ``sql`` selects (rows are sqlite3.Row or dicts)."""
    return {next(iter(dict(r).values())) for r in store._all(sql)}


def test_prune_deletes_finished_work_older_than_the_cutoff_and_nothing_else(
    tmp_path: Path,
) -> None:
    check_prune(SqliteTaskStore(tmp_path / "tasks.sqlite"))


def check_prune(store: TaskStore) -> None:
    """The retention case, on any backend (tests/integration/tasks runs it on Postgres)."""
    old_done = _task(store, "succeeded", OLD, webhook="delivered")
    old_failed = _task(store, "failed", OLD)
    old_cancelled = _task(store, "cancelled", OLD)
    kept = {
        _task(store, "succeeded", RECENT),  # recent
        _task(store, "running", None),  # running, however old it was created
        _task(store, "queued", None),
        _task(store, "succeeded", OLD, webhook="pending"),  # its webhook is still to go out
    }
    # The run registry: an old finished answer, an old one still running, a recent one.
    for run_id, status, finished in (
        ("run_old", "succeeded", OLD),
        ("run_live", "running", None),
        ("run_new", "failed", RECENT),
    ):
        store.register_run(run_id, "ana", "q")
        store._write(
            "UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
            (status, finished, run_id),
        )
    # Idempotency keys: an old done one, an old one still being created, a recent one.
    for key, created in (("old", OLD), ("creating", OLD), ("new", RECENT)):
        store.idem_begin("ana", key, "h")
        if key != "creating":
            store.idem_finish("ana", key, {"id": old_done})
        store._write("UPDATE idempotency SET created_at = ? WHERE key = ?", (created, key))
    old_job = store.create_source_job("wiki", "ana").id
    live_job = store.create_source_job("docs", "ana").id
    store.update_source_job(old_job, "succeeded", report={})
    store._write("UPDATE source_jobs SET finished_at = ? WHERE id = ?", (OLD, old_job))

    pruned = store.prune(NOW - 30 * DAY)

    assert pruned == Pruned(tasks=3, runs=1, idempotency_keys=1, source_jobs=1)
    assert _ids(store, "SELECT id FROM tasks") == kept
    gone = {old_done, old_failed, old_cancelled}
    assert not gone & _ids(store, "SELECT task_id FROM task_events")
    assert not gone & _ids(store, "SELECT task_id FROM deliveries")
    assert _ids(store, "SELECT task_id FROM task_events") == kept
    runs = _ids(store, "SELECT run_id FROM runs WHERE task_id IS NULL")
    assert runs == {"run_live", "run_new"}
    assert not gone & _ids(store, "SELECT task_id FROM runs WHERE task_id IS NOT NULL")
    assert _ids(store, "SELECT key FROM idempotency") == {"creating", "new"}
    assert _ids(store, "SELECT id FROM source_jobs") == {live_job}
    assert not store.prune(NOW - 30 * DAY)  # nothing more to delete


def test_prune_deletes_in_batches(tmp_path: Path) -> None:
    store = SqliteTaskStore(tmp_path / "tasks.sqlite")
    for _ in range(PRUNE_BATCH + 3):
        _task(store, "succeeded", OLD)
    assert store.prune(NOW).tasks == PRUNE_BATCH + 3
    assert not _ids(store, "SELECT id FROM tasks")


async def test_the_worker_pool_prunes_on_its_heartbeat(tmp_path: Path) -> None:
    store = SqliteTaskStore(tmp_path / "tasks.sqlite")
    old = _task(store, "succeeded", OLD)
    recent = _task(store, "succeeded", RECENT)
    sender = WebhookSender(
        timeout_s=1, max_attempts=1, backoff_initial_s=0, backoff_max_s=0, allow_private=True
    )
    pool = WorkerPool(
        store, FakeResearcher(), sender, KeyRing({}), 1, lease_s=0.3, retention_s=30 * DAY
    )
    await pool.start()
    try:
        for _ in range(100):
            if old not in _ids(store, "SELECT id FROM tasks"):
                break
            await asyncio.sleep(0.02)
    finally:
        await pool.stop()
    assert _ids(store, "SELECT id FROM tasks") == {recent}


async def test_old_runs_lose_their_traces_and_checkpoints(tmp_path: Path) -> None:
    from graph.models import Caller, RunOptions
    from graph.runner import Researcher
    from tools.testing import ledger_corpus, memory_search

    r = Researcher(
        ledger_corpus(), checkpointer_path=tmp_path / "runs.sqlite", search_fn=memory_search
    )
    try:
        question = "Who wrote the Ledger runbook?"
        old = (await r.run(question, Caller(), RunOptions())).run_id
        new = (await r.run(question, Caller(), RunOptions())).run_id
        paused = (await r.run(question, Caller(), RunOptions())).run_id
        r.traces._db.execute(
            "UPDATE runs SET created = ? WHERE run_id IN (?, ?)", (OLD, old, paused)
        )
        r.traces._db.execute(
            "UPDATE runs SET status = 'input_required' WHERE run_id = ?", (paused,)
        )
        r.traces._db.commit()
        saver = await r.savers.saver()

        async def checkpointed(run_id: str) -> bool:
            return await saver.aget_tuple({"configurable": {"thread_id": run_id}}) is not None

        assert await checkpointed(old)

        assert await r.prune(NOW - 30 * DAY) == 1

        assert r.get_trace(old) == [] and not await checkpointed(old)
        assert r.get_trace(new) and await checkpointed(new)
        assert r.get_trace(paused) and await checkpointed(paused)  # waits for a person
        assert await r.prune(NOW - 30 * DAY) == 0
    finally:
        await r.aclose()
