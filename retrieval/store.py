"""The Store: one handle on the catalog, both engines and the embedder of an index home.

Layout of a home (``WAYPOINT_HOME``, default ``.waypoint``)::

    catalog.sqlite            documents, chunks (+ vectors), sources, projects, generation
    lexical/                  the embedded BM25 index (tantivy)
    dense/<generation>/       one Qdrant Edge shard per embedding generation

Changing the embedding model never mixes vectors: ``reindex`` builds a new generation
beside the old one and switches the catalog's pointer in one transaction when complete.
"""

from __future__ import annotations

import difflib
import logging
import shutil
import struct
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from retrieval.catalog import Batch, Catalog, DocumentRow, SourceInfo, SourceVersion
from retrieval.embedding import Embedder
from retrieval.engines.base import DenseEngine, Hit, LexicalEngine, SearchFilter
from retrieval.records import PUBLIC_GROUP, Meta, Record
from retrieval.settings import RetrievalSettings
from retrieval.structure import ENTITY, HEADING, IDENT, IDENT_IN, Linked, StructureIndex

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]  # (done, total) in records


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (doc or path, reason)
    records_indexed: int = 0
    embeddings: int = 0
    deleted: int = 0  # documents deleted (gone from a versioned source)
    seconds: float = 0.0
    # Hyperlinks of the ingested documents that reach no document: (doc_id, target).
    # Reported, never fatal (the target may be ingested later, or be gone).
    broken_links: list[tuple[str, str]] = field(default_factory=list)


class StoreError(RuntimeError):
    """A user-facing problem with the index (missing, incompatible, misconfigured)."""


def _pack(vec: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(vec)}f", *vec)


