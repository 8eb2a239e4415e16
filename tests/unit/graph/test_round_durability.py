"""A run is stored at its start and at the end of each round (``checkpoint_every="round"``,
the default): a run that fails inside a round resumes from the end of the last finished
one, keeps that round's plan, and ends with what an uninterrupted run finds."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from graph.checkpoints import RoundDurability
from graph.models import Caller, RunOptions, TraceEvent
from graph.runner import Researcher
from graph.settings import GraphSettings
from tools.testing import LEDGER_QUESTION, ledger_corpus, memory_search


class Killed(RuntimeError):
    pass


def researcher(path: Path, every: str = "round") -> Researcher:
    return Researcher(
        ledger_corpus(),
        settings=GraphSettings(checkpoint_every=every),  # type: ignore[arg-type]
        checkpointer_path=path,
        search_fn=memory_search,
    )


def stored(path: Path) -> tuple[int, set[str | None], set[str]]:
    """(checkpoints, their parents, their ids) of thread run-1."""
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = 'run-1'"
    ).fetchall()
    db.close()
    return len(rows), {p for _, p in rows}, {c for c, _ in rows}


async def test_a_run_is_stored_at_its_start_and_each_rounds_end(tmp_path: Path) -> None:
    every_step, by_round = tmp_path / "step" / "runs.sqlite", tmp_path / "round" / "runs.sqlite"
    for path, every in ((every_step, "step"), (by_round, "round")):
        r = researcher(path, every)
        try:
            result = await r.run(LEDGER_QUESTION, Caller(), RunOptions(), run_id="run-1")
            state = await (await r._graph()).aget_state({"configurable": {"thread_id": "run-1"}})
        finally:
            await r.aclose()
        assert state.values["result"]["answer"] == result.answer
        assert set(state.values["pool"]) >= {e.id for e in result.evidence}
    steps, _, _ = stored(every_step)
    count, parents, ids = stored(by_round)
    assert result.rounds >= 2
    # input, its application, one per round (assess), the result
    assert count == 2 + result.rounds + 1 < steps
    assert parents - ids == {None}  # a chain of stored checkpoints, no dangling parent


async def test_a_run_failing_inside_a_round_resumes_from_the_last_rounds_end(
    tmp_path: Path,
) -> None:
    clean = researcher(tmp_path / "clean" / "runs.sqlite")
    try:
        expected = await clean.run(LEDGER_QUESTION, Caller(), RunOptions())
    finally:
        await clean.aclose()

    async def die_in_round_two(event: TraceEvent) -> None:
        if event.type == "node_start" and event.node == "fuse" and event.round == 2:
            raise Killed("killed inside round 2")

    path = tmp_path / "runs.sqlite"
    r = researcher(path)
    try:
        with pytest.raises(Killed):
            await r.run(
                LEDGER_QUESTION, Caller(), RunOptions(), run_id="run-1", on_event=die_in_round_two
            )
        result = await r.resume("run-1")
        events = r.get_trace("run-1")
    finally:
        await r.aclose()
    starts = [(e.node, e.round) for e in events if e.type == "node_start"]
    assert starts.count(("plan", 1)) == starts.count(("fuse", 1)) == 1  # round 1: once
    assert starts.count(("plan", 2)) == 1  # its plan was stored with its writes
    assert starts.count(("execute", 2)) == 2  # the unfinished round's retrieval, again
    assert [e.id for e in result.evidence] == [e.id for e in expected.evidence]
    assert result.answer == expected.answer and result.rounds == expected.rounds
    _, parents, ids = stored(path)
    assert parents - ids == {None}


def _config(checkpoint_id: str | None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": "t", "checkpoint_ns": ""}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def _checkpoint(checkpoint_id: str, *updated: str) -> Any:
    return {"id": checkpoint_id, "updated_channels": list(updated)}


def test_only_checkpoints_this_saver_skipped_are_rewritten_or_their_writes_dropped() -> None:
    rounds = RoundDurability()
    loop: Any = {"source": "loop"}
    # This saver skips two steps after the stored s0 ...
    assert rounds.skip(_config("s0"), _checkpoint("a1", "plan"), loop) is not None
    assert rounds.skip(_config("a1"), _checkpoint("a2", "outcomes"), loop) is not None
    assert not rounds.keeps_writes(_config("a2")) and rounds.keeps_writes(_config("s0"))
    # ... meanwhile another process stored x5 for the thread, and this saver resumes from
    # it: a new stretch, whose parent is x5, not this saver's old head s0.
    assert rounds.skip(_config("x5"), _checkpoint("b1", "plan"), loop) is not None
    assert rounds.keeps_writes(_config("x5"))
    assert rounds.parent(_config("b1"))["configurable"]["checkpoint_id"] == "x5"
    # A checkpoint forked from an older stored one keeps its own parent.
    assert rounds.parent(_config("s0"))["configurable"]["checkpoint_id"] == "s0"
    assert rounds.skip(_config("b1"), _checkpoint("b2", "verdicts"), loop) is None  # a round's end
    rounds.stored(_config("b1"))
    assert rounds.keeps_writes(_config("b1"))  # nothing open any more
    # A run's first skipped steps have no stored parent: the next stored one has none.
    assert rounds.skip(_config(None), _checkpoint("c1", "plan"), loop) is not None
    assert "checkpoint_id" not in rounds.parent(_config("c1"))["configurable"]
