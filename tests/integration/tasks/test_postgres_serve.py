"""`waypoint serve` with WAYPOINT_TASKS_URL and WAYPOINT_CHECKPOINT_URL on Postgres: the
killed-server case of tests/e2e/test_service.py (SIGKILL mid-run, restart, the running
task resumes from its checkpoint and every webhook arrives once by id with a valid
signature), with task state and research checkpoints in the session's Postgres server
instead of SQLite files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.e2e.conftest import (  # noqa: F401
    Receiver,
    Server,
    assert_resumed_and_delivered_once,
    built_index,
    post_tasks_and_kill_mid_run,
    receiver,
    restart_until_delivered,
)

pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.timeout(600)]


def test_killed_server_on_postgres_resumes_task_and_webhook_arrives_once(
    built_index: Path,  # noqa: F811
    tmp_path: Path,
    receiver: Receiver,  # noqa: F811
    pg_url: str,
) -> None:
    pytest.importorskip("langgraph.checkpoint.postgres")
    import psycopg

    home = tmp_path / "home"
    shutil.copytree(built_index, home)
    env = {
        "WAYPOINT_TASK_WORKERS": "1",
        "WAYPOINT_TASKS_URL": pg_url,
        "WAYPOINT_CHECKPOINT_URL": pg_url,
        # A shared database: the killed process's tasks are taken back once its lease
        # lapses (seconds here; 30 by default).
        "WAYPOINT_TASK_LEASE_S": "3",
    }
    srv = Server(home, tmp_path, **env).start()
    tasks = post_tasks_and_kill_mid_run(srv, receiver)
    assert not (home / "tasks.sqlite").exists()  # task state lives in Postgres
    with psycopg.connect(pg_url) as conn:
        interrupted = [r[0] for r in conn.execute("SELECT id FROM tasks WHERE status = 'running'")]
        checkpointed = {r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
    assert interrupted, "no task was running at the kill"
    assert {t["run_id"] for t in tasks if t["id"] in interrupted} <= checkpointed

    final, events = restart_until_delivered(
        srv, home, tmp_path, tasks, events_of=interrupted[0], **env
    )
    assert events is not None
    ids = [int(line[3:]) for line in events.splitlines() if line.startswith("id:")]
    assert ids and ids == sorted(ids) and len(ids) == len(set(ids))
    assert_resumed_and_delivered_once(final, tasks, interrupted, receiver)
