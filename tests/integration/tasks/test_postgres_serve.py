"""`waypoint serve` with WAYPOINT_TASKS_URL and WAYPOINT_CHECKPOINT_URL on Postgres: the
killed-server case of tests/e2e/test_service.py (SIGKILL mid-run, restart, the running
task resumes from its checkpoint and every webhook arrives once by id with a valid
signature), with task state and research checkpoints in the session's Postgres server
instead of SQLite files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.e2e.conftest import ANA, Receiver, Server, built_index, receiver, wait_for  # noqa: F401

pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.timeout(600)]

QUESTIONS = [
    "Who leads the team that owns the Payments Service?",
    "Who leads the team that owns Fraud Gate?",
    "Which team renews the certificates of Fraud Gate and who leads the Risk team?",
    "What caused the Payments Service outage in March and who owns the service?",
]


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
    }
    srv = Server(home, tmp_path, **env).start()
    try:
        with srv.client() as c:
            tasks = [
                c.post(
                    "/v1/tasks",
                    json={"question": q, "webhook_url": receiver.url, "max_rounds": 4},
                    headers=ANA,
                ).json()
                for q in QUESTIONS
            ]
            wait_for(
                lambda: any(
                    (t := c.get(f"/v1/tasks/{x['id']}", headers=ANA).json())["status"] == "running"
                    and t["progress"]["events"] > 0
                    for x in tasks
                ),
                interval=0.02,
            )
    finally:
        srv.kill()
    assert not (home / "tasks.sqlite").exists()  # task state lives in Postgres
    with psycopg.connect(pg_url) as conn:
        interrupted = [r[0] for r in conn.execute("SELECT id FROM tasks WHERE status = 'running'")]
        checkpointed = {r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
    assert interrupted, "no task was running at the kill"
    assert {t["run_id"] for t in tasks if t["id"] in interrupted} <= checkpointed

    srv2 = Server(home, tmp_path, **env)
    srv2.port, srv2.base = srv.port, srv.base
    srv2.start()
    try:
        with srv2.client() as c:
            final = [
                wait_for(
                    lambda x=x: (
                        (t := c.get(f"/v1/tasks/{x['id']}", headers=ANA).json())["webhook"]["state"]
                        == "delivered"
                        and t
                    )
                )
                for x in tasks
            ]
            events = c.get(f"/v1/tasks/{interrupted[0]}/events", headers=ANA)
    finally:
        srv2.stop()
    assert all(t["status"] == "succeeded" for t in final)
    for t in final:
        if t["id"] in interrupted:
            assert t["resumed"] >= 1
    ids = [int(line[3:]) for line in events.text.splitlines() if line.startswith("id:")]
    assert ids and ids == sorted(ids) and len(ids) == len(set(ids))
    assert receiver.rejected == []
    by_task = {p["data"]["id"]: wid for wid, p in receiver.processed.items()}
    assert set(by_task) == {t["id"] for t in tasks}
    assert {t["webhook"]["webhook_id"] for t in final} == set(receiver.processed)
    for payload in receiver.processed.values():
        assert payload["type"] == "task.succeeded" and payload["data"]["result"]["answer"]
