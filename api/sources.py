"""Configured connectors (``WAYPOINT_SOURCES_FILE``) and their asynchronous sync jobs.

The file names each source the service may sync::

    {"sources": {"wiki": {"path": "/data/wiki", "acl": ["eng"], "project": "core"}}}

A git repository's entry may name the ``ref`` to index (default ``HEAD``); its sync reads
the files changed since the commit indexed before and deletes the removed ones.

A sync runs the connector and the ingest in a worker thread (both are blocking), one job
per source at a time; the job's report lands in the task store.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from api.logging import bound
from api.schemas import SourceJob
from api.tasks.store import TaskStore

log = logging.getLogger("waypoint.api.sources")


class SourceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Path
    acl: list[str] | None = None
    project: str | None = None
    ref: str | None = None  # a git repository's branch, tag or commit


class SourcesFileError(ValueError):
    pass


def load_sources_file(path: Path | None) -> dict[str, SourceConfig]:
    if path is None:
        return {}
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        specs = raw["sources"]
        return {name: SourceConfig.model_validate(spec) for name, spec in specs.items()}
    except FileNotFoundError as exc:
        raise SourcesFileError(f"sources file {path} does not exist") from exc
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError, ValidationError) as exc:
        raise SourcesFileError(
            f'sources file {path} must be {{"sources": {{"<name>": {{"path": ...}}}}}}: {exc}'
        ) from exc


class SourceSync:
    def __init__(self, store: Any, tasks: TaskStore, configs: dict[str, SourceConfig]) -> None:
        self.store = store
        self.tasks = tasks
        self.configs = configs
        self._jobs: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()  # ingests are serialised: one writer for the index

    async def stop(self) -> None:
        for t in self._jobs:
            t.cancel()
        await asyncio.gather(*self._jobs, return_exceptions=True)

    async def submit(self, name: str, user: str) -> SourceJob:
        # The task store's calls block (SQLite, psycopg): in a thread, off the event loop.
        job = await asyncio.to_thread(self.tasks.create_source_job, name, user)
        t = asyncio.create_task(self._run(job.id, name), name=f"sync-{name}")
        self._jobs.add(t)
        t.add_done_callback(self._jobs.discard)
        return job

    async def _run(self, job_id: str, name: str) -> None:
        cfg = self.configs[name]
        with bound(task_id=job_id):
            async with self._lock:
                await asyncio.to_thread(self.tasks.update_source_job, job_id, "running")
                try:
                    report, failures = await asyncio.to_thread(self._sync_blocking, name, cfg)
                except Exception as exc:  # recorded on the job, logged with traceback
                    log.exception("source sync failed", extra={"source": name})
                    await asyncio.to_thread(
                        self.tasks.update_source_job,
                        job_id,
                        "failed",
                        error=f"{type(exc).__name__}: {exc}"[:500],
                    )
                    return
            await asyncio.to_thread(
                self.tasks.update_source_job,
                job_id,
                "succeeded",
                report=report,
                failures=failures,
            )
            log.info("source synced", extra={"source": name, **report})

    def _sync_blocking(self, name: str, cfg: SourceConfig) -> tuple[dict[str, Any], list[str]]:
        from retrieval.sync import ingest_path

        synced = ingest_path(
            self.store, Path(cfg.path), source=name, acl=cfg.acl, project=cfg.project, ref=cfg.ref
        )
        loaded, report = synced.loaded, synced.report
        failures = [f"{p}: {r}" for p, r in [*loaded.failures, *report.failed]]
        summary: dict[str, Any] = {
            "added": report.added,
            "updated": report.updated,
            "unchanged": report.unchanged,
            "deleted": report.deleted,
            "records_indexed": report.records_indexed,
            "seconds": round(report.seconds, 3),
        }
        if loaded.version:
            summary["version"] = loaded.version
        return summary, failures
