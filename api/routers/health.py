"""Liveness and readiness: the only endpoint that needs no key."""

from __future__ import annotations

import sqlite3
from typing import Literal

from fastapi import APIRouter

from api.app_version import VERSION
from api.deps import ServicesDep
from api.schemas import Health

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, operation_id="health")
def health(services: ServicesDep) -> Health:
    checks: dict[str, str] = {}
    status: Literal["ok", "degraded"] = "ok"
    try:
        services.tasks.count_active("-")
        checks["tasks"] = "ok"
    except sqlite3.Error as exc:  # reported as degraded: health must answer
        checks["tasks"] = f"error: {type(exc).__name__}"
        status = "degraded"
    # No corpus facts here (record counts, sources): this endpoint needs no key, and the
    # index's size counts records that no caller, or only some, may read.
    rerank = getattr(getattr(services.store, "settings", None), "rerank_model", None)
    checks["rerank"] = "configured" if rerank else "skipped (no WAYPOINT_RERANK_MODEL)"
    return Health(status=status, version=VERSION, checks=checks)
