"""Many runs at once on one Researcher (the HTTP service streams ~20 answers concurrently):
every run succeeds, keeps its own trace and checkpoints, over a real Store and real SQLite
files (one shared checkpointer connection, WAL, busy timeout)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graph.models import Caller, ResearchResult, RunOptions
from graph.runner import Researcher

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

RUNS = 12
PEOPLE = ["Dana Ruiz", "Omar Haddad", "Lena Park", "Ivo Santos"]
QUESTIONS = [f"Which group does the engineer who wrote the {p} runbook head?" for p in PEOPLE]


def _corpus(record_factory: Callable[..., Any]) -> list[Any]:
    docs = []
    for i, person in enumerate(PEOPLE):
        docs.append(
            record_factory(
                f"runbook{i}",
                f"The {person} runbook was written by engineer {person}.",
                title=f"{person} runbook",
            )
        )
        docs.append(
            record_factory(f"person{i}", f"{person} heads the Group {i} team.", title=person)
        )
    docs.append(record_factory("cafe", "The cafeteria opens at eight.", title="Cafeteria"))
    return docs


async def test_concurrent_runs_share_one_checkpointer_and_keep_their_own_traces(
    store_factory: Callable[..., Any],
    record_factory: Callable[..., Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A connection per run is what locked the database under load: count the checkpoint
    # file's connections (the trace store's file has its own; the background WAL
    # checkpoint's short-lived one writes no rows).
    opened: list[str] = []
    real_connect = sqlite3.connect

    def counting_connect(database: Any, *args: Any, **kwargs: Any) -> Any:
        background = threading.current_thread().name == "wal-checkpoint"
        if str(database).endswith("runs.sqlite") and not background:
            opened.append(str(database))
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", counting_connect)
    store = store_factory("home")
    store.ingest(_corpus(record_factory))
    researcher = Researcher(store, checkpointer_path=tmp_path / "runs" / "runs.sqlite")
    streamed: dict[str, list[int]] = {}

    async def one(i: int) -> ResearchResult:
        run_id = f"run-{i:02d}"
        seqs = streamed.setdefault(run_id, [])

        async def on_event(event: Any) -> None:
            assert event.run_id == run_id
            seqs.append(event.seq)

        return await researcher.run(
            QUESTIONS[i % len(QUESTIONS)],
            Caller(user=f"user{i % 3}"),
            RunOptions(k=4, max_rounds=3),
            run_id=run_id,
            on_event=on_event,
        )

    try:
        results = await asyncio.gather(*(one(i) for i in range(RUNS)), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        assert not failures, failures

        for i, result in enumerate(results):
            assert isinstance(result, ResearchResult)
            run_id = f"run-{i:02d}"
            assert result.run_id == run_id and result.answerable
            assert f"Group {i % len(PEOPLE)}" in result.answer
            trace = researcher.get_trace(run_id)
            # Its own events only, numbered without gaps, ending with its answer; and the
            # same events were streamed to its own listener.
            assert {e.run_id for e in trace} == {run_id}
            assert [e.seq for e in trace] == list(range(1, len(trace) + 1))
            assert trace[0].type == "metadata" and [e.type for e in trace].count("done") == 1
            assert trace[-1].type == "node_end" and trace[-1].node == "synthesize"
            assert trace[0].data["question"] == QUESTIONS[i % len(QUESTIONS)]
            assert streamed[run_id] == [e.seq for e in trace]
            assert researcher.get_result(run_id) == result
        listed = {r["run_id"] for u in range(3) for r in researcher.list_runs(f"user{u}")}
        assert listed == {f"run-{i:02d}" for i in range(RUNS)}
        assert opened == [str(tmp_path / "runs" / "runs.sqlite")]  # one, shared by all runs
    finally:
        await researcher.aclose()

    # Every run checkpointed into the one file (its own thread), which is in WAL mode.
    db = sqlite3.connect(tmp_path / "runs" / "runs.sqlite")
    try:
        threads = {r[0] for r in db.execute("SELECT DISTINCT thread_id FROM checkpoints")}
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        db.close()
    assert threads == {f"run-{i:02d}" for i in range(RUNS)}
    assert mode == "wal"


async def test_a_closed_researcher_reopens_nothing_and_a_new_one_resumes_the_file(
    store_factory: Callable[..., Any], record_factory: Callable[..., Any], tmp_path: Path
) -> None:
    store = store_factory("home")
    store.ingest(_corpus(record_factory))
    path = tmp_path / "runs.sqlite"
    first = Researcher(store, checkpointer_path=path)
    done = await first.run(QUESTIONS[0], Caller(), RunOptions(k=4), run_id="kept")
    await first.aclose()

    second = Researcher(store, checkpointer_path=path)
    try:
        # A finished run is read back from the trace store, not re-run.
        assert await second.resume("kept") == done
        again = await second.run(QUESTIONS[1], Caller(), RunOptions(k=4))
        assert again.answerable and again.run_id != "kept"
    finally:
        await second.aclose()
