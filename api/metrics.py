"""Prometheus metrics of the service, rendered by ``GET /metrics`` (:mod:`api.routers.metrics`).

The counters and histograms live in prometheus-client's default registry: the HTTP ones
here, the runs' and LLM requests' in :mod:`graph.telemetry`, the tool calls' in
:mod:`tools.telemetry`. The task queue is read from the task store at each scrape.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from pydantic_settings import BaseSettings, SettingsConfigDict
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.schemas import WebhookDelivery
from api.sources import SourceConfig, SourceSync
from api.webhooks import WebhookSender


class MetricsSettings(BaseSettings):
    """``WAYPOINT_METRICS``: who may read ``/metrics``. ``key`` (default): any API key of
    the auth file, as a Bearer token (Prometheus: ``authorization: {credentials: ...}``);
    ``open``: anyone who reaches the port (a scraper on a private network); ``off``: the
    route does not exist."""

    model_config = SettingsConfigDict(env_prefix="WAYPOINT_", extra="ignore")

    metrics: Literal["key", "open", "off"] = "key"


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
        stats = self.tasks.queue_stats()
        depth = GaugeMetricFamily(
            "waypoint_tasks",
            "Tasks queued, running or paused for review (all processes of the store)",
            labels=["status"],
        )
        for status in ("queued", "running", "input_required"):
            depth.add_metric([status], stats.get(status, (0, None))[0])
        yield depth
        oldest = stats.get("queued", (0, None))[1]
        yield GaugeMetricFamily(
            "waypoint_task_queue_age_seconds",
            "Age of the oldest queued task (0 when none waits)",
            value=max(0.0, time.time() - oldest) if oldest is not None else 0.0,
        )


def render_metrics(tasks: Any) -> bytes:
    """The Prometheus text exposition: the process's metrics, then the task queue's."""
    queue = CollectorRegistry(auto_describe=False)
    queue.register(TaskQueueCollector(tasks))
    return generate_latest(REGISTRY) + generate_latest(queue)
