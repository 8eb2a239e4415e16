"""graph/savers.py's Postgres path (WAYPOINT_CHECKPOINT_URL) against the real server
the task-store tests start: a research run killed (SIGKILL) after its first round
resumes from its Postgres checkpoint, round 1 not repeated (the SQLite version of this
case is tests/integration/graph/test_durability.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from graph.settings import GraphSettings
from tests.integration.graph.test_durability import (
    assert_resumes_with_round_one_evidence,
    ingest_chain_and_kill_run,
)

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

    assert_resumes_with_round_one_evidence(
        store_factory("home"), "run-pg", GraphSettings(checkpoint_url=pg_url)
    )
