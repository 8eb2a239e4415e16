"""A task killed (SIGKILL) mid-run and resumed by the restarted server records each step
once (issue 26, item 11): its event stream holds every node's start once per round, its
tool-call events and ``progress.tool_calls`` equal the run's own count, and event ids only
grow. (Where the kill lands varies: the assertions hold wherever it does.)"""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    ANA,
    Receiver,
    Server,
    parse_sse_lines,
    post_tasks_and_kill_mid_run,
    wait_for,
)

pytestmark = pytest.mark.e2e


def test_a_task_killed_mid_run_records_each_step_once(
    built_index: Path, tmp_path: Path, receiver: Receiver
) -> None:
    home = tmp_path / "home"
    shutil.copytree(built_index, home)
    srv = Server(home, tmp_path, WAYPOINT_TASK_WORKERS="1").start()
    post_tasks_and_kill_mid_run(srv, receiver)
    db = sqlite3.connect(home / "tasks.sqlite")
    interrupted = [r[0] for r in db.execute("SELECT id FROM tasks WHERE status = 'running'")]
    db.close()
    assert interrupted, "no task was running at the kill"

    again = Server(home, tmp_path, WAYPOINT_TASK_WORKERS="1")
    again.port, again.base = srv.port, srv.base
    again.start()
    try:
        with again.client() as c:
            for task_id in interrupted:
                task = wait_for(
                    lambda t=task_id: (
                        (got := c.get(f"/v1/tasks/{t}", headers=ANA).json())["status"]
                        in ("succeeded", "failed")
                        and got
                    )
                )
                assert task["status"] == "succeeded" and task["resumed"] >= 1
                text = c.get(f"/v1/tasks/{task_id}/events", headers=ANA).text
                events = list(parse_sse_lines(iter(text.splitlines())))
                starts = Counter(
                    (e["data"].get("node"), e["data"].get("round"))
                    for e in events
                    if e["event"] == "node_start"
                )
                assert starts and max(starts.values()) == 1, starts
                calls = sum(1 for e in events if e["event"] == "tool_call")
                result = task["result"]
                assert calls == result["tool_calls"] == task["progress"]["tool_calls"]
                assert task["progress"]["round"] == result["rounds"]
                ids = [int(e["id"]) for e in events]
                assert ids == sorted(set(ids))
    finally:
        again.stop()
