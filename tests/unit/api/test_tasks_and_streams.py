"""Streaming framing, task lifecycle, idempotency, recovery and webhooks (test doubles)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from api import webhooks
from api.auth import KeyRing, key_digest
from api.settings import ApiSettings
from api.tasks.store import TaskStore
from api.tasks.workers import WorkerPool
from api.webhooks import WebhookSender
from graph.models import Caller, RunOptions
from tests.unit.api.conftest import (
    AUTH_A,
    AUTH_B,
    SECRET,
    FakeResearcher,
    Harness,
    _client_for,
)

REQ = {"question": "q"}
ANA_KEY_ID = key_digest("keyA")[:12]  # how a task names the key that created it


def parse_sse(text: str) -> list[dict[str, Any]]:
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, Any] = {}
        for line in block.split("\n"):
            if line.startswith(":") or ":" not in line:
                continue
            name, _, value = line.partition(":")
            fields[name] = value.lstrip(" ")
        if "event" in fields:
            fields["data"] = json.loads(fields.get("data", "null"))
            events.append(fields)
    return events


async def wait_status(client: httpx.AsyncClient, task_id: str, want: set[str]) -> dict:
    for _ in range(500):
        task = (await client.get(f"/v1/tasks/{task_id}", headers=AUTH_A)).json()
        if task["status"] in want:
            return task
        await asyncio.sleep(0.01)
    raise AssertionError(f"task never reached {want}: {task}")


async def test_sse_answer_frames_metadata_first_done_last(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/v1/answers", json={"question": "who?"}, headers={**AUTH_A, "Accept": "text/event-stream"}
    )
    assert r.status_code == 200
    events = parse_sse(r.text)
    types = [e["event"] for e in events]
    assert types[0] == "metadata" and types[-1] == "done"
    assert {"plan", "tool_call", "tool_result", "evidence", "round", "token", "citation"} <= set(
        types
    )
    ids = [int(e["id"]) for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert events[-1]["data"]["citations"][0]["evidence_id"] == "wiki:a#0"


async def test_sse_run_failure_ends_with_error_event(client, researcher) -> None:
    researcher.fail_with = RuntimeError("engine down")
    r = await client.post(
        "/v1/answers", json={"question": "who?"}, headers={**AUTH_A, "Accept": "text/event-stream"}
    )
    events = parse_sse(r.text)
    assert events[-1]["event"] == "error"
    assert "engine down" in events[-1]["data"]["message"]


async def test_task_lifecycle_and_ownership(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/tasks", json={"question": "who owns billing?"}, headers=AUTH_A)
    assert r.status_code == 202
    task = r.json()
    assert r.headers["location"] == f"/v1/tasks/{task['id']}"
    done = await wait_status(client, task["id"], {"succeeded"})
    assert done["result"]["answer"].startswith("Answer for ana")
    assert done["progress"]["tool_calls"] == 1 and done["progress"]["evidence"] == 1
    # another user sees nothing of it
    assert (await client.get(f"/v1/tasks/{task['id']}", headers=AUTH_B)).status_code == 404
    assert (await client.get(f"/v1/runs/{task['run_id']}/trace", headers=AUTH_B)).status_code == 404
    assert (await client.get("/v1/tasks", headers=AUTH_B)).json()["items"] == []
    trace = (await client.get(f"/v1/runs/{task['run_id']}/trace", headers=AUTH_A)).json()
    assert [n["node"] for n in trace["nodes"]] == ["plan"]
    assert trace["rounds"][0]["verdicts"][0]["verdict"] == "enough"
    # events: replay from the start, and resumable after an id
    ev = parse_sse((await client.get(f"/v1/tasks/{task['id']}/events", headers=AUTH_A)).text)
    assert ev[0]["event"] == "metadata" and ev[-1]["event"] == "done"
    later = parse_sse(
        (
            await client.get(
                f"/v1/tasks/{task['id']}/events", headers={**AUTH_A, "Last-Event-ID": ev[2]["id"]}
            )
        ).text
    )
    assert [e["id"] for e in later] == [e["id"] for e in ev[3:]]


async def test_tasks_list_newest_first_with_cursor(client: httpx.AsyncClient) -> None:
    ids = []
    for i in range(3):
        r = await client.post("/v1/tasks", json={"question": f"q{i}"}, headers=AUTH_A)
        ids.append(r.json()["id"])
    page1 = (await client.get("/v1/tasks?limit=2", headers=AUTH_A)).json()
    assert [t["id"] for t in page1["items"]] == ids[::-1][:2]
    page2 = (
        await client.get(f"/v1/tasks?limit=2&cursor={page1['next_cursor']}", headers=AUTH_A)
    ).json()
    assert [t["id"] for t in page2["items"]] == ids[:1] and page2["next_cursor"] is None


async def test_idempotency_replay_mismatch_in_flight(client, harness) -> None:
    hdr = {**AUTH_A, "Idempotency-Key": "k1"}
    first = await client.post("/v1/tasks", json={"question": "q"}, headers=hdr)
    again = await client.post("/v1/tasks", json={"question": "q"}, headers=hdr)
    assert again.status_code == 202 and again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    other = await client.post("/v1/tasks", json={"question": "other"}, headers=hdr)
    assert other.status_code == 409 and other.json()["error"]["field"] == "Idempotency-Key"
    # in flight: hold the first request inside the webhook destination check
    gate = asyncio.Event()
    real_check = webhooks.check_destination

    async def slow_check(url: str, allow_private: bool) -> None:
        await gate.wait()
        await real_check(url, allow_private)

    import api.routers.tasks as tasks_router

    tasks_router.check_destination = slow_check  # type: ignore[assignment]
    try:
        body = {"question": "q", "webhook_url": "http://127.0.0.1:9/hook"}
        hdr2 = {**AUTH_A, "Idempotency-Key": "k2"}
        first_req = asyncio.create_task(client.post("/v1/tasks", json=body, headers=hdr2))
        await asyncio.sleep(0.05)
        second = await client.post("/v1/tasks", json=body, headers=hdr2)
        assert second.status_code == 409
        gate.set()
        assert (await first_req).status_code == 202
    finally:
        tasks_router.check_destination = real_check  # type: ignore[assignment]


async def test_failed_creation_frees_the_idempotency_key(client: httpx.AsyncClient) -> None:
    hdr = {**AUTH_B, "Idempotency-Key": "k"}
    body = {"question": "q", "webhook_url": "http://127.0.0.1:9/x"}
    r = await client.post("/v1/tasks", json=body, headers=hdr)
    assert r.status_code == 422 and r.json()["error"]["code"] == "no_webhook_secret"
    r = await client.post("/v1/tasks", json={"question": "q"}, headers=hdr)
    assert r.status_code == 202


async def test_cap_on_active_tasks_per_key(harness: Harness, researcher, settings) -> None:
    researcher.gate = asyncio.Event()
    harness.settings = settings.model_copy(update={"max_tasks_per_key": 2})
    async for client in _client_for(harness):
        for _ in range(2):
            assert (
                await client.post("/v1/tasks", json={"question": "q"}, headers=AUTH_A)
            ).status_code == 202
        r = await client.post("/v1/tasks", json={"question": "q"}, headers=AUTH_A)
        assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_tasks"
        researcher.gate.set()


async def test_cancel_running_task(harness: Harness, researcher) -> None:
    researcher.gate = asyncio.Event()
    async for client in _client_for(harness):
        task = (await client.post("/v1/tasks", json={"question": "q"}, headers=AUTH_A)).json()
        await asyncio.wait_for(researcher.started.wait(), 5)
        r = await client.post(f"/v1/tasks/{task['id']}/cancel", headers=AUTH_A)
        assert r.status_code == 200 and r.json()["status"] == "cancelled"
        r = await client.post(f"/v1/tasks/{task['id']}/cancel", headers=AUTH_A)
        assert r.status_code == 409


async def test_restart_resumes_running_task(harness: Harness, researcher) -> None:
    researcher.gate = asyncio.Event()
    async for client in _client_for(harness):
        task = (await client.post("/v1/tasks", json={"question": "q"}, headers=AUTH_A)).json()
        await asyncio.wait_for(researcher.started.wait(), 5)
    # the app stopped mid-run: the task is still "running" in the store
    researcher.gate.set()
    async for client in _client_for(harness):
        done = await wait_status(client, task["id"], {"succeeded"})
        assert researcher.resumed == [task["run_id"]]
        assert done["resumed"] == 1


# ------------------------------------------- two service processes, one task store
class Process:
    """A service process's task side: its own store object (owner) and worker pool."""

    def __init__(self, settings: ApiSettings, researcher: FakeResearcher, workers: int) -> None:
        self.store = TaskStore.open(settings.resolved_tasks_url())
        sender = WebhookSender(
            timeout_s=1, max_attempts=1, backoff_initial_s=0, backoff_max_s=0, allow_private=True
        )
        keys = KeyRing.from_file(settings.auth_file)
        # A short lease: heartbeats every 1/3 s.
        self.pool = WorkerPool(self.store, researcher, sender, keys, workers, lease_s=1.0)

    async def stop(self) -> None:
        await self.pool.stop()
        self.store.close()

    async def __aenter__(self) -> Process:
        await self.pool.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def failing(store: TaskStore, name: str, when: Callable[..., bool]) -> list[int]:
    """Make ``store.<name>`` raise a database error on the calls ``when(*args)`` picks;
    returns a counter of the failures raised."""
    real = getattr(store, name)
    raised: list[int] = []

    def call(*args: Any) -> Any:
        if when(*args):
            raised.append(1)
            raise sqlite3.OperationalError("database is locked")
        return real(*args)

    setattr(store, name, call)
    return raised


