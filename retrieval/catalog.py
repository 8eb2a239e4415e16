"""The catalog: SQLite record of every document and chunk the engines hold.

It is the source of truth for change detection (content hashes), by-id reads with an
exact ACL check, neighbour lookups, title lookups, sources, projects, and the index
generation (which embedding model built the dense index).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from retrieval.records import Meta, Record
from retrieval.structure import Structure, document_structure

_CONTENT_VERSION = "content_version"
# The doc_names / doc_links tables' layout and extraction rules: a catalog written under
# another version (or before they existed) has them rebuilt from its stored chunks.
_STRUCTURE_VERSION = "structure_version"
STRUCTURE_VERSION = "3"
_SCHEMA = """
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    content_hash TEXT NOT NULL,
    source_version TEXT,
    acl TEXT NOT NULL,
    entities TEXT NOT NULL DEFAULT '[]',
    timestamp TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_source ON documents(source);
CREATE INDEX IF NOT EXISTS documents_title ON documents(lower(title));
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL,
    chunk_index INTEGER NOT NULL,
    record TEXT NOT NULL,
    vector BLOB
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, chunk_index);
CREATE TABLE IF NOT EXISTS sources (
    name TEXT PRIMARY KEY,
    last_sync TEXT,
    origin TEXT
);
CREATE TABLE IF NOT EXISTS projects (
    name TEXT NOT NULL,
    source TEXT NOT NULL,
    PRIMARY KEY (name, source)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS doc_names (
    doc_id TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    PRIMARY KEY (doc_id, name, kind)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS doc_names_name ON doc_names(name);
-- Chunk ids an ingest or delete is writing into the engines: committed before the first
-- engine write, cleared in the catalog transaction that makes the batch visible. Left
-- behind by a killed process, they name exactly what to repair at open.
CREATE TABLE IF NOT EXISTS pending (id TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS doc_links (
    doc_id TEXT NOT NULL,
    target TEXT NOT NULL,
    kind TEXT NOT NULL,
    PRIMARY KEY (doc_id, target, kind)
) WITHOUT ROWID;
"""


@dataclass
class DocumentRow:
    doc_id: str
    source: str
    title: str
    content_hash: str
    acl: list[str]
    entities: list[str]
    timestamp: datetime
    chunk_count: int


@dataclass
class SourceInfo:
    name: str
    documents: int
    records: int
    last_sync: str | None
    origin: str | None
    projects: list[str]
    # What the source's content is of, when the source has versions: a git commit.
    version: str | None = None


@dataclass(frozen=True)
class SourceVersion:
    """The version a source was indexed at (a commit) and the settings it was loaded with
    (a later load with other settings cannot build on it)."""

    source: str
    version: str
    config: str = ""


@dataclass
class Batch:
    """What one catalog transaction makes visible: documents replaced and deleted, and
    the sources (and project, origin, version) they belong to."""

    docs: Sequence[Sequence[Record]] = ()
    vectors: dict[str, bytes | None] = field(default_factory=dict)
    delete_docs: Sequence[str] = ()
    sources: Sequence[str] = ()
    project: str | None = None
    origin: str | None = None
    version: SourceVersion | None = None


class Catalog:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # One connection shared across threads (the pipeline runs legs in threads);
        # a lock serialises access, SQLite WAL keeps other processes' readers unblocked.
        self._conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self._lock = threading.RLock()
        with self._lock:
            self._conn.executescript(_SCHEMA)
            self._add_columns("sources", {"version": "TEXT", "config": "TEXT"})
            if self.get_meta(_STRUCTURE_VERSION) != STRUCTURE_VERSION:
                self._rebuild_structure()

    def _add_columns(self, table: str, columns: dict[str, str]) -> None:
        """Columns added since a catalog was created (SQLite has no ADD COLUMN IF NOT
        EXISTS)."""
        have = {row[1] for row in self._conn.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns.items():
            if name not in have:
                with self._conn:
                    self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")

    def _rebuild_structure(self) -> None:
        """Names and links of every stored document, from its chunks (a catalog from
        before the tables, or from another extraction version), in one transaction."""
        with self._lock, self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            if self.get_meta(_STRUCTURE_VERSION) == STRUCTURE_VERSION:
                return  # another process rebuilt it while this one waited
            self._conn.execute("DELETE FROM doc_names")
            self._conn.execute("DELETE FROM doc_links")
            doc_ids = [r[0] for r in self._conn.execute("SELECT doc_id FROM documents")]
            for doc_id in doc_ids:
                rows = self._conn.execute(
                    "SELECT record FROM chunks WHERE doc_id=? ORDER BY chunk_index", (doc_id,)
                ).fetchall()
                records = [Record.model_validate_json(r[0]) for r in rows]
                self._write_structure(doc_id, document_structure(records))
            self._set_meta(_STRUCTURE_VERSION, STRUCTURE_VERSION)
            if doc_ids:
                self._bump_content_version()

    def _write_structure(self, doc_id: str, structure: Structure) -> None:
        self._conn.execute("DELETE FROM doc_names WHERE doc_id=?", (doc_id,))
        self._conn.execute("DELETE FROM doc_links WHERE doc_id=?", (doc_id,))
        self._conn.executemany(
            "INSERT OR IGNORE INTO doc_names(doc_id, name, kind) VALUES(?,?,?)",
            [(doc_id, name, kind) for name, kind in structure.names],
        )
        self._conn.executemany(
            "INSERT OR IGNORE INTO doc_links(doc_id, target, kind) VALUES(?,?,?)",
            [(doc_id, target, kind) for target, kind in structure.links],
        )

    def structure(self) -> tuple[list[str], list[tuple[str, str, str]], list[tuple[str, str, str]]]:
        """Every document id, (doc_id, name, kind) and (doc_id, target, kind), read in one
        transaction (a consistent snapshot)."""
        with self._lock, self._conn:
            self._conn.execute("BEGIN")
            docs = [r[0] for r in self._conn.execute("SELECT doc_id FROM documents")]
            names = self._conn.execute("SELECT doc_id, name, kind FROM doc_names").fetchall()
            links = self._conn.execute("SELECT doc_id, target, kind FROM doc_links").fetchall()
        return docs, names, links

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def idle(self) -> bool:
        """No other thread is inside the catalog right now (a read would not wait)."""
        if not self._lock.acquire(blocking=False):
            return False
        self._lock.release()
        return True

    # ---- meta -------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._lock, self._conn:
            self._set_meta(key, value)

    def _set_meta(self, key: str, value: str) -> None:
        self._conn.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (key, value),
        )

    def switch_generation(self, generation: str, model: str, model_version: str) -> None:
        """Point at another dense generation and its model in one transaction."""
        with self._lock, self._conn:
            self._set_meta("generation", generation)
            self._set_meta("embedding_model", model)
            self._set_meta("embedding_version", model_version)

    def content_version(self) -> int:
        """A counter every change of documents bumps (in the change's own transaction),
        so a cache keyed on it is stale exactly when some process changed the content."""
        value = self.get_meta(_CONTENT_VERSION)
        return int(value) if value is not None else 0

    def _bump_content_version(self) -> None:
        self._conn.execute(
            "INSERT INTO meta(key, value) VALUES(?, '1') "
            "ON CONFLICT(key) DO UPDATE SET value=CAST(value AS INTEGER) + 1",
            (_CONTENT_VERSION,),
        )

    # ---- documents --------------------------------------------------------------------
    def document(self, doc_id: str) -> DocumentRow | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT doc_id, source, title, content_hash, acl, entities, timestamp, "
                "chunk_count FROM documents WHERE doc_id=?",
                (doc_id,),
            ).fetchone()
        return _doc_row(row) if row else None

    def documents(self, source: str | None = None) -> list[DocumentRow]:
        sql = (
            "SELECT doc_id, source, title, content_hash, acl, entities, timestamp, chunk_count "
            "FROM documents"
        )
        args: tuple = ()
        if source is not None:
            sql += " WHERE source=?"
            args = (source,)
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return [_doc_row(r) for r in rows]

    def chunk_ids(self, doc_id: str) -> list[str]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT id FROM chunks WHERE doc_id=? ORDER BY chunk_index", (doc_id,)
            ).fetchall()
        return [r[0] for r in rows]

    def replace_documents(
        self, docs: Sequence[Sequence[Record]], vectors: dict[str, bytes | None]
    ) -> None:
        """Replace several documents' rows (each a list of one doc's chunks) in one
        transaction: a batch is visible in the catalog all at once."""
        self.commit_batch(Batch(docs=docs, vectors=vectors))

    # ---- batches: what makes engine writes visible -------------------------------------
    def begin_batch(self, ids: Iterable[str]) -> None:
        """Mark chunk ids as being written into the engines (committed before the first
        engine write)."""
        with self._lock, self._conn:
            self._conn.executemany(
                "INSERT OR IGNORE INTO pending(id) VALUES(?)", [(i,) for i in ids]
            )

    def commit_batch(self, batch: Batch, pending: Iterable[str] = ()) -> None:
        """One transaction: the batch's documents replaced and deleted, its sources'
        sync time, project membership and version, and its ``pending`` marks cleared."""
        now = datetime.now(UTC).isoformat()
        with self._lock, self._conn:
            for records in batch.docs:
                self._replace_one(records, batch.vectors, now)
            for doc_id in batch.delete_docs:
                self._delete_one(doc_id)
            for source in batch.sources:
                self._touch_source(source, batch.origin)
                if batch.project:
                    self._add_to_project(batch.project, source)
            if batch.version is not None:
                v = batch.version
                self._touch_source(v.source, batch.origin)
                self._conn.execute(
                    "UPDATE sources SET version=?, config=? WHERE name=?",
                    (v.version, v.config, v.source),
                )
            self._conn.executemany("DELETE FROM pending WHERE id=?", [(i,) for i in pending])
            if batch.docs or batch.delete_docs:
                self._bump_content_version()

    def pending_ids(self) -> list[str]:
        """Chunk ids of a batch that never committed (its process was killed)."""
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT id FROM pending")]

    def clear_pending(self, ids: Iterable[str]) -> None:
        with self._lock, self._conn:
            self._conn.executemany("DELETE FROM pending WHERE id=?", [(i,) for i in ids])

    def source_version(self, source: str) -> SourceVersion | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT version, config FROM sources WHERE name=?", (source,)
            ).fetchone()
        if row is None or row[0] is None:
            return None
        return SourceVersion(source, row[0], row[1] or "")

    def document_ids(self, source: str, paths: Iterable[str] | None = None) -> list[str]:
        """Ids of ``source``'s documents; with ``paths``, of the documents read from those
        files (``<source>:<path>`` and a workbook's sheets ``<source>:<path>/<sheet>``)."""
        with self._lock:
            if paths is None:
                rows = self._conn.execute(
                    "SELECT doc_id FROM documents WHERE source=?", (source,)
                ).fetchall()
                return [r[0] for r in rows]
            out: list[str] = []
            for path in paths:
                doc_id = f"{source}:{path}"
                rows = self._conn.execute(
                    "SELECT doc_id FROM documents WHERE source=? AND (doc_id=? OR "
                    "substr(doc_id, 1, ?)=?)",
                    (source, doc_id, len(doc_id) + 1, doc_id + "/"),
                ).fetchall()
                out += [r[0] for r in rows]
            return out

    def _replace_one(
        self, records: Sequence[Record], vectors: dict[str, bytes | None], now: str
    ) -> None:
        first = records[0]
        md = first.metadata
        self._conn.execute("DELETE FROM chunks WHERE doc_id=?", (first.doc_id,))
        self._conn.executemany(
            "INSERT INTO chunks(id, doc_id, chunk_index, record, vector) VALUES(?,?,?,?,?)",
            [
                (r.id, r.doc_id, r.chunk_index, r.model_dump_json(), vectors.get(r.id))
                for r in records
            ],
        )
        self._conn.execute(
            "INSERT INTO documents(doc_id, source, title, content_hash, source_version, acl,"
            " entities, timestamp, chunk_count, updated_at) VALUES(?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT(doc_id) DO UPDATE SET source=excluded.source, title=excluded.title,"
            " content_hash=excluded.content_hash, source_version=excluded.source_version,"
            " acl=excluded.acl, entities=excluded.entities, timestamp=excluded.timestamp,"
            " chunk_count=excluded.chunk_count, updated_at=excluded.updated_at",
            (
                first.doc_id,
                first.source,
                first.title,
                str(md.get(Meta.CONTENT_HASH, "")),
                str(md.get(Meta.SOURCE_VERSION, "")),
                json.dumps(first.acl),
                json.dumps(_entities(records)),
                max(r.timestamp for r in records).isoformat(),
                len(records),
                now,
            ),
        )
        self._write_structure(first.doc_id, document_structure(records))

    def delete_document(self, doc_id: str) -> None:
        with self._lock, self._conn:
            self._delete_one(doc_id)
            self._bump_content_version()

    def _delete_one(self, doc_id: str) -> None:
        for table in ("chunks", "documents", "doc_names", "doc_links"):
            self._conn.execute(f"DELETE FROM {table} WHERE doc_id=?", (doc_id,))

    def delete_source(self, source: str) -> None:
        with self._lock, self._conn:
            for table in ("chunks", "doc_names", "doc_links"):
                self._conn.execute(
                    f"DELETE FROM {table} WHERE doc_id IN "
                    "(SELECT doc_id FROM documents WHERE source=?)",
                    (source,),
                )
            self._conn.execute("DELETE FROM documents WHERE source=?", (source,))
            self._conn.execute("DELETE FROM sources WHERE name=?", (source,))
            self._conn.execute("DELETE FROM projects WHERE source=?", (source,))
            self._bump_content_version()

    # ---- chunks -----------------------------------------------------------------------
    def records(self, ids: Iterable[str]) -> list[Record]:
        ids = list(ids)
        found = self.stored_chunks(ids)
        return [found[i][0] for i in ids if i in found]

    def stored_chunks(self, ids: Sequence[str]) -> dict[str, tuple[Record, bytes | None]]:
        """Current record and vector per chunk id (for embedding reuse on re-ingest)."""
        out: dict[str, tuple[Record, bytes | None]] = {}
        ids = list(ids)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            with self._lock:
                rows = self._conn.execute(
                    f"SELECT id, record, vector FROM chunks WHERE id IN ({marks})", part
                ).fetchall()
            for cid, raw, vec in rows:
                out[cid] = (Record.model_validate_json(raw), vec)
        return out

    def doc_records(
        self, doc_id: str, first: int | None = None, last: int | None = None
    ) -> list[Record]:
        """A document's chunks in order; only those with ``first <= chunk_index <= last``
        when bounds are given (neighbours read a few chunks, not the whole document)."""
        sql = "SELECT record FROM chunks WHERE doc_id=?"
        args: list[object] = [doc_id]
        if first is not None:
            sql += " AND chunk_index >= ?"
            args.append(first)
        if last is not None:
            sql += " AND chunk_index <= ?"
            args.append(last)
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY chunk_index", args).fetchall()
        return [Record.model_validate_json(r[0]) for r in rows]

    def iter_chunks(self, batch: int = 512) -> Iterable[tuple[Record, bytes | None]]:
        last = ""
        while True:
            with self._lock:
                rows = self._conn.execute(
                    "SELECT id, record, vector FROM chunks WHERE id > ? ORDER BY id LIMIT ?",
                    (last, batch),
                ).fetchall()
            if not rows:
                return
            for _cid, raw, vec in rows:
                yield Record.model_validate_json(raw), vec
            last = rows[-1][0]

    def count_chunks(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def count_documents(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM documents").fetchone()[0])

    # ---- sources and projects ---------------------------------------------------------
    def touch_source(self, name: str, origin: str | None = None) -> None:
        with self._lock, self._conn:
            self._touch_source(name, origin)

    def _touch_source(self, name: str, origin: str | None) -> None:
        self._conn.execute(
            "INSERT INTO sources(name, last_sync, origin) VALUES(?,?,?) "
            "ON CONFLICT(name) DO UPDATE SET last_sync=excluded.last_sync, "
            "origin=COALESCE(excluded.origin, sources.origin)",
            (name, datetime.now(UTC).isoformat(timespec="seconds"), origin),
        )

    def add_to_project(self, project: str, source: str) -> None:
        with self._lock, self._conn:
            self._add_to_project(project, source)

    def _add_to_project(self, project: str, source: str) -> None:
        self._conn.execute(
            "INSERT OR IGNORE INTO projects(name, source) VALUES(?, ?)", (project, source)
        )

    def project_sources(self, project: str) -> list[str]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT source FROM projects WHERE name=? ORDER BY source", (project,)
            ).fetchall()
        return [r[0] for r in rows]

    def projects(self) -> dict[str, list[str]]:
        with self._lock:
            rows = self._conn.execute("SELECT name, source FROM projects").fetchall()
        out: dict[str, list[str]] = {}
        for name, source in rows:
            out.setdefault(name, []).append(source)
        return out

    def sources(self) -> list[SourceInfo]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT s.name, s.last_sync, s.origin, s.version, "
                " (SELECT count(*) FROM documents d WHERE d.source = s.name), "
                " (SELECT coalesce(sum(chunk_count), 0) FROM documents d WHERE d.source = s.name)"
                " FROM sources s ORDER BY s.name"
            ).fetchall()
        projects = self.projects()
        return [
            SourceInfo(
                name=name,
                documents=int(docs),
                records=int(recs),
                last_sync=last,
                origin=origin,
                projects=sorted(p for p, srcs in projects.items() if name in srcs),
                version=version,
            )
            for name, last, origin, version, docs, recs in rows
        ]


def _entities(records: Sequence[Record]) -> list[str]:
    return sorted({e for r in records for e in r.metadata.get(Meta.ENTITIES) or []})


def _doc_row(row: tuple) -> DocumentRow:
    doc_id, source, title, chash, acl, entities, ts, count = row
    return DocumentRow(
        doc_id=doc_id,
        source=source,
        title=title,
        content_hash=chash,
        acl=json.loads(acl),
        entities=json.loads(entities),
        timestamp=datetime.fromisoformat(ts),
        chunk_count=int(count),
    )
