"""Human review over the API: a task with ``"review": ["plan"]`` pauses after its first plan
(``input_required``, the proposed calls on the task, in its events and in a signed
``task.input_required`` webhook) until ``POST /v1/tasks/{id}/input`` decides; a real
Researcher over the two-hop ledger corpus runs it (LangGraph's interrupt and resume)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import standardwebhooks
import typer
from typer.testing import CliRunner

from api.cli import research
from api.schemas import WebhookEvent
from api.settings import ApiSettings
from api.tasks.store import TaskStore
from graph.runner import Researcher
from tests.integration.tasks.conftest import pg_server, pg_url  # noqa: F401
from tests.unit.api.conftest import AUTH_A, AUTH_B, SECRET, Harness, _client_for
from tests.unit.api.test_resumed_task_records import HangingReceiver
from tests.unit.api.test_tasks_and_streams import Receiver, parse_sse
from tools.testing import LEDGER_QUESTION, ledger_corpus, memory_search

REVIEWED = {"question": LEDGER_QUESTION, "review": ["plan"]}


def real_researcher(tmp_path: Path) -> Researcher:
    return Researcher(
        ledger_corpus(), checkpointer_path=tmp_path / "runs.sqlite", search_fn=memory_search
    )


@pytest.fixture
def researcher(tmp_path: Path) -> Researcher:  # the conftest's harness and client run it
    return real_researcher(tmp_path)


async def wait_status(client: httpx.AsyncClient, task_id: str, want: str) -> dict[str, Any]:
    task: dict[str, Any] = {}
    for _ in range(600):
        task = (await client.get(f"/v1/tasks/{task_id}", headers=AUTH_A)).json()
        if task["status"] == want:
            return task
        await asyncio.sleep(0.025)
    raise AssertionError(f"task never reached {want}: {task}")


async def paused(client: httpx.AsyncClient, body: dict[str, Any] = REVIEWED) -> dict[str, Any]:
    r = await client.post("/v1/tasks", json=body, headers=AUTH_A)
    assert r.status_code == 202, r.text
    return await wait_status(client, r.json()["id"], "input_required")


async def decide(client: httpx.AsyncClient, task_id: str, decision: dict[str, Any]) -> Any:
    return await client.post(f"/v1/tasks/{task_id}/input", json=decision, headers=AUTH_A)


def trace_of(harness: Harness, run_id: str) -> list[Any]:
    return list(harness.researcher.get_trace(run_id))


async def test_a_paused_task_shows_its_plan_and_goes_on_when_approved(
    client: httpx.AsyncClient, harness: Harness
) -> None:
    task = await paused(client)
    asked = task["review_request"]
    assert asked["point"] == "plan" and asked["round"] == 1 and asked["calls"]
    assert task["progress"]["tool_calls"] == 0  # nothing ran before the decision
    # The stream of a paused task stays open: its stored events are read instead.
    stored = harness.services.tasks.events_after(task["id"], 0)  # type: ignore[union-attr]
    pause = [e for e in stored if e["type"] == "input_required"]
    assert len(pause) == 1 and pause[0]["data"]["calls"] == asked["calls"]
    assert pause[0]["data"]["task_id"] == task["id"]

    r = await decide(client, task["id"], {"action": "approve"})
    assert r.status_code == 200, r.text
    assert r.json()["review_request"] is None
    done = await wait_status(client, task["id"], "succeeded")
    assert done["result"]["answerable"] and done["resumed"] == 1
    reviewed = next(
        e for e in trace_of(harness, task["run_id"]) if e.type == "plan" and e.node == "review"
    )
    assert reviewed.data["reviewed"]["by"] == "ana"
    ran = [(c["tool"], c["args"]) for c in reviewed.data["calls"]]
    assert ran == [(c["tool"], c["args"]) for c in asked["calls"]]
    sse = parse_sse((await client.get(f"/v1/tasks/{task['id']}/events", headers=AUTH_A)).text)
    types = [e["event"] for e in sse]
    assert types.index("input_required") < types.index("done") == len(types) - 1


async def test_a_paused_tasks_stream_stays_open_and_goes_on_with_the_decided_run(
    settings: ApiSettings, tmp_path: Path
) -> None:
    """A pause does not end the task, so it does not end its stream: after the
    ``input_required`` event the stream sends pings, and once the owner decides, the
    resumed run's events on the same connection, to ``done``."""
    quick_pings = settings.model_copy(update={"sse_ping_s": 0.1})
    harness = Harness(quick_pings, real_researcher(tmp_path))  # type: ignore[arg-type]
    async for client in _client_for(harness):
        task = await paused(client)
        # The test client hands over a response once its stream has ended.
        stream = asyncio.create_task(client.get(f"/v1/tasks/{task['id']}/events", headers=AUTH_A))
        await asyncio.sleep(1.0)
        assert not stream.done()  # open while the task waits
        assert (await decide(client, task["id"], {"action": "approve"})).status_code == 200
        r = await asyncio.wait_for(stream, 30)
    events = parse_sse(r.text)
    types = [e["event"] for e in events]
    pause = types.index("input_required")
    assert types[-1] == "done" and types.count("done") == 1
    resumed = [e["data"]["data"] for e in events[pause:] if e["event"] == "metadata"]
    assert resumed == [{"task_id": task["id"], "run_id": task["run_id"], "resumed": True}]
    assert "tool_call" in types[pause:]  # the decided plan ran after the pause
    waited = r.text.split("event: input_required", 1)[1].split("event: metadata", 1)[0]
    assert ": ping" in waited  # kept alive while it waited