def first_call_only() -> Callable[..., bool]:
    calls: list[int] = []

    def when(*_: Any) -> bool:
        calls.append(1)
        return len(calls) == 1

    return when


def queue(process: Process, webhook_url: str | None = None) -> Any:
    """Queue a task for ``process``'s workers."""
    task = process.store.create_task("ana", ANA_KEY_ID, REQ, webhook_url)
    process.pool.notify()
    return task


async def wait_row(store: TaskStore, task_id: str, status: str) -> Any:
    for _ in range(500):
        row = store.task_row(task_id)
        if row is not None and row["status"] == status:
            return row
        await asyncio.sleep(0.01)
    raise AssertionError(f"task {task_id} never reached {status}")


async def test_a_task_running_in_another_process_is_cancelled_through_the_store(
    settings: ApiSettings, researcher: FakeResearcher
) -> None:
    researcher.gate = asyncio.Event()  # the run blocks until cancelled
    runner, api_only = Process(settings, researcher, 1), Process(settings, researcher, 0)
    await runner.pool.start()
    await api_only.pool.start()
    try:
        task = queue(runner)
        await asyncio.wait_for(researcher.started.wait(), 5)
        # Not running here: the request goes through the store, and the runner's next
        # heartbeat cancels its run.
        assert await api_only.pool.cancel(task.id) is True
        row = api_only.store.task_row(task.id)
        assert row["status"] == "cancelled"
        events = [e["type"] for e in api_only.store.events_after(task.id, 0)]
        assert events[-1] == "error"
    finally:
        await api_only.stop()
        await runner.stop()