def _unpack(blob: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(blob) // 4}f", blob))


def embedding_text(record: Record) -> str:
    """What the dense leg embeds: an explicit embed_text, else the title then the text."""
    explicit = record.metadata.get(Meta.EMBED_TEXT)
    if explicit:
        return str(explicit)
    title = record.title
    return f"{title}. {record.text}" if title and not record.text.startswith(title) else record.text


class Store:
    # Its reads are SQLite and in-memory lookups in this process (retrieval.placement).
    in_process = True

    def __init__(
        self,
        settings: RetrievalSettings,
        catalog: Catalog,
        lexical: LexicalEngine,
        dense: DenseEngine,
        embedder: Embedder,
        generation: str,
    ) -> None:
        self.settings = settings
        self.catalog = catalog
        # Chunk ids a batch is writing right now: searches leave them out until the
        # catalog commit makes the batch visible (see ``_write``).
        self.writing: frozenset[str] = frozenset()
        self.lexical: LexicalEngine = _gated(lexical, self)
        self.dense: DenseEngine = _gated(dense, self)
        self.embedder = embedder
        self.generation = generation
        self.home = settings.home
        self._docs_view: _DocumentsView | None = None
        self._pages = _PagesRead()
        self._structure: tuple[int, StructureIndex] | None = None

    # ---- opening ----------------------------------------------------------------------
    @classmethod
    def open(cls, settings: RetrievalSettings | None = None, home: Path | None = None) -> Store:
        settings = settings or RetrievalSettings()
        if home is not None:
            settings = settings.model_copy(update={"home": Path(home)})
        settings.home.mkdir(parents=True, exist_ok=True)
        catalog = Catalog(settings.home / "catalog.sqlite")
        generation = catalog.get_meta("generation")
        model = catalog.get_meta("embedding_model")
        if generation is None or model is None:
            generation = _new_generation_name()
            model = settings.embedding_model
            catalog.set_meta("generation", generation)
            catalog.set_meta("embedding_model", model)
        elif model != settings.embedding_model:
            # Queries must be embedded with the model that built the index: keep using it
            # until `waypoint reindex` builds and switches to a new generation.
            log.warning(
                "index built with embedding model %s; configured %s: run `waypoint reindex`",
                model,
                settings.embedding_model,
            )
        embedder = Embedder(model, settings.embedding_batch_size, settings.query_encoder)
        built_with = catalog.get_meta("embedding_version")
        if built_with is None:
            catalog.set_meta("embedding_version", embedder.version)
        elif built_with != embedder.version:
            # Same model path, other files (an upgraded model package): vectors and queries
            # would come from different models.
            log.warning(
                "the embedding model files at %s changed since the index was built: "
                "run `waypoint reindex`",
                model,
            )
        lexical = _open_lexical(settings)
        dense = _open_dense(settings, generation, embedder)
        store = cls(settings, catalog, lexical, dense, embedder, generation)
        store.repair()
        return store

    def repair(self) -> int:
        """Undo a batch whose process was killed between its first engine write and the
        catalog commit: its chunks are rewritten in both engines from the catalog (the
        state before the batch) or deleted where the catalog never had them. Returns the
        number of chunk ids repaired."""
        ids = self.catalog.pending_ids()
        if not ids:
            return 0
        self._restore(ids)
        self.catalog.clear_pending(ids)
        log.warning("repaired %d record(s) of an interrupted ingest or delete", len(ids))
        return len(ids)

    def _restore(self, ids: Sequence[str]) -> None:
        """Both engines made to hold exactly what the catalog holds for ``ids``."""
        stored = self.catalog.stored_chunks(ids)
        lexical = [r for r, _v in stored.values() if "lexical" in r.legs]
        dense = [(r, v) for r, v in stored.values() if "dense" in r.legs and v is not None]
        lexical_ids = {r.id for r in lexical}
        dense_ids = {r.id for r, _v in dense}
        self.lexical.upsert(lexical, delete_ids=[i for i in ids if i not in lexical_ids])
        if dense:
            self.dense.upsert([r for r, _v in dense], [_unpack(v) for _r, v in dense])
        gone = [i for i in ids if i not in dense_ids]
        if gone:
            self.dense.delete(gone)

    def close(self) -> None:
        self.lexical.close()
        self.dense.close()
        self.catalog.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- write side -------------------------------------------------------------------
    def ingest(
        self,
        records: Iterable[Record],
        progress: ProgressFn | None = None,
        project: str | None = None,
        origin: str | None = None,
        batch_records: int = 256,
        *,
        delete_docs: Sequence[str] = (),
        version: SourceVersion | None = None,
        atomic: bool = False,
    ) -> IngestReport:
        """Index records; unchanged documents (same content hash, ACL and chunking) cost
        no embedding work; a changed document's chunks are replaced in place.

        Each batch becomes visible at once, with its sources' project membership, when
        its catalog transaction commits. ``delete_docs`` (documents gone from the source)
        and ``version`` (what the source is now at) are committed with the last batch;
        ``atomic``: every change in one batch (a repository's diff: all or nothing)."""
        start = time.perf_counter()
        report = IngestReport()
        by_doc: dict[str, list[Record]] = {}
        for r in records:
            by_doc.setdefault(r.doc_id, []).append(r)
        total = sum(len(v) for v in by_doc.values())
        done = 0
        pending: list[list[Record]] = []
        pending_size = 0
        sources: set[str] = set()
        deletes = [d for d in dict.fromkeys(delete_docs) if d not in by_doc]

        def write(docs: list[list[Record]], last: bool) -> None:
            nonlocal done
            batch = Batch(
                docs=docs,
                sources=sorted({recs[0].source for recs in docs} | (sources if last else set())),
                project=project,
                origin=origin,
                delete_docs=deletes if last else (),
                version=version if last else None,
            )
            done += self._write(batch, report, lambda n: progress and progress(done + n, total))
            if progress:
                progress(done, total)

        for doc_id, recs in by_doc.items():
            recs.sort(key=lambda r: r.chunk_index)
            sources.add(recs[0].source)
            state = self._change_state(doc_id, recs)
            if state == "unchanged":
                report.unchanged += 1
                done += len(recs)
                if progress:
                    progress(done, total)
                continue
            if state == "added":
                report.added += 1
            else:
                report.updated += 1
            pending.append(recs)
            pending_size += len(recs)
            if pending_size >= batch_records and not atomic:
                write(pending, last=False)
                pending, pending_size = [], 0
        write(pending, last=True)
        report.deleted = len(deletes)
        if progress:
            progress(total, total)
        if report.added or report.updated or report.deleted:
            self.dense.optimize()  # HNSW built after the batch, off the query path
        if report.added or report.updated:
            changed = [
                d for d, recs in by_doc.items() if any(r.metadata.get(Meta.LINKS) for r in recs)
            ]
            if changed:
                report.broken_links = self.structure_index().broken(changed)
        report.seconds = time.perf_counter() - start
        return report

    def _change_state(self, doc_id: str, recs: list[Record]) -> str:
        row = self.catalog.document(doc_id)
        if row is None:
            return "added"
        new_hash = str(recs[0].metadata.get(Meta.CONTENT_HASH, ""))
        same = (
            new_hash
            and row.content_hash == new_hash
            and row.chunk_count == len(recs)
            and sorted(row.acl) == sorted(recs[0].acl)
        )
        return "unchanged" if same else "updated"

    def _write(self, batch: Batch, report: IngestReport, embedded: Callable[[int], object]) -> int:
        """Write one batch: embed what changed, mark its chunk ids pending in the catalog,
        write both engines, then commit the catalog (documents, deletions, membership,
        version) and clear the marks in one transaction. Until that commit, searches in
        this process leave the batch's chunks out; a process killed before it leaves the
        marks, and the next open restores the engines from the catalog (``repair``).
        Returns the number of records written."""
        docs = [list(recs) for recs in batch.docs]
        flat = [r for recs in docs for r in recs]
        dense_recs = [r for r in flat if "dense" in r.legs]
        vec_by_id = self._vectors(dense_recs, report, embedded)
        vectors = [vec_by_id[r.id] for r in dense_recs]
        lexical_recs = [r for r in flat if "lexical" in r.legs]
        stale_dense: list[str] = []
        stale_lexical: list[str] = []
        for recs in docs:
            new_ids = {r.id for r in recs}
            stale = [i for i in self.catalog.chunk_ids(recs[0].doc_id) if i not in new_ids]
            # A chunk that moved between legs must leave the leg it no longer belongs to.
            stale_dense += stale + [r.id for r in recs if "dense" not in r.legs]
            stale_lexical += stale + [r.id for r in recs if "lexical" not in r.legs]
        deleted = [i for d in batch.delete_docs for i in self.catalog.chunk_ids(d)]
        touched = list(dict.fromkeys([r.id for r in flat] + stale_lexical + stale_dense + deleted))
        batch.vectors = {rid: _pack(v) for rid, v in vec_by_id.items()}
        if not touched:
            self.catalog.commit_batch(batch)
            return 0
        self.catalog.begin_batch(touched)
        self.writing = frozenset(touched)
        try:
            if lexical_recs or stale_lexical or deleted:
                self.lexical.upsert(lexical_recs, delete_ids=stale_lexical + deleted)
            if dense_recs:
                self.dense.upsert(dense_recs, vectors)
            if stale_dense or deleted:
                self.dense.delete(stale_dense + deleted)
            self.catalog.commit_batch(batch, pending=touched)
        except BaseException:
            self._restore_quietly(touched)
            raise
        finally:
            self.writing = frozenset()
        report.records_indexed += len(flat)
        return len(flat)

    def _restore_quietly(self, ids: Sequence[str]) -> None:
        """After a failed batch: the engines back to the catalog's state where possible
        (what fails here is left to the repair at the next open)."""
        try:
            self._restore(ids)
            self.catalog.clear_pending(ids)
        except Exception:  # noqa: BLE001 - the batch's own error is the one raised
            log.exception("could not undo a failed batch: the next open repairs it")

    def _vectors(
        self, records: list[Record], report: IngestReport, embedded: Callable[[int], object]
    ) -> dict[str, list[float]]:
        """A vector per dense record: the stored one when its embedded text did not
        change (an ACL or metadata-only change, the untouched sections of an edited
        document), else a fresh one (``embedded(n)`` after every step of records)."""
        stored = self.catalog.stored_chunks([r.id for r in records])
        vec_by_id: dict[str, list[float]] = {}
        to_embed: list[Record] = []
        for r in records:
            old = stored.get(r.id)
            if old and old[1] is not None and embedding_text(old[0]) == embedding_text(r):
                vec_by_id[r.id] = _unpack(old[1])
            else:
                to_embed.append(r)
        step = 256
        for i in range(0, len(to_embed), step):
            part = to_embed[i : i + step]
            fresh = self.embedder.encode([embedding_text(r) for r in part])
            report.embeddings += len(fresh)
            vec_by_id.update(zip([r.id for r in part], fresh, strict=True))
            embedded(i + len(part))
        return vec_by_id

    def delete_document(self, doc_id: str) -> bool:
        if self.catalog.document(doc_id) is None:
            return False
        self._write(Batch(delete_docs=[doc_id]), IngestReport(), lambda n: None)
        return True

    def delete_source(self, source: str) -> int:
        docs = self.catalog.document_ids(source)
        ids = [i for d in docs for i in self.catalog.chunk_ids(d)]
        self.catalog.begin_batch(ids)
        self.writing = frozenset(ids)
        try:
            self.lexical.delete_source(source)
            self.dense.delete_source(source)
            self.catalog.delete_source(source)
            self.catalog.clear_pending(ids)
        finally:
            self.writing = frozenset()
        return len(docs)

    def reindex(self, progress: ProgressFn | None = None) -> str:
        """Re-embed every chunk with the configured model into a new dense generation,
        then switch to it atomically; the old generation keeps serving until then."""
        embedder = Embedder(
            self.settings.embedding_model,
            self.settings.embedding_batch_size,
            self.settings.query_encoder,
        )
        generation = _new_generation_name()
        dense = _open_dense(self.settings, generation, embedder)
        total = self.catalog.count_chunks()
        done = 0
        batch: list[Record] = []

        def flush() -> None:
            nonlocal done
            recs = [r for r in batch if "dense" in r.legs]
            if recs:
                dense.upsert(recs, embedder.encode([embedding_text(r) for r in recs]))
            done += len(batch)
            batch.clear()
            if progress:
                progress(done, total)

        for record, _vec in self.catalog.iter_chunks():
            batch.append(record)
            if len(batch) >= 256:
                flush()
        flush()
        dense.optimize()
        old_generation, old_dense = self.generation, self.dense
        self.catalog.switch_generation(generation, self.settings.embedding_model, embedder.version)
        self.dense, self.embedder, self.generation = _gated(dense, self), embedder, generation
        old_dense.close()
        old_path = self.settings.home / "dense" / old_generation
        if old_path.exists():
            shutil.rmtree(old_path, ignore_errors=True)
        return generation

    # ---- read side --------------------------------------------------------------------
    def inline_ok(self, name: str) -> bool:
        """Whether a short read may run on the event loop now (retrieval.placement): not
        while another thread holds the catalog (an ingest's transaction would hold the
        loop), and not a lookup that must first rebuild the documents view (a full scan
        after every content change)."""
        if not self.catalog.idle():
            return False
        if name in ("lookup", "visible_size", "get_links"):
            view = self._docs_view
            version = self.version()
            if view is None or view.version != version:
                return False
            return name == "visible_size" or (
                self._structure is not None and self._structure[0] == version
            )
        return True

    def corpus_size(self) -> int:
        """Every record of the index: for operators (reindex progress), never for a caller,
        who is told :meth:`visible_size` instead."""
        return self.catalog.count_chunks()

    def visible_size(self, flt: SearchFilter) -> int:
        """Records of the documents ``flt`` admits (ACL, sources, documents; time bounds
        aside): the corpus size a caller may learn and a search's depth is derived from.
        The whole index's size would tell a caller how many records it may not read."""
        return self._documents_view().chunk_count(flt)

    def version(self) -> int:
        """Changes with every ingest that changed something, delete and ACL change (in any
        process sharing this home): what a cache of titles or results keys on."""
        return self.catalog.content_version()

    def is_empty(self) -> bool:
        return self.catalog.count_documents() == 0

    def sources(self, flt: SearchFilter | None = None) -> list[SourceInfo]:
        """Every source and its counts; with ``flt``, only the sources holding a document
        the filter admits, counted over those documents (what a caller may learn)."""
        infos = self.catalog.sources()
        if flt is None:
            return infos
        documents: dict[str, int] = {}
        records: dict[str, int] = {}
        for d in self._visible_documents(flt):
            documents[d.source] = documents.get(d.source, 0) + 1
            records[d.source] = records.get(d.source, 0) + d.chunk_count
        return [
            replace(info, documents=documents[info.name], records=records[info.name])
            for info in infos
            if info.name in documents
        ]

    def filter_for(
        self,
        groups: Sequence[str] | None,
        project: str | None = None,
        sources: Sequence[str] | None = None,
        time_from: datetime | None = None,
        time_to: datetime | None = None,
    ) -> SearchFilter:
        """The engine filter for a caller: ACL groups (+ public) and a project's sources."""
        scope: set[str] | None = set(sources) if sources else None
        if project:
            project_sources = set(self.catalog.project_sources(project))
            if not project_sources:
                raise StoreError(f"unknown project {project!r}: no sources belong to it")
            scope = project_sources if scope is None else scope & project_sources
        acl = None if groups is None else tuple(sorted({*groups, PUBLIC_GROUP}))
        return SearchFilter(
            acl_groups=acl,
            sources=tuple(sorted(scope)) if scope is not None else None,
            time_from=time_from,
            time_to=time_to,
        )

    def allowed(self, record: Record, flt: SearchFilter) -> bool:
        """The exact same rule the engines push down, for by-id reads."""
        if flt.acl_groups is not None and not set(record.acl) & set(flt.acl_groups):
            return False
        if flt.sources is not None and record.source not in flt.sources:
            return False
        if flt.doc_ids is not None and record.doc_id not in flt.doc_ids:
            return False
        ts = record.timestamp
        if flt.time_from is not None and ts < flt.time_from:
            return False
        return not (flt.time_to is not None and ts > flt.time_to)

    def get_records(self, ids: Sequence[str], flt: SearchFilter) -> list[Record]:
        return [r for r in self.catalog.records(ids) if self.allowed(r, flt)]

    def vectors(self, ids: Sequence[str], flt: SearchFilter) -> dict[str, list[float]]:
        """The stored embeddings of these chunks that the caller may read (by id; a chunk
        of another user's, an unknown id or a lexical-only chunk has none)."""
        stored = self.catalog.stored_chunks(list(ids))
        return {
            rid: _unpack(vec)
            for rid, (record, vec) in stored.items()
            if vec is not None and self.allowed(record, flt)
        }

    def get_document(self, doc_id: str, flt: SearchFilter) -> list[Record]:
        records = self._pages.get(self.version(), doc_id, self.catalog.doc_records)
        return [r for r in records if self.allowed(r, flt)]

    def neighbors(self, chunk_id: str, flt: SearchFilter, window: int = 1) -> list[Record]:
        """Adjacent sections of the same document (not the chunk itself), in order."""
        found = self.get_records([chunk_id], flt)
        if not found:
            return []
        me = found[0]
        nearby = self.catalog.doc_records(
            me.doc_id, me.chunk_index - window, me.chunk_index + window
        )
        return [r for r in nearby if r.id != me.id and self.allowed(r, flt)]

    def _documents_view(self) -> _DocumentsView:
        version = self.version()
        view = self._docs_view
        if view is None or view.version != version:
            view = _DocumentsView(version, self.catalog.documents())
            self._docs_view = view
        return view

    def titles(self, flt: SearchFilter) -> list[tuple[str, str]]:
        """(title, doc_id) of every document the filter admits."""
        return [(d.title, d.doc_id) for d in self._visible_documents(flt) if d.title]

    def _visible_documents(self, flt: SearchFilter) -> list[DocumentRow]:
        return [d for d in self._documents_view().docs if _admits(flt, d)]

    def structure_index(self) -> StructureIndex:
        """Every document's names and links (retrieval.structure), per content version."""
        version = self.version()
        found = self._structure
        if found is None or found[0] != version:
            found = (version, StructureIndex(*self.catalog.structure()))
            self._structure = found
        return found[1]

    def links(self, doc_id: str, flt: SearchFilter) -> tuple[list[Linked], list[Linked]]:
        """(outgoing, incoming) links of a document, resolved to documents: only when the
        filter admits the document, and only to and from documents it admits (a link to a
        page the caller may not read says nothing about that page)."""
        view = self._documents_view()
        me = view.by_id.get(doc_id)
        if me is None or not _admits(flt, me):
            return [], []
        index = self.structure_index()

        def visible(links: list[Linked]) -> list[Linked]:
            return [
                link
                for link in links
                if (d := view.by_id.get(link.doc_id)) is not None and _admits(flt, d)
            ]

        return visible(index.outgoing(doc_id)), visible(index.incoming(doc_id))

    def linking_documents(self, flt: SearchFilter) -> frozenset[str]:
        """The documents ``flt`` admits that link to a document it admits: where a
        get_links call can find something."""
        view = self._documents_view()

        def seen(doc_id: str) -> bool:
            d = view.by_id.get(doc_id)
            return d is not None and _admits(flt, d)

        return frozenset(
            d
            for d, targets in self.structure_index().linking().items()
            if seen(d) and any(seen(t) for t in targets)
        )

    def lookup(self, name: str, flt: SearchFilter, limit: int = 5) -> list[Record]:
        """Open the documents about ``name``: a document defining it as an identifier
        (``ERR-4012``, ``shared_buffers``), exact title, entity, an identifier in a title
        or heading, heading, then documents
        mentioning the identifier, then fuzzy title. Returns the first visible chunk of
        each matching document."""
        key = name.strip().casefold()
        if not key:
            return []
        view = self._documents_view()
        index = self.structure_index()

        def admitted(doc_ids: Iterable[str]) -> list[DocumentRow]:
            rows = (view.by_id.get(d) for d in doc_ids)
            return [d for d in rows if d is not None and _admits(flt, d)]

        # Of several documents defining the name, its own entry first: a list of names
        # (a function index, a chapter's contents) defines many per passage, an entry's
        # page or a reference section few.
        ranked = sorted(
            admitted(index.named(key, (IDENT,))),
            key=lambda d: index.defined[d.doc_id] / max(1, d.chunk_count),
        )
        ranked += [d for d in view.by_title.get(key, []) if d not in ranked and _admits(flt, d)]
        ranked += [d for d in view.by_entity.get(key, []) if d not in ranked and _admits(flt, d)]
        if not ranked and "." not in key:
            # code named without its module: TaskGroup -> the page defining asyncio.TaskGroup
            ranked = admitted(index.qualified(key))
        if len(ranked) < limit:
            named = admitted(index.named(key, (ENTITY, IDENT_IN, HEADING)))
            ranked += [d for d in named if d not in ranked]
        if len(ranked) < limit:
            ranked += [d for d in admitted(index.mentioning(key)) if d not in ranked]
        if len(ranked) < limit:
            # Fuzzy only over admitted titles, so a near-miss never reveals a hidden one,
            # and only over titles with an admitted document not ranked already.
            visible = view.visible_titles(flt)
            near = view.titles_near_length(flt, len(key), _FUZZY_CUTOFF)
            open_titles = [t for t in near if any(d not in ranked for d in visible[t])]
            close = difflib.get_close_matches(key, open_titles, n=limit, cutoff=_FUZZY_CUTOFF)
            ranked += [d for t in close for d in visible[t] if d not in ranked]
        out: list[Record] = []
        for d in ranked[:limit]:
            recs = self.get_document(d.doc_id, flt)
            if recs:
                out.append(recs[0])
        return out


_FUZZY_CUTOFF = 0.8  # difflib ratio a fuzzy title match needs


class _PagesRead:
    """Whole documents read lately (a hub's linked pages are read by call after call),
    kept while the content version stays: any change of the content empties it. The
    records are shared between readers, who only read them; each read is filtered for its
    caller as before."""

    # Records kept, counted over documents: a few long PDFs must not hold the memory
    # that many wiki pages would share.
    _KEPT = 20_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version = -1
        self._docs: OrderedDict[str, tuple[Record, ...]] = OrderedDict()
        self._held = 0

    def get(self, version: int, doc_id: str, read: Callable[[str], list[Record]]) -> list[Record]:
        with self._lock:
            if version != self._version:
                self._version, self._docs, self._held = version, OrderedDict(), 0
            kept = self._docs.get(doc_id)
            if kept is not None:
                self._docs.move_to_end(doc_id)
                return list(kept)
        # Read outside the lock; a version read before the read keys it, so content
        # changed meanwhile is dropped at the next call, which sees the new version.
        records = tuple(read(doc_id))
        with self._lock:
            if version == self._version and doc_id not in self._docs:
                self._docs[doc_id] = records
                self._held += len(records)
                while self._held > self._KEPT and len(self._docs) > 1:
                    self._held -= len(self._docs.popitem(last=False)[1])
        return list(records)


class _DocumentsView:
    """Documents indexed by folded title and entity, rebuilt when the catalog changes.

    Per caller filter it keeps, once, the titles that filter admits (``visible_titles``)
    grouped by length: a fuzzy lookup then scores only titles whose length could reach
    the cutoff, instead of every admitted title of the corpus on every lookup.
    """

    _FILTERS_KEPT = 32  # caller filters whose admitted titles are kept (a bounded cache)

    def __init__(self, version: int, docs: list[DocumentRow]) -> None:
        self.version = version
        self.docs = docs
        self.by_title: dict[str, list[DocumentRow]] = {}
        self.by_entity: dict[str, list[DocumentRow]] = {}
        self.by_id: dict[str, DocumentRow] = {d.doc_id: d for d in docs}
        for d in docs:
            if d.title:
                self.by_title.setdefault(d.title.casefold(), []).append(d)
            for e in d.entities:
                self.by_entity.setdefault(e.casefold(), []).append(d)
        self._visible: dict[SearchFilter, tuple[dict[str, list[DocumentRow]], dict[int, list[str]]]]
        self._visible = {}
        self._counts: dict[SearchFilter, int] = {}

    def chunk_count(self, flt: SearchFilter) -> int:
        """Chunks of the documents ``flt`` admits (kept per filter, as the titles are)."""
        found = self._counts.get(flt)
        if found is None:
            found = sum(d.chunk_count for d in self.docs if _admits(flt, d))
            if len(self._counts) >= self._FILTERS_KEPT:
                # the oldest; another thread may have dropped it already
                self._counts.pop(next(iter(self._counts), flt), None)
            self._counts[flt] = found
        return found

    def _admitted(
        self, flt: SearchFilter
    ) -> tuple[dict[str, list[DocumentRow]], dict[int, list[str]]]:
        found = self._visible.get(flt)
        if found is None:
            visible: dict[str, list[DocumentRow]] = {}
            for title, ds in self.by_title.items():
                admitted = [d for d in ds if _admits(flt, d)]
                if admitted:
                    visible[title] = admitted
            by_length: dict[int, list[str]] = {}
            for title in visible:
                by_length.setdefault(len(title), []).append(title)
            if len(self._visible) >= self._FILTERS_KEPT:
                del self._visible[next(iter(self._visible))]  # the oldest
            found = self._visible[flt] = (visible, by_length)
        return found

    def visible_titles(self, flt: SearchFilter) -> dict[str, list[DocumentRow]]:
        """Folded title -> the documents of that title ``flt`` admits (titles with none
        left out)."""
        return self._admitted(flt)[0]

    def titles_near_length(self, flt: SearchFilter, length: int, cutoff: float) -> list[str]:
        """The admitted titles whose length alone does not rule out a difflib ratio of
        ``cutoff`` against a text of ``length`` characters: exactly the titles that pass
        ``SequenceMatcher.real_quick_ratio`` (2 * min(len) / sum of lens), which
        ``difflib.get_close_matches`` checks first, so its answer is unchanged."""
        by_length = self._admitted(flt)[1]
        return [
            title
            for n, titles in by_length.items()
            if 2.0 * min(n, length) / (n + length) >= cutoff
            for title in titles
        ]


def _admits(flt: SearchFilter, d: DocumentRow) -> bool:
    if flt.acl_groups is not None and not set(d.acl) & set(flt.acl_groups):
        return False
    if flt.sources is not None and d.source not in flt.sources:
        return False
    return flt.doc_ids is None or d.doc_id in flt.doc_ids


class _Gated:
    """An engine whose searches show a batch being written (the store's ``writing``) as
    the catalog has it: a chunk the catalog holds comes with its committed record (the
    version before the batch, still checked against the search's filter), one it does
    not hold yet is left out. So a batch is seen in every engine at once, when the
    catalog commits it, and a replaced chunk is seen old or new, never neither.
    Everything else is the engine's."""

    def __init__(self, engine: Any, store: Store) -> None:
        self._engine = engine
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def search(self, query: Any, k: int, flt: SearchFilter) -> list[Hit]:
        hits: list[Hit] = self._engine.search(query, k, flt)
        writing = self._store.writing
        if not writing or not any(h.id in writing for h in hits):
            return hits
        store = self._store
        committed = {
            r.id: r for r in store.catalog.records([h.id for h in hits if h.id in writing])
        }
        kept: list[Hit] = []
        for hit in hits:
            if hit.id not in writing:
                kept.append(hit)
                continue
            record = committed.get(hit.id)
            if record is not None and store.allowed(record, flt):
                kept.append(Hit(record, hit.score, hit.rank, hit.leg, dict(hit.extra)))
        for rank, hit in enumerate(kept, 1):
            hit.rank = rank
        return kept


def _gated(engine: Any, store: Store) -> Any:
    return engine if isinstance(engine, _Gated) else cast(Any, _Gated(engine, store))


def _new_generation_name() -> str:
    return "gen-" + uuid.uuid4().hex[:10]


def _open_lexical(settings: RetrievalSettings) -> LexicalEngine:
    if settings.lexical_backend == "elasticsearch":
        if not settings.es_url:
            raise StoreError("WAYPOINT_LEXICAL_BACKEND=elasticsearch needs WAYPOINT_ES_URL")
        from elasticsearch import Elasticsearch

        from retrieval.engines.elastic import ElasticLexicalEngine

        return ElasticLexicalEngine(
            Elasticsearch(settings.es_url),
            index=f"{settings.es_index_prefix}-lexical",
            title_boost=settings.lexical_title_boost,
        )
    from retrieval.engines.tantivy_engine import TantivyLexicalEngine

    return TantivyLexicalEngine(settings.home / "lexical", title_boost=settings.lexical_title_boost)


def _open_dense(settings: RetrievalSettings, generation: str, embedder: Embedder) -> DenseEngine:
    if settings.dense_backend == "qdrant":
        if not settings.qdrant_url:
            raise StoreError("WAYPOINT_DENSE_BACKEND=qdrant needs WAYPOINT_QDRANT_URL")
        from qdrant_client import QdrantClient

        from retrieval.engines.qdrant_server import QdrantServerDenseEngine

        client = QdrantClient(url=settings.qdrant_url, api_key=settings.qdrant_api_key)
        return QdrantServerDenseEngine(
            client, f"{settings.qdrant_collection_prefix}-{generation}", embedder.dim
        )
    from retrieval.engines.qdrant_edge import EdgeDenseEngine

    return EdgeDenseEngine(settings.home / "dense" / generation, embedder.dim)