async def test_an_edit_runs_the_reviewers_calls(
    client: httpx.AsyncClient, harness: Harness
) -> None:
    task = await paused(client)
    calls = [{"tool": "search_knowledge", "args": {"query": "cafeteria opening hours"}}]
    r = await decide(client, task["id"], {"action": "edit", "calls": calls})
    assert r.status_code == 200, r.text
    await wait_status(client, task["id"], "succeeded")
    trace = trace_of(harness, task["run_id"])
    round_one = [e.data["args"] for e in trace if e.type == "tool_call" and e.round == 1]
    assert round_one == [{"query": "cafeteria opening hours"}]


async def test_pinned_documents_enter_and_excluded_ones_stay_out(
    client: httpx.AsyncClient, harness: Harness
) -> None:
    pin = await paused(client)
    assert (await decide(client, pin["id"], {"pin": ["wiki:noise"]})).status_code == 200
    exclude = await paused(client)
    r = await decide(client, exclude["id"], {"action": "approve", "exclude": ["wiki:dana"]})
    assert r.status_code == 200, r.text
    await wait_status(client, pin["id"], "succeeded")
    done = await wait_status(client, exclude["id"], "succeeded")
    reviewed = next(
        e for e in trace_of(harness, pin["run_id"]) if e.type == "plan" and e.node == "review"
    )
    assert reviewed.data["reviewed"]["pinned"] == ["wiki:noise#0"]
    assert "wiki:dana" not in {e["doc_id"] for e in done["result"]["evidence"]}
    excluded = next(
        e for e in trace_of(harness, exclude["run_id"]) if e.type == "plan" and e.node == "review"
    )
    assert excluded.data["reviewed"]["exclude"] == ["wiki:dana"]


