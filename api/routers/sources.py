"""Sources: what the index holds, what can be synced, and asynchronous sync jobs."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from api.deps import PrincipalDep, ServicesDep, SyncerDep
from api.errors import ApiError, error_responses, not_found
from api.schemas import SourceJob, SourceList, SourceView

router = APIRouter(prefix="/v1/sources", tags=["sources"])


@router.get(
    "", response_model=SourceList, operation_id="list_sources", responses=error_responses(401)
)
def list_sources(principal: PrincipalDep, services: ServicesDep) -> SourceList:
    """What the index holds. A key that may sync (``sync_sources``) sees every source, its
    origin, projects and last sync, and every configured connector. Any other key sees only
    the sources holding a document its groups may read, by name and counted over those
    documents: the rest describes documents and connectors the key may not read."""
    operator = principal.sync_sources
    flt = None if operator else services.store.filter_for(principal.groups)
    indexed: dict[str, dict[str, Any]] = {}
    for info in services.store.sources(flt):
        data = asdict(info) if is_dataclass(info) and not isinstance(info, type) else dict(info)
        if not operator:
            data = {k: data[k] for k in _READER_FIELDS}
        indexed[data["name"]] = data
    configs = services.sources.configs
    if not operator:
        return SourceList(
            items=[SourceView(name=n, configured=None, indexed=indexed[n]) for n in sorted(indexed)]
        )
    return SourceList(
        items=[
            SourceView(name=n, configured=n in configs, indexed=indexed.get(n))
            for n in sorted({*indexed, *configs})
        ]
    )


_READER_FIELDS = ("name", "documents", "records")  # what a key that may not sync sees


@router.post(
    "/{name}/sync",
    status_code=202,
    response_model=SourceJob,
    operation_id="sync_source",
    responses=error_responses(401, 403, 404, 409),
)
async def sync_source(name: str, principal: SyncerDep, services: ServicesDep) -> SourceJob:
    """Start a sync of a configured connector (keys with ``sync_sources`` only); poll the
    job for its report."""
    if name not in services.sources.configs:
        raise not_found("configured source")
    running = await run_in_threadpool(services.tasks.active_source_job, name)
    if running is not None:
        raise ApiError(409, "sync_in_progress", f"source {name} is already syncing (job {running})")
    return await services.sources.submit(name, principal.user)


@router.get(
    "/jobs/{job_id}",
    response_model=SourceJob,
    operation_id="get_source_job",
    responses=error_responses(401, 403, 404),
)
def get_source_job(job_id: str, principal: SyncerDep, services: ServicesDep) -> SourceJob:
    """A sync job and its report (file names, failures): for keys that may sync."""
    job = services.tasks.get_source_job(job_id)
    if job is None:
        raise not_found("job")
    return job
