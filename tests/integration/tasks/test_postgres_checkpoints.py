"""graph/checkpoints.py's Postgres path (WAYPOINT_CHECKPOINT_URL) against the real server
the task-store tests start: a research run killed (SIGKILL) after its first round
resumes from its Postgres checkpoint, round 1 not repeated (the SQLite version of this
case is tests/integration/graph/test_durability.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from graph.models import Caller
from graph.runner import Researcher
from graph.settings import GraphSettings
from tests.integration.graph.test_durability import ingest_chain_and_kill_run

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def test_killed_run_resumes_from_postgres_checkpoint(
    store_factory: Callable[..., Any], record_factory: Callable[..., Any], pg_url: str
) -> None:
    pytest.importorskip("langgraph.checkpoint.postgres")
    import psycopg

    ingest_chain_and_kill_run(
        store_factory, record_factory, "run-pg", env={"WAYPOINT_CHECKPOINT_URL": pg_url}
    )
    # the checkpoint is in Postgres, not in the SQLite file next to the index
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM checkpoints WHERE thread_id = %s", ("run-pg",)
        ).fetchone()
    assert row is not None and row[0] > 0

    store = store_factory("home")
    researcher = Researcher(store, settings=GraphSettings(checkpoint_url=pg_url))
    before = researcher.get_trace("run-pg")
    round_one = {
        item["id"]
        for e in before
        if e.type == "evidence" and e.node == "fuse" and e.round == 1
        for item in e.data["entered"]
    }
    assert round_one and not any(e.type == "done" for e in before)
    try:
        result = asyncio.run(researcher.resume("run-pg"))
    finally:
        researcher.close()
    researcher = Researcher(store, settings=GraphSettings(checkpoint_url=pg_url))
    after = researcher.get_trace("run-pg")
    from_round_one = {e.id for e in result.evidence if any(p.round == 1 for p in e.provenance)}
    assert from_round_one == round_one
    assert result.rounds >= 2
    executes = [e.round for e in after if e.type == "node_start" and e.node == "execute"]
    assert executes.count(1) == 1  # round 1 ran once, before the kill
    assert researcher.get_result("run-pg") == result
    assert researcher.list_runs(Caller().user)[0]["status"] == "done"