async def test_wrong_user_invalid_decisions_and_tasks_not_paused(
    client: httpx.AsyncClient,
) -> None:
    task = await paused(client)
    url = f"/v1/tasks/{task['id']}/input"
    r = await client.post(url, json={"action": "approve"}, headers=AUTH_B)
    assert r.status_code == 404
    r = await decide(client, task["id"], {"action": "edit", "calls": [{"tool": "rm_rf"}]})
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_review"
    assert "rm_rf" in r.json()["error"]["message"]
    r = await decide(client, task["id"], {"action": "edit"})  # an edit gives its calls
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_review"
    r = await decide(client, task["id"], {"action": "maybe"})
    assert r.status_code == 422
    still = (await client.get(f"/v1/tasks/{task['id']}", headers=AUTH_A)).json()
    assert still["status"] == "input_required" and still["review_request"] == task["review_request"]

    assert (await decide(client, task["id"], {"action": "approve"})).status_code == 200
    await wait_status(client, task["id"], "succeeded")
    r = await decide(client, task["id"], {"action": "approve"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "not_awaiting_input"
    assert "succeeded" in r.json()["error"]["message"]


async def test_a_paused_task_can_be_cancelled(client: httpx.AsyncClient) -> None:
    task = await paused(client)
    r = await client.post(f"/v1/tasks/{task['id']}/cancel", headers=AUTH_A)
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert (await decide(client, task["id"], {"action": "approve"})).status_code == 409


async def test_the_pause_is_a_signed_webhook(harness: Harness) -> None:
    receiver = Receiver()
    async for client in _client_for(harness):
        assert harness.services is not None
        harness.services.pool.sender.transport = httpx.MockTransport(receiver.handler)
        task = await paused(client, {**REVIEWED, "webhook_url": "http://127.0.0.1:1/hook"})
        for _ in range(200):
            if receiver.calls:
                break
            await asyncio.sleep(0.025)
        assert (await decide(client, task["id"], {"action": "approve"})).status_code == 200
        await wait_status(client, task["id"], "succeeded")
        for _ in range(200):
            t = (await client.get(f"/v1/tasks/{task['id']}", headers=AUTH_A)).json()
            if t["webhook"]["state"] != "pending":
                break
            await asyncio.sleep(0.025)
    bodies = [
        WebhookEvent.model_validate(standardwebhooks.Webhook(SECRET).verify(content, headers))
        for headers, content in receiver.calls
    ]
    assert [b.type for b in bodies] == ["task.input_required", "task.succeeded"]
    asked = bodies[0].data
    assert asked.id == task["id"] and asked.review_request is not None
    assert asked.review_request.calls == task["review_request"]["calls"]
    ids = {h["webhook-id"] for h, _ in receiver.calls}
    assert len(ids) == 2  # each its own message
    # The task's delivery log is the final webhook's.
    assert [d["ok"] for d in t["webhook"]["deliveries"]] == [True]


async def test_a_paused_task_stays_paused_across_a_restart(
    settings: ApiSettings, tmp_path: Path
) -> None:
    first = Harness(settings, real_researcher(tmp_path))  # type: ignore[arg-type]
    async for client in _client_for(first):
        task = await paused(client)
    # A new process on the same files.
    restarted = Harness(settings, real_researcher(tmp_path))  # type: ignore[arg-type]
    async for client in _client_for(restarted):
        await asyncio.sleep(0.2)  # start-up recovery has run; workers are idle
        again = (await client.get(f"/v1/tasks/{task['id']}", headers=AUTH_A)).json()
        assert again["status"] == "input_required"
        assert again["review_request"] == task["review_request"]
        assert (await decide(client, task["id"], {"action": "approve"})).status_code == 200
        done = await wait_status(client, task["id"], "succeeded")
        trace = trace_of(restarted, task["run_id"])
    assert done["result"]["answerable"] and done["resumed"] == 1
    assert any(e.node == "review" and e.type == "plan" for e in trace)


# -- the store, on both backends (Postgres: a real server, as tests/integration/tasks) --


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'tasks.sqlite'}"
    return str(request.getfixturevalue("pg_url"))


def test_the_store_keeps_a_pause_through_recovery_and_resumes_with_the_decision(
    store_url: str,
) -> None:
    first = TaskStore.open(store_url)
    try:
        task = first.create_task("ana", "kA", REVIEWED, None)
        assert first.claim_next() is not None
        asked = {"point": "plan", "round": 1, "calls": [{"tool": "search_knowledge"}]}
        assert first.pause(task.id, asked)
        assert not first.pause(task.id, asked)  # no longer running
    finally:
        first.close()
    again = TaskStore.open(store_url)  # a restart
    try:
        assert again.recover(exclusive=True).tasks == 0 and again.release() == 0
        assert again.claim_next() is None  # paused: no worker takes it
        got = again.get_task(task.id)
        assert got is not None and got.status == "input_required"
        assert got.review_request is not None and got.review_request.calls == asked["calls"]
        decision = {"action": "approve", "pin": ["wiki:noise"], "by": "ana"}
        assert not again.submit_review(task.id, "bob", decision)  # not bob's task
        assert again.submit_review(task.id, "ana", decision)
        assert not again.submit_review(task.id, "ana", decision)  # decided already
        row = again.claim_next()
        assert row is not None and row["resume"] == 1
        assert json.loads(row["review_decision"]) == decision
        again.mark_resumed(task.id)  # the worker takes the decision
        after = again.task_row(task.id)
        assert after is not None and after["review_decision"] is None
        resumed = again.get_task(task.id)
        assert (
            resumed is not None and resumed.status == "running" and resumed.review_request is None
        )
    finally:
        again.close()


def test_the_pause_writes_its_webhook_to_the_outbox_for_whoever_sends_it(
    store_url: str,
) -> None:
    """The ``task.input_required`` message is stored with the pause: a process that stops
    before sending it hands it on, and the next one sends that very message."""
    first = TaskStore.open(store_url)
    try:
        quiet = first.create_task("ana", "kA", REVIEWED, None)
        hooked = first.create_task("ana", "kA", REVIEWED, "http://127.0.0.1:1/hook")
        asked = {"point": "plan", "round": 1, "calls": [{"tool": "search_knowledge"}]}
        for task in (quiet, hooked):
            assert first.claim_next() is not None and first.pause(task.id, asked)
        (webhook_id,) = first.owned_unsent_messages()  # the task without a webhook: none
        first.release()  # stopped before sending it
        assert first.owned_unsent_messages() == []
    finally:
        first.close()
    again = TaskStore.open(store_url)
    try:
        assert again.claim_messages(exclusive=True) == [webhook_id]
        assert again.claim_messages(exclusive=True) == []  # this owner's now
        message = again.outbox_message(webhook_id)
        assert message is not None and message["state"] == "pending"
        assert message["task_id"] == hooked.id and message["webhook_url"].endswith("/hook")
        body = WebhookEvent.model_validate_json(message["body"])
        assert body.type == "task.input_required" and body.data.status == "input_required"
        assert body.data.review_request is not None
        assert body.data.review_request.calls == asked["calls"]
        again.settle_message(webhook_id, "delivered")
        assert again.owned_unsent_messages() == []
        assert again.claim_messages(exclusive=True) == []
        assert again.submit_review(hooked.id, "ana", {"action": "approve"})
        row = again.claim_next()
        assert row is not None
        assert again.finish(hooked.id, "succeeded", result={})
        again.set_webhook_state(hooked.id, "delivered")
        assert again.prune(time.time() + 1).tasks == 1
        assert again.outbox_message(webhook_id) is None  # pruned with its task
    finally:
        again.close()


async def test_a_pause_webhook_cut_short_by_a_stop_is_sent_after_the_restart(
    settings: ApiSettings, tmp_path: Path
) -> None:
    hanging = HangingReceiver()
    first = Harness(settings, real_researcher(tmp_path))  # type: ignore[arg-type]
    async for client in _client_for(first):
        assert first.services is not None
        first.services.pool.sender.transport = httpx.MockTransport(hanging.handler)
        task = await paused(client, {**REVIEWED, "webhook_url": "http://127.0.0.1:1/hook"})
        await asyncio.wait_for(hanging.took_first.wait(), 10)
    receiver = Receiver()
    restarted = Harness(settings, real_researcher(tmp_path))  # type: ignore[arg-type]
    async for client in _client_for(restarted):
        assert restarted.services is not None
        restarted.services.pool.sender.transport = httpx.MockTransport(receiver.handler)
        for _ in range(400):
            if receiver.calls:
                break
            await asyncio.sleep(0.025)
        again = (await client.get(f"/v1/tasks/{task['id']}", headers=AUTH_A)).json()
    assert again["status"] == "input_required"  # still paused: only the message went out
    ((headers, content),) = receiver.calls
    sent = WebhookEvent.model_validate(standardwebhooks.Webhook(SECRET).verify(content, headers))
    assert sent.type == "task.input_required" and sent.data.id == task["id"]
    assert headers["webhook-id"] == hanging.calls[0]["webhook-id"]  # the same message


# -- `waypoint ask --review`: the same pause on the terminal --


class _ClosableCorpus:
    """The ledger corpus as the CLI holds its store (closed when the command ends)."""

    def __init__(self) -> None:
        self.store = ledger_corpus()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def close(self) -> None:
        pass


def test_ask_review_asks_on_the_terminal_until_the_decision_is_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = _ClosableCorpus()

    def local(index: Path | None, must_exist: bool) -> tuple[Researcher, Any]:
        r = Researcher(
            corpus.store, checkpointer_path=tmp_path / "runs.sqlite", search_fn=memory_search
        )
        return r, corpus

    monkeypatch.setattr(research, "_researcher", local)
    edit = json.dumps([{"tool": "search_knowledge", "args": {"query": "Dana Ruiz"}}])
    answers = [
        "edit",  # an unknown tool: refused, asked again
        '[{"tool": "rm_rf"}]',
        "",
        "",
        "edit",
        edit,
        "wiki:noise",
        "",
    ]
    cli = typer.Typer()
    research.register(cli)  # ask and trace
    result = CliRunner().invoke(
        cli, ["ask", LEDGER_QUESTION, "--review", "--json"], input="\n".join(answers) + "\n"
    )
    assert result.exit_code == 0, result.output
    assert "rm_rf" in result.stderr and "not taken" in result.stderr
    # The runner echoes the typed input to stdout; the answer is the JSON after it.
    answer = json.loads(result.stdout[result.stdout.index("\n{") :])
    assert answer["answerable"] and "Payments Platform" in answer["answer"]


async def test_paused_tasks_count_toward_the_keys_cap(harness: Harness, settings: Any) -> None:
    harness.settings = settings.model_copy(update={"max_tasks_per_key": 1})
    async for client in _client_for(harness):
        task = await paused(client)
        r = await client.post("/v1/tasks", json={"question": "q"}, headers=AUTH_A)
        assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_tasks"
        stats = harness.services.tasks.queue_stats()  # type: ignore[union-attr]
        assert stats["input_required"][0] == 1
        assert (await decide(client, task["id"], {"action": "approve"})).status_code == 200
        await wait_status(client, task["id"], "succeeded")
