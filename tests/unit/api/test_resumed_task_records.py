"""A resumed task records each step and each webhook attempt once (issue 26, item 11).

A task stopped mid-round resumes from its last checkpoint and redoes that round: the
stopped attempt's events of the redone steps are replaced by the resumed run's, its
progress counts the run's own tool calls, and a webhook attempt cut short by the stop
stays in the delivery log (the next one numbers after it).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from api.settings import ApiSettings
from api.tasks.store import DELIVERY_INTERRUPTED
from graph.models import TraceEvent
from graph.runner import Researcher
from tests.unit.api.conftest import FakeResearcher
from tests.unit.api.test_key_revocation import (
    ANA_KEY_ID,
    Paused,
    Service,
    corpus,
    finished,
)
from tests.unit.api.test_tasks_and_streams import Process, queue, wait_row
from tools.testing import LEDGER_QUESTION, memory_search


def steps(events: list[dict[str, Any]]) -> list[tuple[str, str | None, int]]:
    """The run's events as (type, node, round), without the task's own frames."""
    return [
        (e["type"], e.get("node"), e.get("round", 0))
        for e in events
        if e["type"] not in ("metadata", "done", "error")
    ]


def in_round_two_fuse(event: TraceEvent) -> bool:
    return event.type == "node_start" and event.node == "fuse" and event.round == 2


def at_synthesis(event: TraceEvent) -> bool:
    return event.type == "node_start" and event.node == "synthesize"


async def test_a_resumed_task_records_its_redone_round_once(
    settings: ApiSettings, tmp_path: Path
) -> None:
    store = corpus()
    clean_home, home = tmp_path / "clean", tmp_path / "runs"
    clean_home.mkdir()
    home.mkdir()
    # What an uninterrupted task records.
    clean_settings = settings.model_copy(update={"home": tmp_path / "clean-tasks"})
    clean = Researcher(store, checkpointer_path=clean_home / "runs.sqlite", search_fn=memory_search)
    async with Service(clean_settings, clean) as svc:
        task = svc.store.create_task("ana", ANA_KEY_ID, {"question": LEDGER_QUESTION}, None)
        svc.pool.notify()
        row = await finished(svc.store, task.id)
        expected = steps(svc.store.events_after(task.id, 0))
    clean_result = json.loads(row["result"])
    assert clean_result["rounds"] >= 2

    # Stopped inside round two, after its tool calls were made and recorded.
    async with Service(settings, Paused(store, home, in_round_two_fuse)) as first:
        task = first.store.create_task("ana", ANA_KEY_ID, {"question": LEDGER_QUESTION}, None)
        first.pool.notify()
        await asyncio.wait_for(first.researcher.reached.wait(), 30)  # type: ignore[attr-defined]
        stopped = steps(first.store.events_after(task.id, 0))
    assert ("tool_call", "execute", 2) in stopped
    # Resumed, and held again before synthesis: the progress as the run goes.
    resumed = Paused(store, home, at_synthesis)
    async with Service(settings, resumed) as svc:
        await asyncio.wait_for(resumed.reached.wait(), 30)
        held = svc.store.task_row(task.id)
        assert held is not None
        midway = json.loads(held["progress"])
        resumed.go.set()
        row = await finished(svc.store, task.id)
        events = svc.store.events_after(task.id, 0)
    result = json.loads(row["result"])
    assert row["status"] == "succeeded" and row["resumed"] == 1
    assert result["answer"] == clean_result["answer"]
    # Each step once, in order: as the uninterrupted task recorded them.
    assert steps(events) == expected
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs))  # ids only grow (gaps where events were replaced)
    marks = [e["data"].get("resumed") for e in events if e["type"] == "metadata"]
    assert marks == [False, True]  # the stream says where the task resumed
    tool_calls = sum(1 for s in steps(events) if s[0] == "tool_call")
    assert midway["tool_calls"] == tool_calls == result["tool_calls"]
    progress = json.loads(row["progress"])
    assert progress["tool_calls"] == result["tool_calls"]
    assert progress["round"] == result["rounds"]


class HangingReceiver:
    """Takes the first webhook and never answers it (the sender is stopped meanwhile);
    answers 204 to the rest."""

    def __init__(self) -> None:
        self.calls: list[dict[str, str]] = []
        self.took_first = asyncio.Event()

    async def handler(self, request: httpx.Request) -> httpx.Response:
        self.calls.append(dict(request.headers))
        if len(self.calls) == 1:
            self.took_first.set()
            await asyncio.Event().wait()  # until the stop cancels the send
        return httpx.Response(204)


async def test_a_webhook_cut_short_by_a_stop_stays_in_the_delivery_log(
    settings: ApiSettings, researcher: FakeResearcher
) -> None:
    receiver = HangingReceiver()
    first = Process(settings, researcher, 1)
    first.pool.sender.transport = httpx.MockTransport(receiver.handler)
    async with first:
        task = queue(first, "http://127.0.0.1:1/hook")
        await asyncio.wait_for(receiver.took_first.wait(), 10)
        log = first.store.get_task(task.id).webhook.deliveries  # type: ignore[union-attr]
        assert [(d.attempt, d.error) for d in log] == [(1, "in flight")]
    second = Process(settings, researcher, 1)
    second.pool.sender.transport = httpx.MockTransport(receiver.handler)
    async with second:
        for _ in range(500):
            got = second.store.get_task(task.id)
            if got is not None and got.webhook is not None and got.webhook.state != "pending":
                break
            await asyncio.sleep(0.01)
    assert got is not None and got.webhook is not None
    assert got.webhook.state == "delivered"
    # Sent twice with one id (the receiver deduplicates), and logged twice.
    assert len(receiver.calls) == 2 and len({h["webhook-id"] for h in receiver.calls}) == 1
    log = got.webhook.deliveries
    assert [(d.attempt, d.ok, d.error) for d in log] == [
        (1, False, DELIVERY_INTERRUPTED),
        (2, True, None),
    ]


async def test_a_retried_webhook_logs_each_attempt_once(
    settings: ApiSettings, researcher: FakeResearcher
) -> None:
    calls: list[int] = []

    def handler(_: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(503 if len(calls) < 3 else 204)

    process = Process(settings, researcher, 1)
    process.pool.sender.max_attempts = 3
    process.pool.sender.transport = httpx.MockTransport(handler)
    async with process:
        task = queue(process, "http://127.0.0.1:1/hook")
        await wait_row(process.store, task.id, "succeeded")
        for _ in range(500):
            got = process.store.get_task(task.id)
            if got is not None and got.webhook is not None and got.webhook.state != "pending":
                break
            await asyncio.sleep(0.01)
    assert got is not None and got.webhook is not None and got.webhook.state == "delivered"
    log = [(d.attempt, d.status_code, d.ok) for d in got.webhook.deliveries]
    assert log == [(1, 503, False), (2, 503, False), (3, 204, True)] and len(calls) == 3
