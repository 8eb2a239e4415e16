"""Tracing and metrics of the service: the span tree of one /v1/answers request (real graph,
LLM policy on a scripted OpenAI client, in-memory span exporter), the trace id in the
run's events and in JSON logs, and /metrics in its three modes."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client import REGISTRY

from api.app import assemble, create_app
from api.auth import KeyRing
from api.logging import ContextFilter, JsonFormatter
from api.metrics import CountedSourceSync, CountedWebhookSender, render_metrics
from api.schemas import WebhookDelivery
from api.settings import ApiSettings
from api.sources import SourceConfig, SourceSync
from api.tasks.store import SqliteTaskStore, TaskStore
from graph.policies.llm import LLMPolicy
from graph.runner import Researcher
from graph.settings import GraphSettings
from tests.unit.api.conftest import AUTH_A
from tests.unit.api.test_tasks_and_streams import parse_sse
from tools.testing import LEDGER_QUESTION, ledger_corpus, memory_search

PLAN = {"calls": [{"tool": "search_knowledge", "input": "Ledger runbook author"}]}
NEXT = {
    "decision": "next",
    "missing": ["team"],
    "calls": [{"tool": "lookup_entity", "input": "Dana Ruiz"}],
}
ENOUGH = {"decision": "enough", "reason": "both hops found"}


def _usage(prompt: int, completion: int) -> Any:
    return SimpleNamespace(prompt_tokens=prompt, completion_tokens=completion)


class ScriptedOpenAI:
    """Plan, then the verdicts in order, then a streamed answer whose last chunk carries the
    usage (as ``stream_options.include_usage`` asks)."""

    def __init__(self) -> None:
        self.verdicts = [NEXT, ENOUGH]
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    async def create(self, **kw: Any) -> Any:
        if kw.get("stream"):
            return self._stream()
        is_plan = "decision" not in json.dumps(kw["response_format"])
        reply = PLAN if is_plan else self.verdicts.pop(0)
        message = SimpleNamespace(content=json.dumps(reply))
        return SimpleNamespace(
            id="cmpl-1",
            model="smol-135m",
            choices=[SimpleNamespace(message=message, finish_reason="stop")],
            usage=_usage(120, 30),
        )

    async def _stream(self) -> Any:
        for text in ["Dana Ruiz leads the Payments Platform team [1][2]", "."]:
            delta = SimpleNamespace(content=text)
            yield SimpleNamespace(
                id="cmpl-2", model="smol-135m", choices=[SimpleNamespace(delta=delta)], usage=None
            )
        done = SimpleNamespace(delta=SimpleNamespace(content=None), finish_reason="stop")
        yield SimpleNamespace(id="cmpl-2", model="smol-135m", choices=[done], usage=None)
        yield SimpleNamespace(id="cmpl-2", model="smol-135m", choices=[], usage=_usage(400, 12))


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """An in-memory exporter on the process's tracer provider (installed once: OpenTelemetry
    allows one global provider per process)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.shutdown()  # later tests' spans are not kept


@pytest.fixture
def researcher(tmp_path: Path) -> Iterator[Researcher]:
    settings = GraphSettings(policy="llm", llm_model="smol-135m")
    r = Researcher(
        ledger_corpus(),
        settings,
        checkpointer_path=tmp_path / "runs.sqlite",
        policy=LLMPolicy(settings, client=ScriptedOpenAI()),
        search_fn=memory_search,
    )
    yield r
    r.close()


async def _client(settings: ApiSettings, researcher: Any) -> AsyncIterator[httpx.AsyncClient]:
    async def factory(s: ApiSettings) -> Any:
        tasks = TaskStore.open(s.resolved_tasks_url())
        return assemble(s, KeyRing.from_file(s.auth_file), researcher.store, researcher, tasks)

    app = create_app(settings, services_factory=factory)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield client


def _by_id(finished: tuple[ReadableSpan, ...]) -> dict[int, ReadableSpan]:
    return {_span_id(s): s for s in finished}


def _ancestors(span: ReadableSpan, index: dict[int, ReadableSpan]) -> list[str]:
    names = []
    while span.parent is not None and span.parent.span_id in index:
        span = index[span.parent.span_id]
        names.append(span.name)
    return names


def _attr(span: ReadableSpan, name: str) -> Any:
    return (span.attributes or {})[name]


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def _trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.trace_id


