"""Tracing and metrics of the service.

Tracing is off unless the standard OpenTelemetry variables ask for it:
``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) set and
``OTEL_SDK_DISABLED`` not true. Then spans go over OTLP/HTTP (protobuf) to that endpoint:
each HTTP request (FastAPI's own), each research run and round, each tool call and LLM
request (see :mod:`graph.telemetry`). A process that installed a tracer provider of
its own (``opentelemetry-instrument``, a test) is traced into that one.

Metrics are Prometheus counters and histograms in prometheus-client's default registry,
rendered by ``GET /metrics`` (:mod:`api.routers.metrics`), plus the task queue read from
the task store at each scrape.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any, Literal

from fastapi.telemetry import TelemetryConfig
from opentelemetry import trace
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from pydantic_settings import BaseSettings, SettingsConfigDict
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.schemas import WebhookDelivery
from api.sources import SourceConfig, SourceSync
from api.webhooks import WebhookSender
from graph.models import Caller, ResearchResult, RunOptions
from graph.telemetry import traced_run

log = logging.getLogger("waypoint.api.telemetry")


class TelemetrySettings(BaseSettings):
    """``WAYPOINT_METRICS``: who may read ``/metrics``. ``key`` (default): any API key of
    the auth file, as a Bearer token (Prometheus: ``authorization: {credentials: ...}``);
    ``open``: anyone who reaches the port (a scraper on a private network); ``off``: the
    route does not exist."""

    model_config = SettingsConfigDict(env_prefix="WAYPOINT_", extra="ignore")

    metrics: Literal["key", "open", "off"] = "key"


# -- tracing --

_configure_lock = threading.Lock()


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() == "true"


def configure_tracing() -> bool:
    """Install the OTLP tracer provider once per process if the environment asks for it.
    True when spans are recorded (by it or by a provider installed before)."""
    from opentelemetry.sdk.trace import TracerProvider

    with _configure_lock:
        if isinstance(trace.get_tracer_provider(), TracerProvider):
            return True
        wanted = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
        )
        if not wanted or _env_true("OTEL_SDK_DISABLED"):
            return False
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from api.app_version import VERSION

        # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win over these.
        resource = Resource.create({"service.name": "waypoint", "service.version": VERSION})
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
        log.info("tracing: spans exported over OTLP/HTTP", extra={"endpoint": wanted})
        return True


def http_telemetry() -> TelemetryConfig:
    """FastAPI's own OpenTelemetry support (a SERVER span per request, with the route, and
    spans of its dependencies, endpoint and serialization) records when a tracer provider
    is installed; health checks and scrapes are left out: they would drown the traces
    that matter."""
    return {"exclude": lambda scope: scope.get("path") in _UNTRACED_PATHS}


_UNTRACED_PATHS = frozenset({"/healthz", "/metrics"})


class TracedResearcher:
    """The researcher, each run and resume an ``invoke_agent`` span with its rounds, tool
    calls and LLM requests below it, and counted in the run metrics. Everything else is
    the researcher's own."""

    def __init__(self, researcher: Any) -> None:
        self._researcher = researcher

    def __getattr__(self, name: str) -> Any:
        return getattr(self._researcher, name)

    async def run(
        self, question: str, caller: Caller, options: RunOptions, **kwargs: Any
    ) -> ResearchResult:
        return await traced_run(
            lambda: self._researcher.run(question, caller, options, **kwargs),
            run_id=kwargs.get("run_id"),
            mode=options.mode,
            resumed=False,
        )

    async def resume(self, run_id: str, **kwargs: Any) -> ResearchResult:
        return await traced_run(
            lambda: self._researcher.resume(run_id, **kwargs),
            run_id=run_id,
            mode=None,
            resumed=True,
        )


# -- metrics --

