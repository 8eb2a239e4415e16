"""No task-store call on the event loop: handlers and the worker pool run them in threads.

A store call made on the loop stalls every request and stream for as long as it takes (a
slow disk, a Postgres round trip). The store here records every call made on the loop's
thread; a whole task life (queue, run, stream, webhook, cancel, lease renewals) and an
answer must make none. A slow store then shows other requests served meanwhile.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx

from api.app import assemble
from api.auth import KeyRing
from api.deps import Services
from api.routers import answers
from api.settings import ApiSettings
from api.tasks.store import SqliteTaskStore, Tx
from graph.models import Caller, RunOptions
from tests.unit.api.conftest import AUTH_A, FakeResearcher, FakeStore, Harness, _client_for


class LoopWatchingStore(SqliteTaskStore):
    """Records each call made on an event loop's thread; sleeps ``delay`` in a call."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.on_loop: list[str] = []
        self.delay = 0.0

    def _enter(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a worker thread: where store calls belong
            time.sleep(self.delay)
            return
        self.on_loop.append("".join(traceback.format_stack(limit=8)))

    @contextmanager
    def _tx(self) -> Iterator[Tx]:
        self._enter()
        with super()._tx() as db:
            yield db

    @contextmanager
    def _read(self) -> Iterator[Tx]:
        self._enter()
        with super()._read() as db:
            yield db


class WatchedHarness(Harness):
    store: LoopWatchingStore

    async def factory(self, settings: ApiSettings) -> Services:
        self.store = LoopWatchingStore(settings.home / "tasks.sqlite")
        keys = KeyRing.from_file(settings.auth_file)
        self.services = assemble(settings, keys, FakeStore(), self.researcher, self.store)
        return self.services


async def _until(check: object, client: httpx.AsyncClient, task_id: str) -> dict:
    for _ in range(500):
        task = (await client.get(f"/v1/tasks/{task_id}", headers=AUTH_A)).json()
        if check(task):  # type: ignore[operator]
            return task
        await asyncio.sleep(0.01)
    raise AssertionError(f"task never got there: {task}")


async def test_a_task_and_an_answer_make_no_store_call_on_the_event_loop(
    settings: ApiSettings, researcher: FakeResearcher
) -> None:
    # A short lease: the pool renews it (and takes stock) every second of the test.
    harness = WatchedHarness(settings.model_copy(update={"task_lease_s": 3.0}), researcher)
    async for client in _client_for(harness):
        store = harness.store
        store.on_loop.clear()  # start-up opened it on the loop: what follows must not
        body = {"question": "q", "webhook_url": "http://127.0.0.1:9/hook"}
        headers = {**AUTH_A, "Idempotency-Key": "k1"}
        r = await client.post("/v1/tasks", json=body, headers=headers)
        assert r.status_code == 202, r.text
        task_id = r.json()["id"]
        stream = await client.get(f"/v1/tasks/{task_id}/events", headers=AUTH_A)
        assert "event: done" in stream.text
        replay = await client.post("/v1/tasks", json=body, headers=headers)
        assert replay.headers.get("idempotent-replayed") == "true"
        # Nothing listens on port 9: every attempt fails, each one logged.
        task = await _until(lambda t: t["webhook"]["state"] == "failed", client, task_id)
        assert len(task["webhook"]["deliveries"]) == settings.webhook_max_attempts
        cancel = await client.post(f"/v1/tasks/{task_id}/cancel", headers=AUTH_A)
        assert cancel.status_code == 409
        answer = await client.post("/v1/answers", json={"question": "q"}, headers=AUTH_A)
        assert answer.status_code == 200
        streamed = await client.post(
            "/v1/answers", json={"question": "q"}, headers={**AUTH_A, "Accept": "text/event-stream"}
        )
        assert "event: done" in streamed.text
        assert (await client.get("/v1/tasks", headers=AUTH_A)).status_code == 200
        await asyncio.sleep(1.2)  # at least one lease renewal
        assert store.on_loop == [], store.on_loop[0]


async def test_a_slow_store_call_does_not_hold_up_other_requests(
    settings: ApiSettings, researcher: FakeResearcher
) -> None:
    harness = WatchedHarness(settings, researcher)
    async for client in _client_for(harness):
        harness.store.delay = 1.0
        slow = asyncio.create_task(client.post("/v1/tasks/task_missing/cancel", headers=AUTH_A))
        await asyncio.sleep(0.05)  # the cancel is in its store call now
        started = time.monotonic()
        other = await client.get("/openapi.json")
        assert other.status_code == 200
        assert time.monotonic() - started < 0.5
        assert not slow.done()  # served while the slow call was still going on
        assert (await slow).status_code == 404


async def test_a_streamed_answer_its_client_left_is_recorded_cancelled(
    harness: Harness, researcher: FakeResearcher
) -> None:
    """The stream's closing write runs in a thread while the request is being cancelled
    (its scope stays cancelled: an unshielded await there would never run it)."""
    researcher.gate = asyncio.Event()  # the run waits after its tool call
    async for _ in _client_for(harness):
        services = harness.services
        assert services is not None
        services.tasks.register_run("run_left", "ana", "q")
        stream = answers._stream(services, "q", Caller(user="ana"), RunOptions(), "run_left")
        with anyio.CancelScope() as scope:  # the client goes away mid-run
            async for event in stream:
                if event.event == "tool_call":
                    scope.cancel()
        run = services.tasks.get_run("run_left", "ana")
        assert run is not None and run.status == "cancelled"
