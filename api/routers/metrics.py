"""``GET /metrics``: Prometheus text exposition (``WAYPOINT_METRICS``: key, open or off).

Not in the OpenAPI document: it is for scrapers, not API clients. A plain ``def``: FastAPI
runs it in a worker thread, so the task store's count never holds the event loop.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response
from prometheus_client import CONTENT_TYPE_LATEST

from api.deps import ServicesDep, require_principal
from api.metrics import MetricsSettings, render_metrics


def metrics_router(settings: MetricsSettings) -> APIRouter | None:
    """The route as the setting wants it: behind an API key, open, or absent (None)."""
    if settings.metrics == "off":
        return None
    guard = [Depends(require_principal)] if settings.metrics == "key" else []
    router = APIRouter(tags=["operations"], include_in_schema=False, dependencies=guard)

    @router.get("/metrics", operation_id="metrics")
    def metrics(services: ServicesDep) -> Response:
        return Response(render_metrics(services.tasks), media_type=CONTENT_TYPE_LATEST)

    return router