async def test_a_cancel_asked_of_a_process_that_stops_first_is_kept_by_the_next(
    settings: ApiSettings, researcher: FakeResearcher
) -> None:
    researcher.gate = asyncio.Event()
    first = Process(settings, researcher, 1)
    await first.pool.start()
    task = queue(first)
    await asyncio.wait_for(researcher.started.wait(), 5)
    asker = TaskStore.open(settings.resolved_tasks_url())
    try:
        assert asker.request_cancel(task.id)
        await first.stop()  # before its heartbeat read the request: the task is handed back
        assert asker.task_row(task.id)["status"] == "queued"
        second = Process(settings, researcher, 1)
        await second.pool.start()
        try:
            cancelled = await wait_row(second.store, task.id, "cancelled")
            assert researcher.resumed == []  # cancelled, not resumed
            assert cancelled["owner"] == second.store.owner
            events = [e["type"] for e in second.store.events_after(task.id, 0)]
            assert events[-1] == "error"
        finally:
            await second.stop()
    finally:
        asker.close()


async def test_a_task_taken_back_from_a_stalled_process_finishes_once_elsewhere(
    settings: ApiSettings, researcher: FakeResearcher
) -> None:
    researcher.gate = asyncio.Event()  # the first process's run never finishes on its own
    stalled = Process(settings, researcher, 1)
    await stalled.pool.start()
    other = Process(settings, researcher, 1)
    try:
        task = queue(stalled)
        await asyncio.wait_for(researcher.started.wait(), 5)
        # The other process judges the first one gone (as it would once the lease lapsed)
        # and takes its running task back; it then resumes it to the end.
        assert other.store.recover(exclusive=True).tasks == 1
        await other.pool.start()
        done = await wait_row(other.store, task.id, "succeeded")
        assert done["owner"] == other.store.owner and done["resumed"] == 1
        # The stalled process notices at its next heartbeat, stops its run and records
        # nothing for it: one metadata event each, no error, one done.
        for _ in range(300):
            if not stalled.pool._running:
                break
            await asyncio.sleep(0.01)
        assert not stalled.pool._running
        types = [e["type"] for e in other.store.events_after(task.id, 0)]
        assert types.count("metadata") == 2 and "error" not in types and types[-1] == "done"
        assert other.store.task_row(task.id)["status"] == "succeeded"
    finally:
        await other.stop()
        await stalled.stop()


