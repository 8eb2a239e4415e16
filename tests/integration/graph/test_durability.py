"""A run killed (SIGKILL) after its first round resumes from its checkpoint: the pool of
round 1 intact, round 1 not repeated."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graph.models import Caller, RunOptions
from graph.runner import Researcher
from graph.settings import GraphSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

QUESTION = "Who mentors the engineer who wrote the Ledger runbook?"
OPTIONS = RunOptions(k=1, budget=50, max_rounds=4)  # k=1: one hop per round, visibly

CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pathlib import Path
    from retrieval.store import Store
    from graph.models import Caller, RunOptions
    from graph.runner import Researcher

    home, run_id, options, question = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]

    async def die_after_round_one(event):
        if event.type == "node_start" and event.node == "plan" and event.round == 2:
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no final write

    async def main():
        store = Store.open(home=home)
        r = Researcher(store)
        await r.run(
            question, Caller(), RunOptions.model_validate_json(options), run_id=run_id,
            on_event=die_after_round_one,
        )

    asyncio.run(main())
    """
)


def ingest_chain_and_kill_run(
    store_factory: Callable[..., Any],
    record_factory: Callable[..., Any],
    run_id: str,
    env: dict[str, str] | None = None,
) -> Path:
    """Ingest a three-hop chain, run the question in a child process that SIGKILLs itself
    after round 1; return the index home (shared with the Postgres checkpointer test)."""
    store = store_factory("home")
    store.ingest(
        [
            record_factory(
                "runbook", "The Ledger runbook was written by Dana Ruiz.", title="Ledger runbook"
            ),
            record_factory("dana", "Dana Ruiz is mentored by Omar Haddad.", title="Dana Ruiz"),
            record_factory(
                "omar", "Omar Haddad founded the Payments Platform group.", title="Omar Haddad"
            ),
            record_factory("cafe", "The cafeteria opens at eight.", title="Cafeteria"),
        ]
    )
    home = Path(store.settings.home)
    store.close()
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(home), run_id, OPTIONS.model_dump_json(), QUESTION],
        capture_output=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    assert child.returncode == -9, child.stderr.decode()[-2000:]
    return home


def assert_resumes_with_round_one_evidence(
    store: Any, run_id: str, settings: GraphSettings | None = None
) -> None:
    """Resume the killed run: round-1 evidence intact, round 1 not repeated, result stored."""
    researcher = Researcher(store, settings=settings)
    before = researcher.get_trace(run_id)
    round_one = {
        item["id"]
        for e in before
        if e.type == "evidence" and e.node == "fuse" and e.round == 1
        for item in e.data["entered"]
    }
    assert round_one and not any(e.type == "done" for e in before)
    try:
        result = asyncio.run(researcher.resume(run_id))
    finally:
        researcher.close()
    researcher = Researcher(store, settings=settings)  # a fresh reader of what the run left
    after = researcher.get_trace(run_id)
    from_round_one = {e.id for e in result.evidence if any(p.round == 1 for p in e.provenance)}
    assert from_round_one == round_one
    assert result.rounds >= 2
    executes = [e.round for e in after if e.type == "node_start" and e.node == "execute"]
    assert executes.count(1) == 1  # round 1 ran once, before the kill
    assert researcher.get_result(run_id) == result
    assert researcher.list_runs(Caller().user)[0]["status"] == "done"


def test_a_killed_run_resumes_with_its_round_one_evidence(
    store_factory: Callable[..., Any], record_factory: Callable[..., Any]
) -> None:
    ingest_chain_and_kill_run(store_factory, record_factory, "run-1")
    assert_resumes_with_round_one_evidence(store_factory("home"), "run-1")
