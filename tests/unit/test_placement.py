"""An in-process engine's short calls run on the event loop; its first call, calls that
have grown slow and every call of a remote engine run in a worker thread."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from retrieval import placement
from retrieval.placement import engine_call, recent_cost
from tests.conftest import held_by_another_thread


class Engine:
    def __init__(self, in_process: bool) -> None:
        self.in_process = in_process
        self.delay = 0.0
        self.threads: list[str] = []

    def search(self, query: str) -> str:
        self.threads.append(threading.current_thread().name)
        if self.delay:
            time.sleep(self.delay)
        if query == "boom":
            raise ValueError("engine failed")
        return query.upper()


async def _calls(engine: Engine, n: int, query: str = "q") -> list[str]:
    return [await engine_call(engine, "search", engine.search, query) for _ in range(n)]


def test_short_calls_of_an_in_process_engine_move_onto_the_loop() -> None:
    engine = Engine(in_process=True)
    loop_thread = threading.current_thread().name
    assert asyncio.run(_calls(engine, 3)) == ["Q", "Q", "Q"]
    first, *rest = engine.threads
    assert first != loop_thread  # nothing known yet: a worker thread
    assert rest == [loop_thread, loop_thread]
    cost = recent_cost(engine, "search")
    assert cost is not None and cost < placement.INLINE_BELOW_S


def test_calls_that_grow_slow_go_back_to_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(placement, "INLINE_BELOW_S", 0.002)
    engine = Engine(in_process=True)
    loop_thread = threading.current_thread().name

    async def scenario() -> None:
        await _calls(engine, 2)  # thread, then loop
        engine.delay = 0.02  # the index grew: each call now takes 20 ms
        await _calls(engine, 6)

    asyncio.run(scenario())
    assert engine.threads[1] == loop_thread
    assert engine.threads[-1] != loop_thread  # the average passed the bound: threads again


def test_a_remote_engine_always_runs_in_a_thread() -> None:
    engine = Engine(in_process=False)
    asyncio.run(_calls(engine, 4))
    assert threading.current_thread().name not in engine.threads
    assert recent_cost(engine, "search") is None


def test_failures_surface_from_the_loop_and_from_threads() -> None:
    engine = Engine(in_process=True)

    async def scenario() -> None:
        for _ in range(3):  # the first in a thread, the others on the loop
            with pytest.raises(ValueError, match="engine failed"):
                await engine_call(engine, "search", engine.search, "boom")

    asyncio.run(scenario())
    assert recent_cost(engine, "search") is not None  # failed calls are timed too


def test_an_owner_can_keep_a_call_off_the_loop() -> None:
    engine = Engine(in_process=True)
    busy = {"search": False}
    engine.inline_ok = lambda name: not busy[name]  # type: ignore[attr-defined]
    loop_thread = threading.current_thread().name

    async def scenario() -> None:
        await _calls(engine, 2)  # thread, then loop
        busy["search"] = True  # e.g. another thread is writing the catalog
        await _calls(engine, 2)

    asyncio.run(scenario())
    assert engine.threads[1] == loop_thread
    assert loop_thread not in engine.threads[2:]


def test_a_call_on_the_loop_that_overran_its_timeout_raises() -> None:
    engine = Engine(in_process=True)

    async def scenario() -> None:
        await _calls(engine, 1)  # in a thread: now known to be short
        engine.delay = 0.03
        with pytest.raises(TimeoutError, match="on the event loop"):
            await engine_call(engine, "search", engine.search, "q", timeout_s=0.01)

    asyncio.run(scenario())
    assert engine.threads[-1] == threading.current_thread().name  # it did run on the loop


def test_a_catalog_in_use_by_another_thread_is_not_idle(tmp_path: Any) -> None:
    from retrieval.catalog import Catalog

    catalog = Catalog(tmp_path / "catalog.sqlite")
    assert catalog.idle()
    with held_by_another_thread(catalog._lock):
        assert not catalog.idle()
    assert catalog.idle()
    catalog.close()


def test_an_owner_that_cannot_be_remembered_runs_in_a_thread() -> None:
    class Unhashable(Engine):
        __hash__ = None  # type: ignore[assignment]

    engine = Unhashable(in_process=True)
    assert asyncio.run(_calls(engine, 3)) == ["Q", "Q", "Q"]
    assert threading.current_thread().name not in engine.threads
