"""The FastAPI application: middleware, error handlers, routers and the service lifespan."""

from __future__ import annotations

import asyncio
import gc
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.app_version import VERSION
from api.auth import KeyRing, RateLimiter
from api.deps import Services
from api.errors import error_response, install_error_handlers
from api.logging import request_id_var
from api.metrics import CountedSourceSync, CountedWebhookSender, HttpMetrics, MetricsSettings
from api.openapi import install_openapi
from api.routers.metrics import metrics_router
from api.settings import ApiSettings
from api.sources import load_sources_file
from api.startup_checks import (
    HomeError,
    fatal_line,
    handed_over_findings,
    home_findings,
    open_store_explained,
    release_home,
    take_over,
)
from api.tasks.store import TaskStore
from api.tasks.workers import ChangeFeed, WorkerPool
from api.telemetry import TracedResearcher, configure_tracing, http_telemetry
from retrieval.engines.base import is_engine_panic
from retrieval.health import Finding
from tools.telemetry import current_trace_id

log = logging.getLogger("waypoint.api")


class RequestContextMiddleware:
    """Request id (from ``X-Request-ID`` or new) bound for logging, and the body size cap.

    The body is read up front, bounded, and replayed to the app: a client cannot make
    the service buffer more than ``max_body_bytes``, chunked or not.
    """

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        rid = headers.get("x-request-id", "")[:64] or uuid.uuid4().hex[:16]
        token = request_id_var.set(rid)
        try:
            declared = headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
                await self._too_big()(scope, _drain(receive), send)
                return
            body, more = b"", True
            if scope["method"] in ("POST", "PUT", "PATCH"):
                while more:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return
                    body += message.get("body", b"")
                    more = message.get("more_body", False)
                    if len(body) > self.max_body_bytes:
                        await self._too_big()(scope, receive, send)
                        return
                receive = _replay(body, receive)

            trace_id = current_trace_id()  # the request's trace, when tracing is on

            async def send_with_id(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message.setdefault("headers", [])
                    message["headers"] = [*message["headers"], (b"x-request-id", rid.encode())]
                    if trace_id is not None:
                        message["headers"].append((b"x-trace-id", trace_id.encode()))
                await send(message)

            await self.app(scope, receive, send_with_id)
        finally:
            request_id_var.reset(token)

    def _too_big(self) -> ASGIApp:
        return error_response(
            413,
            "payload_too_large",
            f"request body exceeds {self.max_body_bytes} bytes",
            field="body",
        )


class NativeErrorGuard:
    """A JSON 500 for what escapes every exception handler: a panic in a Rust binding.

    pyo3 raises a panic as ``PanicException``, a BaseException: FastAPI's handlers and
    Starlette's error middleware catch Exception only, so the server answered such a
    request with a plain-text 500 (a search with a recall depth of 2^62 did). Cancellation
    and interpreter exit pass through untouched.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except BaseException as exc:
            if not is_engine_panic(exc):
                raise
            log.error("engine panic", exc_info=exc)
            if started:
                return  # mid-response (a stream): the connection ends, the log says why
            response = error_response(
                500, "engine_error", "an engine failed on this request; see the server log"
            )
            await response(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: wait for the disconnect

    return replay


def _drain(receive: Receive) -> Receive:
    async def empty() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    return empty


ServicesFactory = Callable[[ApiSettings], Awaitable[Services]]


async def build_services(settings: ApiSettings, store: Any = None) -> Services:
    """The real wiring: embedded store, researcher with its checkpointer, task store.

    ``store``: one already opened (``waypoint serve`` opens it before the server starts,
    so that a store that does not open is one line, not a traceback from the lifespan)."""
    handed = take_over(settings.home) if store is None else None
    if handed is not None:
        store = handed[0]
    from graph.runner import Researcher

    keys = KeyRing.from_file(settings.auth_file)
    if not len(keys):
        log.warning("no API keys configured (WAYPOINT_AUTH_FILE): every request will get 401")
    tasks = TaskStore.open(settings.resolved_tasks_url())
    settings.home.mkdir(parents=True, exist_ok=True)
    # The start-up checks ran in the lifespan; an engine error (a lock held by another
    # process, a store that does not open) is one line naming the file.
    if store is None:
        store = open_store_explained(settings.home, command="serve")
    researcher = Researcher(store, checkpointer_path=settings.checkpoint_path)
    return assemble(settings, keys, store, researcher, tasks)


def assemble(
    settings: ApiSettings, keys: KeyRing, store: Any, researcher: Any, tasks: TaskStore
) -> Services:
    researcher = TracedResearcher(researcher)  # runs as spans and in the run metrics
    feed = ChangeFeed()
    sender = CountedWebhookSender(
        timeout_s=settings.webhook_timeout_s,
        max_attempts=settings.webhook_max_attempts,
        backoff_initial_s=settings.webhook_backoff_initial_s,
        backoff_max_s=settings.webhook_backoff_max_s,
        allow_private=settings.webhook_allow_private,
    )
    pool = WorkerPool(
        tasks,
        researcher,
        sender,
        keys,
        settings.task_workers,
        feed,
        settings.task_lease_s,
        retention_s=settings.retention_days * 86_400,
    )
    sources = CountedSourceSync(store, tasks, load_sources_file(settings.sources_file))
    return Services(
        settings=settings,
        keys=keys,
        limiter=RateLimiter(settings.rate_limit_per_minute, settings.rate_limit_burst),
        store=store,
        researcher=researcher,
        tasks=tasks,
        pool=pool,
        feed=feed,
        sources=sources,
        answer_slots=asyncio.Semaphore(settings.max_concurrent_answers),
    )


def create_app(
    settings: ApiSettings | None = None,
    services_factory: ServicesFactory | None = None,
    start_up_findings: list[Finding] | None = None,
) -> FastAPI:
    """``start_up_findings``: the home's checks, when the caller ran them already (before
    opening the store, which creates what is missing: ``waypoint serve`` hands them over
    with its store); else the lifespan runs them."""
    settings = settings or ApiSettings()
    if start_up_findings is None:
        start_up_findings = handed_over_findings(settings.home)
    factory = services_factory or build_services

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Each store of the home, before anything opens (and so creates) one: a damaged
        # home refuses to start with one line naming the file; a missing leg starts, and
        # /healthz reports it (503).
        findings = start_up_findings
        if findings is None:
            findings = await asyncio.to_thread(home_findings, settings.home, None, settings)
        fatal = fatal_line(findings)
        if fatal is not None:
            raise HomeError(fatal)
        app.state.degraded = [f for f in findings if not f.fatal]
        for finding in app.state.degraded:
            log.warning("degraded: %s", finding.line())
        services = await factory(settings)
        await _warm_up(services.store)
        if settings.gc_freeze:
            _freeze_start_up_heap()
        await services.pool.start()
        app.state.services = services
        log.info("service ready", extra={"home": str(settings.home)})
        try:
            yield
        finally:
            await services.sources.stop()
            await services.pool.stop()
            close = getattr(services.researcher, "aclose", None) or getattr(
                services.researcher, "close", None
            )
            if callable(close):
                result = close()
                if hasattr(result, "__await__"):
                    await result
            if hasattr(services.store, "close"):
                services.store.close()
            release_home(settings.home)
            services.tasks.close()

    app = FastAPI(
        title="Waypoint",
        version=VERSION,
        description="Agentic research over your organisation's knowledge, with cited answers.",
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
        telemetry=http_telemetry(),
    )
    install_error_handlers(app)
    install_openapi(app, settings)
    from api.routers import answers, health, runs, search, sources, tasks, ui

    for module in (health, answers, tasks, runs, search, sources, ui):
        app.include_router(module.router)
    # Added first, so it runs inside the request context (its 500 carries the request id).
    app.add_middleware(NativeErrorGuard)
    app.add_middleware(RequestContextMiddleware, max_body_bytes=settings.max_body_bytes)
    scrape = metrics_router(MetricsSettings())
    if scrape is not None:
        app.include_router(scrape)
    app.add_middleware(HttpMetrics)  # outermost of ours: a refused request is counted too
    configure_tracing()  # the OTLP exporter, when OTEL_EXPORTER_OTLP_ENDPOINT asks for it
    return app


async def _warm_up(store: Any) -> None:
    """The embedding model and query encoder loaded before the first request, not during
    it. A failure is logged and start-up goes on: searches then report the same error."""
    from retrieval.pipeline import warm_up

    try:
        took = await warm_up(store)
    except Exception as exc:  # noqa: BLE001 - logged; each search reports it again
        log.warning("embedding warm-up failed: %s: %s", type(exc).__name__, exc)
        return
    if took is not None:
        log.info("embedding model warmed up", extra={"seconds": round(took, 3)})


def _freeze_start_up_heap() -> None:
    """Move what start-up loaded out of the garbage collector's full passes.

    A full collection walks every tracked object, and the models, tokenizer and index
    handles are ~550k of them: ~450 ms, every few hundred answers, with no request served
    meanwhile (measured on MuSiQue: one such pass per ~160 research runs). Frozen (the
    permanent generation), they are skipped: ~6 ms a pass. Start-up garbage is collected
    first; what is frozen stays until the process ends, which is what start-up state does.
    """
    gc.collect()
    gc.freeze()
    log.info("start-up heap frozen", extra={"objects": gc.get_freeze_count()})


def _operation_id(route: APIRoute) -> str:
    # Stable, readable operation ids (clients generated from /openapi.json keep them).
    return route.name
