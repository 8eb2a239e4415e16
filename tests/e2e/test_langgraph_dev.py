"""The research graph in LangGraph's own tooling: `langgraph dev` (langgraph.json, the
in-memory runtime) serves it on 127.0.0.1 over an index of the acme corpus; the SDK
creates a thread, runs a question with its context as JSON, reads the node events from
the custom stream and the cited answer, and walks the thread's state history."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import REPO, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

ACME = REPO / "evalsets" / "acme" / "questions.jsonl"
# `make setup` installs the CLI with the in-memory server in a venv of its own (its
# runtime's pins conflict with the dev extra's; see requirements-langgraph.lock).
LANGGRAPH = REPO / ".venv-langgraph" / "bin" / "langgraph"
QUESTION = "Who is the CTO of Northwind Relay?"  # acme-003
ANSWER = "Sofia Marchetti"


@pytest.fixture(scope="module")
def acme_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from evalsets.loaders import load_acme
    from retrieval.store import Store

    home = tmp_path_factory.mktemp("acme") / "home"
    store = Store.open(home=home)
    try:
        store.ingest(load_acme(ACME).records)
    finally:
        store.close()
    return home


@pytest.fixture(scope="module")
def server(acme_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not os.access(LANGGRAPH, os.X_OK):
        pytest.fail(f"{LANGGRAPH} is missing: `make setup` builds .venv-langgraph")
    port = free_port()
    log_path = tmp_path_factory.mktemp("langgraph-dev") / "server.log"
    env = {
        **os.environ,
        "WAYPOINT_HOME": str(acme_home),
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    }
    with log_path.open("wb") as log:
        # --allow-blocking: the engines' calls are synchronous (run in threads by the
        # store where it matters); the dev server's blocking-call detector would refuse them.
        proc = subprocess.Popen(
            [
                str(LANGGRAPH),
                "dev",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-browser",
                "--no-reload",
                "--allow-blocking",
                "--config",
                str(REPO / "langgraph.json"),
            ],
            cwd=REPO,  # langgraph.json's paths are read from here
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                assert proc.poll() is None, log_path.read_text()[-3000:]
                try:
                    if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, log_path.read_text()[-3000:]
                time.sleep(0.5)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def test_the_assistants_schemas_describe_the_runs_context(server: str) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=server)
    (assistant,) = await client.assistants.search(graph_id="research")
    schemas: Any = await client.assistants.get_schemas(assistant["assistant_id"])
    assert schemas["context_schema"]["required"] == ["question"]
    assert "result" in schemas["output_schema"]["properties"]
    graph: Any = await client.assistants.get_graph(assistant["assistant_id"], xray=True)
    assert {"round:plan", "round:assess", "synthesize"} <= {n["id"] for n in graph["nodes"]}


async def test_a_thread_runs_an_acme_question_to_a_cited_answer(server: str) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=server)
    thread = await client.threads.create()
    context: dict[str, Any] = {
        "question": QUESTION,
        "caller": {"user": "alice", "groups": ["eng"]},
        "options": {"mode": "iterative"},
    }
    events: list[dict[str, Any]] = []
    updated: list[str] = []
    async for part in client.runs.stream(
        thread["thread_id"],
        "research",
        input={},
        context=context,
        stream_mode=["custom", "updates"],
        stream_subgraphs=True,
    ):
        assert part.event != "error", part.data
        if part.event.startswith("custom"):
            events.append(part.data)
        elif part.event.startswith("updates"):
            updated += list(part.data)
    types = [e["type"] for e in events]
    assert types[0] == "node_start" and types.count("done") == 1
    assert {"plan", "tool_call", "tool_result", "evidence", "round", "citation"} <= set(types)
    assert {"plan", "execute", "fuse", "rerank", "assess", "round", "synthesize"} <= set(updated)

    state: Any = await client.threads.get_state(thread["thread_id"])
    result = state["values"]["result"]
    assert result["answerable"] and result["run_id"] == thread["thread_id"]
    assert re.search(ANSWER, result["answer"]) and result["citations"]
    cited = {c["evidence_id"] for c in result["citations"]}
    assert cited <= set(state["values"]["pool"])

    history: Any = await client.threads.get_history(thread["thread_id"], limit=50)
    steps = [h["metadata"]["step"] for h in history]
    assert steps == sorted(steps, reverse=True) and steps[-1] == -1  # newest first
    rounds = [h for h in history if h["next"] == ["round"]]
    assert len(rounds) == result["rounds"]  # the parent: one checkpoint before each round


async def test_a_run_asking_for_review_pauses_and_resumes_over_the_api(server: str) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=server)
    thread = await client.threads.create()
    context: dict[str, Any] = {
        "question": QUESTION,
        "caller": {"user": "alice", "groups": ["eng"]},
        "review": ["plan"],
    }
    await client.runs.wait(thread["thread_id"], "research", input={}, context=context)
    paused: Any = await client.threads.get(thread["thread_id"])
    assert paused["status"] == "interrupted"
    (asked,) = [i["value"] for task in paused["interrupts"].values() for i in task]
    assert asked["point"] == "plan" and asked["calls"]
    edited = [{"tool": "search_knowledge", "args": {"query": "Northwind Relay CTO"}}]
    decision = {"action": "edit", "calls": edited, "by": "alice"}
    events: list[dict[str, Any]] = []
    async for part in client.runs.stream(
        thread["thread_id"],
        "research",
        command={"resume": decision},
        context=context,
        stream_mode=["custom"],
        stream_subgraphs=True,
    ):
        assert part.event != "error", part.data
        if part.event.startswith("custom"):
            events.append(part.data)
    reviewed = next(e for e in events if e["type"] == "plan" and e["node"] == "review")
    assert reviewed["data"]["reviewed"]["by"] == "alice"
    assert [e["data"]["args"] for e in events if e["type"] == "tool_call"][0] == edited[0]["args"]
    state: Any = await client.threads.get_state(thread["thread_id"])
    assert re.search(ANSWER, state["values"]["result"]["answer"])