async def test_one_answer_is_one_trace_request_agent_rounds_tools_and_chats(
    spans: InMemorySpanExporter, settings: ApiSettings, researcher: Researcher
) -> None:
    async for client in _client(settings, researcher):
        assert (await client.get("/healthz")).status_code == 200  # not traced
        r = await client.post("/v1/answers", json={"question": LEDGER_QUESTION}, headers=AUTH_A)
        assert r.status_code == 200, r.text
        run_id = r.json()["run_id"]
        metadata = researcher.get_trace(run_id)[0]  # before shutdown closes the trace store
    finished = spans.get_finished_spans()
    index = _by_id(finished)
    server = [s for s in finished if s.kind is SpanKind.SERVER]
    assert [s.name for s in server] == ["POST /v1/answers"]
    assert {_trace_id(s) for s in finished} == {_trace_id(server[0])}
    assert r.headers["x-trace-id"] == trace.format_trace_id(_trace_id(server[0]))

    agent = next(s for s in finished if s.name == "invoke_agent waypoint")
    assert _ancestors(agent, index)[-1] == "POST /v1/answers"
    assert _attr(agent, "gen_ai.operation.name") == "invoke_agent"
    assert _attr(agent, "gen_ai.conversation.id") == run_id
    assert _attr(agent, "waypoint.rounds") == 2

    rounds = sorted(
        (s for s in finished if s.name == "round"), key=lambda s: _attr(s, "waypoint.round")
    )
    assert [_attr(s, "waypoint.round") for s in rounds] == [1, 2]
    assert all(_parent_id(s) == _span_id(agent) for s in rounds)

    tools = [s for s in finished if s.name.startswith("execute_tool ")]
    tool_rounds = {
        (_attr(s, "gen_ai.tool.name"), _attr(index[_parent_id(s) or 0], "waypoint.round"))
        for s in tools
    }
    assert ("search_knowledge", 1) in tool_rounds and ("lookup_entity", 2) in tool_rounds
    assert all(_attr(s, "waypoint.tool.outcome") == "ok" for s in tools)

    chats = [s for s in finished if s.name == "chat smol-135m"]
    purposes = sorted(_attr(s, "waypoint.llm.purpose") for s in chats)
    assert purposes == ["answer", "plan", "verdict", "verdict"]  # round 2 runs the verdict's calls
    for chat in chats:
        assert chat.kind is SpanKind.CLIENT and _attr(chat, "gen_ai.operation.name") == "chat"
        assert _attr(chat, "gen_ai.usage.input_tokens") > 0
        assert _attr(chat, "gen_ai.usage.output_tokens") > 0
        assert _attr(chat, "server.address") == "127.0.0.1"
    answer = next(s for s in chats if _attr(s, "waypoint.llm.purpose") == "answer")
    assert _parent_id(answer) == _span_id(agent)  # synthesis is no round
    assert _attr(answer, "gen_ai.usage.input_tokens") == 400
    assert _attr(answer, "gen_ai.response.finish_reasons") == ("stop",)
    verdicts = [s for s in chats if _attr(s, "waypoint.llm.purpose") == "verdict"]
    assert {index[_parent_id(s) or 0].name for s in verdicts} == {"round"}

    assert metadata.type == "metadata"
    assert metadata.data["trace_id"] == trace.format_trace_id(_trace_id(server[0]))


async def test_a_tasks_run_is_its_own_trace_linked_to_the_request_that_queued_it(
    spans: InMemorySpanExporter, settings: ApiSettings, researcher: Researcher
) -> None:
    async for client in _client(settings, researcher):
        r = await client.post("/v1/tasks", json={"question": LEDGER_QUESTION}, headers=AUTH_A)
        assert r.status_code == 202, r.text
        task_id = r.json()["id"]
        for _ in range(200):
            got = (await client.get(f"/v1/tasks/{task_id}", headers=AUTH_A)).json()
            if got["status"] in ("succeeded", "failed"):
                break
            await asyncio.sleep(0.05)
        assert got["status"] == "succeeded", got
    finished = spans.get_finished_spans()
    index = _by_id(finished)
    post = next(s for s in finished if s.kind is SpanKind.SERVER and s.name == "POST /v1/tasks")
    task = next(s for s in finished if s.name == "process task")
    assert _attr(task, "waypoint.task.id") == task_id
    assert task.parent is None and _trace_id(task) != _trace_id(post)
    (link,) = task.links
    # the link points into the request's trace: at the handler's span, under the request's
    linked = index[link.context.span_id]
    assert link.context.trace_id == _trace_id(post)
    assert linked is post or "POST /v1/tasks" in _ancestors(linked, index)
    agent = next(s for s in finished if s.name == "invoke_agent waypoint")
    assert _ancestors(agent, index) == ["process task"]


