"""`waypoint serve` with an OTLP endpoint: one answer reaches a collector as one trace
(request, run, rounds, tool calls), its log lines and its run's trace events carry that
trace id, and /metrics counts it."""

from __future__ import annotations

import http.server as http_server
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.e2e.conftest import ANA, Server

pytestmark = pytest.mark.e2e


class _Collector(http_server.BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: keeps (trace id, span name, parent span id, span id)."""

    spans: ClassVar[list[tuple[str, str, str, str]]] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    ids = (span.trace_id.hex(), span.parent_span_id.hex(), span.span_id.hex())
                    self.spans.append((ids[0], span.name, ids[1], ids[2]))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    _Collector.spans = []
    httpd = http_server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()


def test_an_answer_is_one_exported_trace_and_is_counted(
    built_index: Path, tmp_path: Path, collector: str
) -> None:
    home = tmp_path / "home"
    shutil.copytree(built_index, home)
    srv = Server(
        home,
        tmp_path,
        OTEL_EXPORTER_OTLP_ENDPOINT=collector,
        OTEL_BSP_SCHEDULE_DELAY="100",  # ms: export promptly
    ).start()
    try:
        with srv.client() as http:
            r = http.post("/v1/answers", json={"question": "Who owns Fraud Gate?"}, headers=ANA)
            assert r.status_code == 200, r.text
            request_id = r.headers["x-request-id"]
            run_trace = http.get(f"/v1/runs/{r.json()['run_id']}/trace", headers=ANA).json()
            metrics = http.get("/metrics", headers=ANA).text
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
            name == "POST /v1/answers" for _, name, _, _ in _Collector.spans
        ):
            time.sleep(0.2)
    finally:
        srv.stop()
    spans = list(_Collector.spans)
    request = next(s for s in spans if s[1] == "POST /v1/answers")
    trace = [s for s in spans if s[0] == request[0]]
    names = {s[1] for s in trace}
    assert {"invoke_agent waypoint", "round", "execute_tool search_knowledge"} <= names
    by_id = {s[3]: s for s in trace}
    agent = next(s for s in trace if s[1] == "invoke_agent waypoint")
    parent = agent
    while parent[2] in by_id:
        parent = by_id[parent[2]]
    assert parent == request  # the run hangs under the HTTP request

    metadata = run_trace["events"][0]
    assert metadata["type"] == "metadata" and metadata["data"]["trace_id"] == request[0]

    lines = [line for line in srv.log_lines() if line.get("request_id") == request_id]
    assert lines and {line.get("trace_id") for line in lines} == {request[0]}

    assert 'waypoint_http_requests_total{method="POST",route="/v1/answers",status="200"}' in (
        metrics
    )
    assert 'waypoint_runs_total{mode="iterative",outcome=' in metrics