async def test_a_store_failure_mid_task_hands_the_task_back_and_the_worker_goes_on(
    settings: ApiSettings, researcher: FakeResearcher
) -> None:
    async with Process(settings, researcher, 1) as process:
        failing(process.store, "append_event", first_call_only())
        task = queue(process)
        researcher.inputs[task.run_id] = ("q", Caller(user="ana"), RunOptions())
        done = await wait_row(process.store, task.id, "succeeded")
        # Its first event failed: handed back, claimed again and resumed by the same worker.
        assert done["resumed"] == 1 and researcher.resumed == [task.run_id]
        assert process.pool._workers and not any(w.done() for w in process.pool._workers)


async def test_runs_dropped_in_a_store_outage_longer_than_the_lease_are_run_again(
    settings: ApiSettings, researcher: FakeResearcher
) -> None:
    researcher.gate = asyncio.Event()
    async with Process(settings, researcher, 1) as process:
        down = [False]
        failing(process.store, "heartbeat", lambda *_: down[0])
        task = queue(process)
        await asyncio.wait_for(researcher.started.wait(), 5)
        down[0] = True
        await asyncio.sleep(1.8)  # past the 1 s lease: the run here is dropped
        assert not process.pool._running
        researcher.gate.set()
        down[0] = False  # back: the task this process still holds is handed back, run again
        done = await wait_row(process.store, task.id, "succeeded")
        assert done["resumed"] == 1 and researcher.resumed == [task.run_id]


async def test_an_unreadable_request_fails_its_task_and_the_worker_goes_on(
    settings: ApiSettings, researcher: FakeResearcher
) -> None:
    process = Process(settings, researcher, 1)
    bad = process.store.create_task("ana", ANA_KEY_ID, REQ, None)
    with process.store._tx() as db:  # as another version might have stored it
        db.rowcount(
            "UPDATE tasks SET request = ? WHERE id = ?",
            (json.dumps({"question": "q", "max_rounds": -5}), bad.id),
        )
    good = process.store.create_task("ana", ANA_KEY_ID, REQ, None)
    async with process:
        failed = await wait_row(process.store, bad.id, "failed")
        assert json.loads(failed["error"])["code"]
        await wait_row(process.store, good.id, "succeeded")


async def test_a_progress_write_failure_mid_run_does_not_fail_the_run(
    settings: ApiSettings, researcher: FakeResearcher
) -> None:
    process = Process(settings, researcher, 1)
    raised = failing(process.store, "set_progress", first_call_only())
    async with process:
        task = queue(process)
        await wait_row(process.store, task.id, "succeeded")
        assert raised  # the failure happened, inside the run