async def test_a_streamed_answer_names_its_trace_in_the_metadata_frame(
    spans: InMemorySpanExporter, settings: ApiSettings, researcher: Researcher
) -> None:
    sse = {**AUTH_A, "Accept": "text/event-stream"}
    async for client in _client(settings, researcher):
        r = await client.post("/v1/answers", json={"question": LEDGER_QUESTION}, headers=sse)
        assert r.status_code == 200, r.text
    events = parse_sse(r.text)
    assert events[0]["event"] == "metadata" and events[-1]["event"] == "done"
    (server,) = [s for s in spans.get_finished_spans() if s.kind is SpanKind.SERVER]
    trace_id = trace.format_trace_id(_trace_id(server))
    # The client reads the trace from the stream itself (a browser's EventSource cannot
    # read response headers), and it is the request's trace, the run's spans included.
    assert events[0]["data"]["trace_id"] == trace_id == r.headers["x-trace-id"]
    agent = next(s for s in spans.get_finished_spans() if s.name == "invoke_agent waypoint")
    assert trace.format_trace_id(_trace_id(agent)) == trace_id


async def test_without_tracing_the_metadata_frame_has_no_trace_id(
    settings: ApiSettings, researcher: Researcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    import api.routers.answers

    monkeypatch.setattr(api.routers.answers, "current_trace_id", lambda: None)
    sse = {**AUTH_A, "Accept": "text/event-stream"}
    async for client in _client(settings, researcher):
        r = await client.post("/v1/answers", json={"question": LEDGER_QUESTION}, headers=sse)
    metadata = parse_sse(r.text)[0]
    assert metadata["event"] == "metadata" and "trace_id" not in metadata["data"]


def test_json_log_lines_carry_the_trace_id_of_the_current_span(
    spans: InMemorySpanExporter,
) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("waypoint.test.telemetry")
    logger.addHandler(handler)
    try:
        logger.warning("outside")
        with trace.get_tracer("test").start_as_current_span("work") as span:
            logger.warning("inside")
    finally:
        logger.removeHandler(handler)
    outside, inside = (json.loads(line) for line in out.getvalue().splitlines())
    assert outside["trace_id"] is None
    assert inside["trace_id"] == trace.format_trace_id(span.get_span_context().trace_id)


async def test_metrics_need_a_key_and_count_requests_runs_tools_tokens_and_the_queue(
    settings: ApiSettings, researcher: Researcher
) -> None:
    async for client in _client(settings, researcher):
        assert (await client.get("/metrics")).status_code == 401
        r = await client.post("/v1/answers", json={"question": LEDGER_QUESTION}, headers=AUTH_A)
        assert r.status_code == 200
        scrape = await client.get("/metrics", headers=AUTH_A)
    assert scrape.status_code == 200
    assert scrape.headers["content-type"].startswith("text/plain")
    text = scrape.text
    assert 'waypoint_http_requests_total{method="POST",route="/v1/answers",status="200"}' in text
    assert 'waypoint_http_requests_total{method="GET",route="/metrics",status="401"}' in text
    assert 'waypoint_runs_total{mode="iterative",outcome="answered"}' in text
    assert 'waypoint_tool_calls_total{outcome="ok",tool="lookup_entity"}' in text
    assert 'waypoint_llm_tokens_total{purpose="answer",type="output"}' in text
    assert 'waypoint_run_rounds_bucket{le="2.0",mode="iterative"}' in text
    assert 'waypoint_tasks{status="queued"} 0.0' in text
    assert "waypoint_task_queue_age_seconds 0.0" in text


@pytest.mark.parametrize(("mode", "status"), [("open", 200), ("off", 404)])
async def test_metrics_open_or_off(
    monkeypatch: pytest.MonkeyPatch,
    settings: ApiSettings,
    researcher: Researcher,
    mode: str,
    status: int,
) -> None:
    monkeypatch.setenv("WAYPOINT_METRICS", mode)
    async for client in _client(settings, researcher):
        assert (await client.get("/metrics")).status_code == status


_EXPORT_SCRIPT = """
import json, sys
from opentelemetry import trace
from api.telemetry import configure_tracing
on = configure_tracing()
if on:
    with trace.get_tracer("probe").start_as_current_span("probe"):
        pass
    trace.get_tracer_provider().force_flush()
print(json.dumps(on))
"""


class _Collector(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, str]]] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
        self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, self.headers["Content-Type"]))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        pass