HTTP_REQUESTS = Counter(
    "waypoint_http_requests_total",
    "HTTP requests by method, route template and status",
    ["method", "route", "status"],
)
HTTP_SECONDS = Histogram(
    "waypoint_http_request_seconds",
    "HTTP request latency by method and route template (a stream: until it ends)",
    ["method", "route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
)


class HttpMetrics:
    """Counts and times every HTTP request, labelled by the route's template (never the
    raw path: ids in paths would make a series per request)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets if the app raises before answering

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            HTTP_REQUESTS.labels(scope["method"], route, str(status)).inc()
            HTTP_SECONDS.labels(scope["method"], route).observe(time.perf_counter() - started)


WEBHOOK_ATTEMPTS = Counter(
    "waypoint_webhook_attempts_total",
    "Webhook POSTs by outcome: delivered (2xx), refused (another status), failed (no answer)",
    ["outcome"],
)
WEBHOOK_DELIVERIES = Counter(
    "waypoint_webhook_deliveries_total",
    "Webhooks by final outcome: delivered, or gave_up after the last attempt",
    ["outcome"],
)


class CountedWebhookSender(WebhookSender):
    """The webhook sender, each attempt and each final outcome counted."""

    async def deliver(
        self,
        url: str,
        secret: str,
        webhook_id: str,
        body: str,
        on_attempt: Any,
        first_attempt: int = 1,
    ) -> bool:
        def counted(delivery: WebhookDelivery) -> Any:
            if delivery.ok:
                WEBHOOK_ATTEMPTS.labels("delivered").inc()
            else:
                WEBHOOK_ATTEMPTS.labels("refused" if delivery.status_code else "failed").inc()
            return on_attempt(delivery)  # the store's log of the attempt, as before

        delivered = await super().deliver(url, secret, webhook_id, body, counted, first_attempt)
        WEBHOOK_DELIVERIES.labels("delivered" if delivered else "gave_up").inc()
        return delivered


INGESTED_PASSAGES = Counter(
    "waypoint_ingest_passages_total", "Passages indexed by source syncs, by source", ["source"]
)
INGEST_SECONDS = Counter(
    "waypoint_ingest_seconds_total",
    "Time source syncs spent ingesting, by source (passages per second: the rate of"
    " waypoint_ingest_passages_total over the rate of this)",
    ["source"],
)


class CountedSourceSync(SourceSync):
    """The source syncs, each one's indexed passages and time counted (by the names of
    the sources file: a bounded set)."""

    def _sync_blocking(self, name: str, cfg: SourceConfig) -> tuple[dict[str, Any], list[str]]:
        summary, failures = super()._sync_blocking(name, cfg)
        INGESTED_PASSAGES.labels(name).inc(summary.get("records_indexed") or 0)
        INGEST_SECONDS.labels(name).inc(summary.get("seconds") or 0.0)
        return summary, failures


class TaskQueueCollector(Collector):
    """The task queue as the task store holds it at scrape time: tasks by status, and the
    age of the oldest queued one (a queue that stops moving shows here first)."""

    def __init__(self, tasks: Any) -> None:
        self.tasks = tasks

    def collect(self) -> Any:
        rows = self.tasks._all(
            "SELECT status, COUNT(*) AS n, MIN(created_at) AS oldest FROM tasks"
            " WHERE status IN ('queued', 'running') GROUP BY status"
        )
        by_status = {row["status"]: row for row in rows}
        depth = GaugeMetricFamily(
            "waypoint_tasks",
            "Tasks queued or running (all processes of the store)",
            labels=["status"],
        )
        for status in ("queued", "running"):
            row = by_status.get(status)
            depth.add_metric([status], int(row["n"]) if row else 0)
        yield depth
        queued = by_status.get("queued")
        oldest = queued["oldest"] if queued else None
        yield GaugeMetricFamily(
            "waypoint_task_queue_age_seconds",
            "Age of the oldest queued task (0 when none waits)",
            value=max(0.0, time.time() - float(oldest)) if oldest is not None else 0.0,
        )


def render_metrics(tasks: Any) -> bytes:
    """The Prometheus text exposition: the process's metrics, then the task queue's."""
    queue = CollectorRegistry(auto_describe=False)
    queue.register(TaskQueueCollector(tasks))
    return generate_latest(REGISTRY) + generate_latest(queue)