async def test_the_webhook_goes_out_even_when_the_done_event_write_fails(
    settings: ApiSettings, researcher: FakeResearcher
) -> None:
    process = Process(settings, researcher, 1)
    failing(process.store, "append_event", lambda _task_id, event: event.get("type") == "done")
    spawned: list[str] = []
    process.pool._spawn_delivery = spawned.append  # type: ignore[method-assign]
    async with process:
        task = queue(process, "http://127.0.0.1:9/hook")
        await wait_row(process.store, task.id, "succeeded")
        for _ in range(100):
            if spawned:
                break
            await asyncio.sleep(0.01)
        assert spawned[:1] == [task.id]


class Receiver:
    def __init__(self, fail_first: int = 0) -> None:
        self.fail_first = fail_first
        self.calls: list[tuple[dict[str, str], bytes]] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.calls.append((dict(request.headers), request.content))
        if len(self.calls) <= self.fail_first:
            return httpx.Response(503)
        return httpx.Response(204)


async def webhook_sent(harness: Harness, receiver: Receiver) -> dict[str, Any]:
    """A task with a webhook, run until its webhook is no longer pending, sent to
    ``receiver``; the task as the API then shows it."""
    t: dict[str, Any] = {}
    async for client in _client_for(harness):  # to its end: the service stops cleanly
        assert harness.services is not None
        harness.services.pool.sender.transport = httpx.MockTransport(receiver.handler)
        body = {"question": "q", "webhook_url": "http://127.0.0.1:1/hook"}
        task = (await client.post("/v1/tasks", json=body, headers=AUTH_A)).json()
        for _ in range(500):
            t = (await client.get(f"/v1/tasks/{task['id']}", headers=AUTH_A)).json()
            if t["webhook"]["state"] != "pending":
                break
            await asyncio.sleep(0.01)
    assert t.get("webhook", {}).get("state", "pending") != "pending", t
    return t


async def test_webhook_signed_retried_same_id(harness: Harness) -> None:
    receiver = Receiver(fail_first=1)
    task = t = await webhook_sent(harness, receiver)
    assert t["webhook"]["state"] == "delivered"
    assert [d["ok"] for d in t["webhook"]["deliveries"]] == [False, True]
    ids = {h["webhook-id"] for h, _ in receiver.calls}
    assert len(receiver.calls) == 2 and len(ids) == 1
    headers, content = receiver.calls[-1]
    assert webhooks.verify(SECRET, headers, content) == ids.pop()
    assert json.loads(content)["data"]["id"] == task["id"]


def test_verify_rejects_forged_and_stale() -> None:
    body = b'{"a":1}'
    headers = webhooks.signed_headers(SECRET, "msg_1", body)
    assert webhooks.verify(SECRET, headers, body) == "msg_1"
    with pytest.raises(webhooks.WebhookVerificationError):
        webhooks.verify(SECRET, headers, b'{"a":2}')
    other = "whsec_" + "b3RoZXItc2VjcmV0LXZhbHVlLTEyMzQ="
    with pytest.raises(webhooks.WebhookVerificationError):
        webhooks.verify(other, headers, body)
    stale = webhooks.signed_headers(SECRET, "msg_1", body, now=1_000_000)
    with pytest.raises(webhooks.WebhookVerificationError, match="tolerance"):
        webhooks.verify(SECRET, stale, body)


async def test_private_webhook_refused_unless_allowed(harness: Harness, settings) -> None:
    harness.settings = settings.model_copy(update={"webhook_allow_private": False})
    async for client in _client_for(harness):
        for url in ("http://127.0.0.1:8000/x", "http://10.0.0.1/x", "ftp://example.com/x"):
            r = await client.post(
                "/v1/tasks", json={"question": "q", "webhook_url": url}, headers=AUTH_A
            )
            assert r.status_code == 422, url
            assert r.json()["error"]["field"] == "webhook_url"