@pytest.mark.parametrize("endpoint", [False, True])
def test_spans_go_over_otlp_http_only_when_an_endpoint_is_set(endpoint: bool) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    if endpoint:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{server.server_port}"
    _Collector.received.clear()
    try:
        out = subprocess.run(
            [sys.executable, "-c", _EXPORT_SCRIPT],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    finally:
        server.shutdown()
    assert json.loads(out.stdout.splitlines()[-1]) is endpoint
    expected = [("/v1/traces", "application/x-protobuf")] if endpoint else []
    assert _Collector.received == expected


async def test_webhook_attempts_and_deliveries_are_counted() -> None:
    answers = iter([503, 200])
    sender = CountedWebhookSender(
        timeout_s=5,
        max_attempts=3,
        backoff_initial_s=0.001,
        backoff_max_s=0.001,
        allow_private=True,
        transport=httpx.MockTransport(lambda _: httpx.Response(next(answers))),
    )
    logged: list[WebhookDelivery] = []

    def on_attempt(delivery: WebhookDelivery) -> Any:
        logged.append(delivery)
        done = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done  # awaitable, as the task store's logger is

    def count(name: str, outcome: str) -> float:
        return REGISTRY.get_sample_value(name, {"outcome": outcome}) or 0.0

    before = [
        count("waypoint_webhook_attempts_total", "refused"),
        count("waypoint_webhook_attempts_total", "delivered"),
        count("waypoint_webhook_deliveries_total", "delivered"),
    ]
    secret = "whsec_" + "A" * 32
    assert await sender.deliver("http://127.0.0.1:9/hook", secret, "msg_1", "{}", on_attempt)
    after = [
        count("waypoint_webhook_attempts_total", "refused"),
        count("waypoint_webhook_attempts_total", "delivered"),
        count("waypoint_webhook_deliveries_total", "delivered"),
    ]
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1, 1]
    assert [d.status_code for d in logged] == [503, 200]


def test_source_syncs_count_their_passages_and_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def synced(self: SourceSync, name: str, cfg: SourceConfig) -> tuple[dict[str, Any], list[str]]:
        return {"records_indexed": 5, "seconds": 0.5, "added": 1}, []

    monkeypatch.setattr(SourceSync, "_sync_blocking", synced)  # the ingest itself

    def sample(name: str) -> float:
        return REGISTRY.get_sample_value(name, {"source": "wiki"}) or 0.0

    before = sample("waypoint_ingest_passages_total"), sample("waypoint_ingest_seconds_total")
    sync = CountedSourceSync(None, None, {})  # type: ignore[arg-type]
    summary, _ = sync._sync_blocking("wiki", SourceConfig(path=tmp_path))
    assert summary["records_indexed"] == 5
    after = sample("waypoint_ingest_passages_total"), sample("waypoint_ingest_seconds_total")
    assert (after[0] - before[0], after[1] - before[1]) == (5, 0.5)


def test_queue_stats_count_waiting_work_and_date_the_oldest(tmp_path: Path) -> None:
    store = SqliteTaskStore(tmp_path / "tasks.sqlite")
    assert store.queue_stats() == {}
    first = store.create_task("ana", "k", {"question": "q"}, None)
    store.create_task("ana", "k", {"question": "q2"}, None)
    stats = store.queue_stats()
    count, oldest = stats["queued"]
    assert count == 2 and oldest == pytest.approx(first.created_at.timestamp(), abs=1e-3)
    text = render_metrics(store).decode()
    assert 'waypoint_tasks{status="queued"} 2.0' in text
    age = next(ln for ln in text.splitlines() if ln.startswith("waypoint_task_queue_age_seconds "))
    assert float(age.split()[1]) > 0
