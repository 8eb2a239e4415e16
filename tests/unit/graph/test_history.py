"""A run's thread in LangGraph's own terms: its state history (one parent checkpoint per
round, the round's steps in the round subgraph's namespace) and a fork from a past round,
replayed with the run's context rebuilt from plain data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graph.context import RunContext
from graph.models import Caller, RunOptions
from graph.runner import Researcher
from tools.testing import LEDGER_QUESTION, ledger_corpus, memory_search


async def test_history_has_a_checkpoint_per_round_and_a_past_round_forks(tmp_path: Path) -> None:
    researcher = Researcher(
        ledger_corpus(), checkpointer_path=tmp_path / "runs.sqlite", search_fn=memory_search
    )
    try:
        result = await researcher.run(LEDGER_QUESTION, Caller(), RunOptions(), run_id="run-1")
        assert result.rounds >= 2
        graph = await researcher._graph()
        config: Any = {"configurable": {"thread_id": "run-1"}}
        history = [s async for s in graph.aget_state_history(config)]
        before_round = [s for s in history if s.next == ("round",)]
        assert len(before_round) == result.rounds
        assert [s.values.get("round", 0) for s in reversed(before_round)] == list(
            range(result.rounds)
        )
        assert history[0].values["result"]["answer"] == result.answer

        # Fork from the checkpoint before round 2: the replay runs rounds 2.. again.
        after_round_one = next(s for s in before_round if s.values.get("round") == 1)
        context = RunContext(
            question=LEDGER_QUESTION, run_id="run-1", services=researcher.services_key
        )
        nodes_run: list[str] = []
        async for _, _, chunk in graph.astream(
            None,
            config=after_round_one.config,
            context=context,
            stream_mode=["updates"],
            subgraphs=True,
        ):
            nodes_run += list(chunk)
        forked = await graph.aget_state(config)
    finally:
        await researcher.aclose()
    assert forked.values["result"]["answer"] == result.answer
    assert forked.parent_config is not None
    assert nodes_run.count("plan") == result.rounds - 1  # round 1 not run again
    # the fork is a branch off round one's checkpoint: the thread holds both ends
    assert (
        forked.config["configurable"]["checkpoint_id"]
        != history[0].config["configurable"]["checkpoint_id"]
    )


async def test_a_run_id_used_again_by_another_caller_reads_with_that_callers_groups() -> None:
    """Runs LangGraph tooling starts (no runner) get their tool context from their own
    context: a second caller under the same run id never reads with the first one's."""
    from langgraph.checkpoint.memory import InMemorySaver

    from graph.builder import build_graph
    from graph.resources import REGISTRY, Services, make_executor, make_policy
    from graph.settings import GraphSettings

    store = ledger_corpus()
    store.records["wiki:dana#0"].metadata["acl"] = ["eng"]
    settings = GraphSettings()
    REGISTRY.register(
        "two-callers",
        Services(store, make_executor(settings), make_policy(settings), memory_search),
    )
    graph = build_graph(InMemorySaver())

    async def read_by(groups: list[str]) -> set[str]:
        # the same run id (what a run's scope is found by), each on a fresh thread
        config: Any = {"configurable": {"thread_id": f"thread-{len(groups)}"}}
        context = RunContext(
            question=LEDGER_QUESTION,
            caller=Caller(groups=groups),
            run_id="shared",
            services="two-callers",
        )
        found: set[str] = set()
        async for _, mode, chunk in graph.astream(
            {}, config, context=context, stream_mode=["custom", "updates"], subgraphs=True
        ):
            event: Any = chunk
            if mode == "custom" and event["type"] == "tool_result":
                found |= {r["id"] for r in event["data"]["results"]}
        return found

    try:
        assert "wiki:dana#0" in await read_by(["eng"])
        assert "wiki:dana#0" not in await read_by([])
    finally:
        REGISTRY.unregister("two-callers")
