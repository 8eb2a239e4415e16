"""Liveness and readiness: the only endpoint that needs no key."""

from __future__ import annotations

import logging
from typing import Literal

from fastapi import APIRouter, Request, Response

from api.app_version import VERSION
from api.deps import ServicesDep
from api.schemas import Health
from api.startup_checks import degraded_checks

log = logging.getLogger("waypoint.api.health")
router = APIRouter(tags=["health"])


@router.get(
    "/healthz",
    response_model=Health,
    operation_id="health",
    responses={
        503: {
            "model": Health,
            "description": "Degraded: a store is missing or failing (not ready to serve)",
        }
    },
)
def health(services: ServicesDep, request: Request, response: Response) -> Health:
    checks: dict[str, str] = {}
    status: Literal["ok", "degraded"] = "ok"
    # What the start-up checks found missing (a leg that would answer nothing).
    degraded = degraded_checks(getattr(request.app.state, "degraded", []))
    if degraded:
        checks.update(degraded)
        status = "degraded"
    try:
        services.tasks.count_active("-")
        checks["tasks"] = "ok"
    except Exception as exc:  # noqa: BLE001 - any driver's error (SQLite, psycopg): health must answer
        # The error's words stay in the log: this endpoint needs no key.
        log.warning("health: the task store failed", exc_info=exc)
        checks["tasks"] = f"error: {type(exc).__name__}"
        status = "degraded"
    # No corpus facts here (record counts, sources): this endpoint needs no key, and the
    # index's size counts records that no caller, or only some, may read.
    rerank = getattr(getattr(services.store, "settings", None), "rerank_model", None)
    checks["rerank"] = "configured" if rerank else "skipped (no WAYPOINT_RERANK_MODEL)"
    if status != "ok":
        response.status_code = 503  # readiness: a balancer sends no traffic here
    return Health(status=status, version=VERSION, checks=checks)
