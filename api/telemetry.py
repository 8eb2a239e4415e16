"""Tracing of the service.

Off unless the standard OpenTelemetry variables ask for it:
``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) set and
``OTEL_SDK_DISABLED`` not true. Then spans go over OTLP/HTTP (protobuf) to that endpoint:
each HTTP request (FastAPI's own), each research run and round, each tool call and LLM
request (see :mod:`graph.telemetry`). A process that installed a tracer provider of
its own (``opentelemetry-instrument``, a test) is traced into that one.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi.telemetry import TelemetryConfig
from opentelemetry import trace
from opentelemetry.propagate import extract, inject
from opentelemetry.trace import Link, SpanKind

from graph.models import Caller, ResearchResult, RunOptions
from graph.telemetry import traced_run

log = logging.getLogger("waypoint.api.telemetry")

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


def current_traceparent() -> str | None:
    """The current span as a W3C ``traceparent`` (None when nothing is traced)."""
    carrier: dict[str, str] = {}
    inject(carrier)
    return carrier.get("traceparent")


@contextmanager
def task_span(task_id: str, traceparent: str | None) -> Iterator[None]:
    """A queued task's work as a trace of its own (the request that queued it ended long
    before), linked to that request's span."""
    links = []
    if traceparent:
        queued = trace.get_current_span(extract({"traceparent": traceparent}))
        if queued.get_span_context().is_valid:
            links.append(Link(queued.get_span_context()))
    tracer = trace.get_tracer("waypoint.api")
    with tracer.start_as_current_span(
        "process task",
        kind=SpanKind.CONSUMER,
        links=links,
        attributes={"waypoint.task.id": task_id},
    ):
        yield
