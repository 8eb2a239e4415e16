"""Unit-test doubles for the service: a scripted researcher and a tiny store.

The real graph and engines are exercised by tests/e2e; here they are replaced only so
the HTTP contract (auth, limits, idempotency, streaming framing, recovery) can be
checked quickly and deterministically.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.app import assemble, create_app
from api.auth import KeyRing
from api.deps import Services
from api.settings import ApiSettings
from api.tasks.store import TaskStore
from graph.models import Caller, Citation, ResearchResult, RunOptions, TraceEvent
from retrieval.catalog import SourceInfo
from retrieval.engines.base import SearchFilter
from retrieval.search_models import Locator
from retrieval.store import StoreError

SECRET = "whsec_" + base64.b64encode(b"unit-test-secret-0123456789").decode()
KEYS = {
    "keyA": {
        "user": "ana",
        "groups": ["eng"],
        "project": None,
        "webhook_secret": SECRET,
        "sync_sources": True,
    },
    "keyB": {"user": "bob", "groups": [], "project": None},
}
AUTH_A = {"Authorization": "Bearer keyA"}
AUTH_B = {"Authorization": "Bearer keyB"}


class UnreachableEngine:
    """An engine whose server is down: every search raises, as a lost connection does."""

    def search(self, *_: Any) -> list[Any]:
        raise ConnectionError("engine at 10.0.0.7:9200 unreachable")


class FixedEmbedder:
    def encode(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]


class FakeStore:
    settings = None
    # No engine behind this store: a search gets as far as the legs, which both fail.
    lexical = UnreachableEngine()
    dense = UnreachableEngine()
    embedder = FixedEmbedder()

    # Project -> its sources: "core" holds the public wiki, "people" the hr-only payroll.
    projects = {"core": ("wiki",), "people": ("payroll",)}

    def filter_for(self, groups: Any, project: str | None = None, **_: Any) -> SearchFilter:
        if project and project not in self.projects:
            raise StoreError(f"unknown project {project!r}: no sources belong to it")
        return SearchFilter.for_groups(
            groups or [], sources=self.projects[project] if project else None
        )

    def visible_size(self, flt: SearchFilter) -> int:
        """Records the filter admits: 3 public in wiki, 1 of the hr group in payroll."""
        size = 0
        if flt.sources is None or "wiki" in flt.sources:
            size += 3
        hr = flt.acl_groups is None or "hr" in flt.acl_groups
        if hr and (flt.sources is None or "payroll" in flt.sources):
            size += 1
        return size

    def sources(self, flt: SearchFilter | None = None) -> list[SourceInfo]:
        # "wiki" is public; "payroll" holds only documents of the "hr" group.
        found = [SourceInfo("wiki", 2, 3, "2026-11-30T09:00:00Z", "/srv/connectors/wiki", ["core"])]
        if flt is None or "hr" in (flt.acl_groups or ()):
            found.append(SourceInfo("payroll", 1, 1, None, None, []))
        return found

    def corpus_size(self) -> int:
        return 4  # every record, the hidden payroll one too

    def close(self) -> None:
        pass


class FakeResearcher:
    """Emits a realistic event sequence; ``gate`` (if set) blocks a run mid-way."""

    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None
        self.fail_with: Exception | None = None
        self.traces: dict[str, list[TraceEvent]] = {}
        self.inputs: dict[str, tuple[str, Caller, RunOptions]] = {}
        self.results: dict[str, ResearchResult] = {}
        self.resumed: list[str] = []
        self.started = asyncio.Event()

    async def prune(self, before: float) -> int:
        old = [r for r, events in self.traces.items() if events and events[0].ts < before]
        for run_id in old:
            del self.traces[run_id]
        return len(old)

    async def _emit(
        self, run_id: str, on_event: Any, etype: str, node: str, rnd: int, **data: Any
    ) -> None:
        trace = self.traces.setdefault(run_id, [])
        event = TraceEvent(
            run_id=run_id,
            seq=len(trace) + 1,
            type=etype,
            ts=time.time(),
            node=node,
            round=rnd,
            data=data,
        )
        trace.append(event)
        if on_event is not None:
            await on_event(event)

    async def run(
        self,
        question: str,
        caller: Caller,
        options: RunOptions,
        run_id: str | None = None,
        on_event: Any = None,
        caller_source: Any = None,
    ) -> ResearchResult:
        run_id = run_id or "run_x"
        self.inputs[run_id] = (question, caller, options)
        await self._emit(run_id, on_event, "node_start", "plan", 1)
        await self._emit(
            run_id,
            on_event,
            "plan",
            "plan",
            1,
            calls=[{"tool": "search_knowledge", "args": {"query": question}}],
        )
        await self._emit(run_id, on_event, "node_end", "plan", 1)
        await self._emit(run_id, on_event, "tool_call", "execute", 1, tool="search_knowledge")
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        return await self._finish(run_id, on_event)

    async def resume(
        self, run_id: str, on_event: Any = None, caller_source: Any = None
    ) -> ResearchResult:
        self.resumed.append(run_id)
        return await self._finish(run_id, on_event)

    async def _finish(self, run_id: str, on_event: Any) -> ResearchResult:
        if self.fail_with is not None:
            raise self.fail_with
        question, caller, _ = self.inputs[run_id]
        await self._emit(
            run_id,
            on_event,
            "tool_result",
            "execute",
            1,
            ranked=[{"id": "wiki:a#0", "rank": 1, "score": 1.0}],
        )
        await self._emit(run_id, on_event, "evidence", "fuse", 1, added=["wiki:a#0"], pool_size=1)
        await self._emit(run_id, on_event, "round", "assess", 1, verdict="enough")
        loc = Locator(doc_id="wiki:a", chunk_id="wiki:a#0")
        result = ResearchResult(
            run_id=run_id,
            question=question,
            mode="iterative",
            answer=f"Answer for {caller.user} [1].",
            answerable=True,
            citations=[
                Citation(
                    n=1,
                    evidence_id="wiki:a#0",
                    doc_id="wiki:a",
                    title="A",
                    text="passage A",
                    locator=loc,
                )
            ],
            rounds=1,
            tool_calls=1,
        )
        self.results[run_id] = result
        return result

    def get_trace(self, run_id: str) -> list[TraceEvent]:
        return list(self.traces.get(run_id, []))

    def get_result(self, run_id: str) -> ResearchResult | None:
        return self.results.get(run_id)

    def list_runs(self, user: str) -> list[dict[str, Any]]:
        return []


@pytest.fixture
def auth_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"keys": KEYS}))
    return path


@pytest.fixture
def settings(tmp_path: Path, auth_file: Path) -> ApiSettings:
    return ApiSettings(
        home=tmp_path / "home",
        auth_file=auth_file,
        webhook_allow_private=True,
        webhook_backoff_initial_s=0.01,
        webhook_backoff_max_s=0.05,
        webhook_max_attempts=3,
        max_body_bytes=4_096,
        max_question_chars=200,
        task_workers=1,
        gc_freeze=False,  # process-wide: tests/unit/api/test_warm_up.py checks it on its own
    )


@pytest.fixture
def researcher() -> FakeResearcher:
    return FakeResearcher()


class Harness:
    def __init__(self, settings: ApiSettings, researcher: FakeResearcher) -> None:
        self.settings = settings
        self.researcher = researcher
        self.services: Services | None = None

    async def factory(self, settings: ApiSettings) -> Services:
        tasks = TaskStore.open(settings.resolved_tasks_url())
        self.services = assemble(
            settings, KeyRing.from_file(settings.auth_file), FakeStore(), self.researcher, tasks
        )
        return self.services

    @property
    def app(self) -> Any:
        return create_app(self.settings, services_factory=self.factory)


async def _client_for(harness: Harness) -> AsyncIterator[httpx.AsyncClient]:
    app = harness.app
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield client


@pytest.fixture
def harness(settings: ApiSettings, researcher: FakeResearcher) -> Harness:
    return Harness(settings, researcher)


@pytest.fixture
async def client(harness: Harness) -> AsyncIterator[httpx.AsyncClient]:
    async for c in _client_for(harness):
        yield c
