"""Load a path with its connector and index it: what `waypoint ingest` and a configured
source's sync both run.

A versioned source (a git repository) builds on what was indexed before: the catalog
keeps the commit the source is at and the settings it was loaded with; the next load
reads only the files changed since that commit, and the changed documents, the deletions
of removed files and the new commit are one catalog transaction (all or nothing).
Other sources are loaded whole, and unchanged documents cost nothing. A plain folder (or
a zip) loaded again under the source it was last synced from stands for all of that
source: the documents whose files were removed from it are deleted with the last batch
(one catalog transaction), and the report counts them. Files met but not read this time
(a failure, a size cap) keep their documents; another folder or a single file loaded
under the same source name deletes nothing.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from retrieval.catalog import SourceVersion
from retrieval.connectors import (
    ConnectorResult,
    ConnectorSettings,
    default_source,
    detect_kind,
    load_path,
)
from retrieval.store import IngestReport, ProgressFn, Store


@dataclass
class SyncResult:
    loaded: ConnectorResult
    report: IngestReport


def ingest_path(
    store: Store,
    path: Path,
    *,
    source: str | None = None,
    acl: list[str] | None = None,
    project: str | None = None,
    ref: str | None = None,
    progress: ProgressFn | None = None,
) -> SyncResult:
    """Load ``path`` and index what it holds (see the module docstring). Raises what
    :func:`~retrieval.connectors.load_path` raises for a bad argument."""
    root = Path(path)
    origin = str(root.resolve())
    since: str | None = None
    config = ""
    if root.exists() and detect_kind(root) == "git":
        name = source or default_source(root)
        config = _load_config(acl, project, ref, store)
        indexed = store.catalog.source_version(name)
        if indexed is not None and indexed.config == config:
            since = indexed.version
    loaded = load_path(root, source=source, acl=acl, project=project, ref=ref, since=since)
    if loaded.version is None:
        report = store.ingest(
            loaded.records,
            progress=progress,
            project=project,
            origin=origin,
            delete_docs=_removed_files(store, loaded, origin),
        )
        return SyncResult(loaded, report)
    emitted = {r.doc_id for r in loaded.records}
    present = store.catalog.document_ids(loaded.source, loaded.touched)
    gone = [d for d in present if d not in emitted]
    report = store.ingest(
        loaded.records,
        progress=progress,
        project=project,
        origin=origin,
        delete_docs=gone,
        version=SourceVersion(loaded.source, loaded.version, config),
        # A diff is written as one batch; a whole tree (a first ingest) in batches, its
        # deletions and commit with the last one (killed midway, the next load reads it
        # again from the commit indexed before).
        atomic=loaded.touched is not None,
    )
    return SyncResult(loaded, report)


def _removed_files(store: Store, loaded: ConnectorResult, origin: str) -> list[str]:
    """Documents of a folder's source whose files are gone from it (see the module
    docstring); none unless the source was last synced from this same folder."""
    if loaded.found is None:
        return []
    info = next((s for s in store.catalog.sources() if s.name == loaded.source), None)
    if info is None or info.origin != origin:
        return []
    emitted = {r.doc_id for r in loaded.records}
    return loaded.found.removed(store.catalog.document_ids(loaded.source), emitted)


def _load_config(acl: list[str] | None, project: str | None, ref: str | None, store: Store) -> str:
    """What a load's records depend on besides the files: a later load with another
    value must read every file again (a new ACL reaches unchanged files too)."""
    settings = store.settings
    basis = {
        "acl": sorted(acl or []),
        "project": project,
        "ref": ref or "HEAD",
        "chunk_tokens": settings.chunk_tokens,
        "chunk_overlap_tokens": settings.chunk_overlap_tokens,
        "max_file_bytes": settings.max_file_bytes,
        "git_max_file_bytes": ConnectorSettings().git_max_file_bytes,
    }
    return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()[:16]
