"""The restart that applies a revocation does not resume tasks with the old groups (issue
26, item 2): hana's tasks have found the hr-only page when the server is killed (SIGKILL);
her key loses the hr group; the restarted server resumes them, and none of what they
answer, cite or keep as evidence comes from that page."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import HANA, KEYS, SECRET_MARKER, Server, wait_for

pytestmark = pytest.mark.e2e

SECRET_QUESTION = "What is the salary band code of the Ledger team?"


def test_tasks_resumed_after_a_revocation_do_not_use_the_revoked_page(
    built_index: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(built_index, home)
    # Polled every 10 ms across four tasks: far above the default per-key rate limit.
    unlimited = {
        "WAYPOINT_RATE_LIMIT_PER_MINUTE": "1000000",
        "WAYPOINT_RATE_LIMIT_BURST": "1000000",
    }
    srv = Server(home, tmp_path, WAYPOINT_TASK_WORKERS="2", **unlimited).start()
    try:
        with srv.client() as c:
            tasks = [
                c.post(
                    "/v1/tasks",
                    json={"question": SECRET_QUESTION, "max_rounds": 4},
                    headers=HANA,
                ).json()
                for _ in range(4)
            ]

            def found_it() -> bool:  # a task running with evidence in its pool
                for t in tasks:
                    r = c.get(f"/v1/tasks/{t['id']}", headers=HANA)
                    assert r.status_code == 200, r.text
                    got = r.json()
                    if got["status"] == "running" and got["progress"]["evidence"] > 0:
                        return True
                return False

            wait_for(found_it, interval=0.01)
    finally:
        srv.kill()
    db = sqlite3.connect(home / "tasks.sqlite")
    rows = db.execute("SELECT id, status FROM tasks WHERE status <> 'succeeded'").fetchall()
    db.close()
    assert "running" in {status for _, status in rows}, "no task was running at the kill"
    unfinished = [task_id for task_id, _ in rows]

    again = Server(home, tmp_path, WAYPOINT_TASK_WORKERS="2", **unlimited)  # keys.json: KEYS
    again.port, again.base = srv.port, srv.base
    # The revocation the restart applies: hana's key loses the hr group.
    keys: dict[str, Any] = json.loads(json.dumps(KEYS))
    keys["key-hana"]["groups"] = []
    (tmp_path / "keys.json").write_text(json.dumps({"keys": keys}))
    again.start()
    try:
        with again.client() as c:
            for task_id in unfinished:
                task: dict[str, Any] = wait_for(
                    lambda t=task_id: (
                        (got := c.get(f"/v1/tasks/{t}", headers=HANA).json())["status"]
                        in ("succeeded", "failed")
                        and got
                    )
                )
                assert task["status"] == "succeeded"
                result = task["result"]
                assert SECRET_MARKER not in json.dumps(result)
                used = [*result["citations"], *result["evidence"]]
                assert all(not item["doc_id"].startswith("hr:") for item in used)
    finally:
        again.stop()
