"""Embedded BM25 engine on tantivy: on-disk, incremental, with deletes.

Design points (the *why*):

* User text is never handed to tantivy's query parser. It is analysed with the very
  analyser the ``text`` field is indexed with and turned into term queries, so
  ``foo AND (bar`` or ``"unbalanced`` are just words.
* Filters (ACL, sources, documents, time) are boolean MUST clauses of the same query,
  wrapped in zero-score constant queries so they restrict without moving the BM25 score.
  Nothing is post-filtered in Python: with ``k=1`` the best *allowed* record comes back.
* A write (upsert / delete / delete_source) is one commit, and readers are reloaded right
  after it, so a reader sees either the old or the new version of a record, never both
  and never neither.
* tantivy allows one writer per index directory (a lock file). Every engine of one
  process opening the same path shares one index handle and one lazily created writer,
  so several Store instances can coexist; a second *process* can read while another
  writes, and gets :class:`LexicalIndexLocked` only when it tries to write.
* Timestamps are indexed as integer microseconds (``timestamp_us``): tantivy date fields
  keep whole seconds only, which would make time filters inexact.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import tantivy
from tantivy import FieldType, Occur, Query

from retrieval.engines.base import Hit, SearchFilter
from retrieval.engines.record_codec import (
    chunk_order_key,
    decode_record,
    encode_record,
    epoch_micros,
    last_wins,
    order_by_ids,
    unique,
)
from retrieval.records import Record

ANALYZER_NAME = "waypoint_en_stem"
# Bounds on the query we build from user text (a pasted log must not become 10k clauses).
MAX_QUERY_TERMS = 64
MAX_QUERY_PHRASES = 16
MAX_DOC_FREQ_TERMS = 50_000  # term-dictionary look-ups are cheap
# Batch size for id look-ups (term-set queries).
GET_BATCH = 1024

F_ID = "id"
F_DOC_ID = "doc_id"
F_SOURCE = "source"
F_ACL = "acl"
F_TIMESTAMP = "timestamp_us"
F_TITLE = "title"
F_TEXT = "text"
F_RECORD = "record"


class LexicalIndexLocked(RuntimeError):
    """Another process holds the tantivy writer lock of this index directory."""


def english_analyzer() -> tantivy.TextAnalyzer:
    """tantivy's ``en_stem`` chain, built explicitly so queries and doc_freq can reuse it.

    Simple tokenizer (splits on non-alphanumerics), tokens longer than 40 characters
    dropped, lowercase, English Snowball stemmer.
    """
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def build_schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    # raw = the whole value is one term: exact match, and delete_documents_by_term works.
    sb.add_text_field(F_ID, stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_text_field(F_DOC_ID, tokenizer_name="raw", index_option="basic")
    sb.add_text_field(F_SOURCE, tokenizer_name="raw", index_option="basic")
    sb.add_text_field(F_ACL, tokenizer_name="raw", index_option="basic")
    sb.add_integer_field(F_TIMESTAMP, indexed=True, fast=True)
    sb.add_text_field(F_TITLE, tokenizer_name=ANALYZER_NAME)
    sb.add_text_field(F_TEXT, tokenizer_name=ANALYZER_NAME)
    sb.add_bytes_field(F_RECORD, stored=True)
    return sb.build()


class _SharedIndex:
    """One tantivy index (and at most one writer) per directory per process."""

    def __init__(self, path: Path, heap_bytes: int, writer_threads: int) -> None:
        self.path = path
        self.heap_bytes = heap_bytes
        self.writer_threads = writer_threads
        self.schema = build_schema()
        self.analyzer = english_analyzer()
        path.mkdir(parents=True, exist_ok=True)
        try:
            self.index = tantivy.Index(self.schema, path=str(path), reuse=True)
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"cannot open the tantivy index at {path}: {exc}") from exc
        # Custom analysers are not persisted in the index: register on every open.
        self.index.register_tokenizer(ANALYZER_NAME, self.analyzer)
        self.write_lock = threading.Lock()
        self._writer: tantivy.IndexWriter | None = None
        self.refs = 0

    @contextmanager
    def writing(self) -> Iterator[tantivy.IndexWriter]:
        """Serialise writers of this process; commit + reload on success, roll back on error."""
        with self.write_lock:
            writer = self._get_writer()
            try:
                yield writer
            except BaseException:
                writer.rollback()
                raise
            writer.commit()
            # Make the commit visible now (the OnCommit watcher may lag behind).
            self.index.reload()

    def _get_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            try:
                self._writer = self.index.writer(
                    heap_size=self.heap_bytes, num_threads=self.writer_threads
                )
            except ValueError as exc:
                if "LockBusy" in str(exc):
                    raise LexicalIndexLocked(
                        f"the lexical index at {self.path} is being written by another "
                        "process; stop it or use a different WAYPOINT_HOME"
                    ) from exc
                raise
        return self._writer

    def release(self) -> None:
        with self.write_lock:
            if self._writer is not None:
                writer, self._writer = self._writer, None
                # Finishes background merges and drops the writer (releasing the lock file).
                writer.wait_merging_threads()


_REGISTRY: dict[str, _SharedIndex] = {}
_REGISTRY_LOCK = threading.Lock()


def _acquire(path: Path, heap_bytes: int, writer_threads: int) -> _SharedIndex:
    key = os.path.realpath(path)
    with _REGISTRY_LOCK:
        shared = _REGISTRY.get(key)
        if shared is None:
            shared = _SharedIndex(Path(key), heap_bytes, writer_threads)
            _REGISTRY[key] = shared
        shared.refs += 1
        return shared


def _release(shared: _SharedIndex) -> None:
    with _REGISTRY_LOCK:
        shared.refs -= 1
        if shared.refs > 0:
            return
        _REGISTRY.pop(str(shared.path), None)
        # Still under the registry lock: a new handle for this path must not race the
        # old writer for the directory lock.
        shared.release()


def _stored_record(searcher: tantivy.Searcher, address: tantivy.DocAddress) -> Record:
    blob = searcher.doc(address).get_first(F_RECORD)
    if blob is None:
        raise RuntimeError(
            "tantivy document without a stored record (index written by another tool?)"
        )
    return decode_record(blob)


class TantivyLexicalEngine:
    """:class:`~retrieval.engines.base.LexicalEngine` on an on-disk tantivy index."""

    in_process = True  # no network: short searches run on the loop (retrieval.placement)

    def __init__(
        self,
        path: Path,
        name: str = "tantivy",
        *,
        title_boost: float = 2.0,
        heap_bytes: int = 64_000_000,
        writer_threads: int = 1,
    ) -> None:
        self.name = name
        self.path = Path(path)
        self.title_boost = title_boost
        self._shared = _acquire(self.path, heap_bytes, writer_threads)
        self._closed = False

    # -- helpers -------------------------------------------------------------------------

    @property
    def _schema(self) -> tantivy.Schema:
        return self._shared.schema

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"lexical engine {self.name!r} at {self.path} is closed")

    def analyse(self, text: str) -> list[str]:
        """The terms ``text`` is indexed as (same analyser as the title / text fields)."""
        return list(self._shared.analyzer.analyze(text))

    def _document(self, record: Record) -> tantivy.Document:
        doc = tantivy.Document()
        doc.add_text(F_ID, record.id)
        doc.add_text(F_DOC_ID, record.doc_id)
        doc.add_text(F_SOURCE, record.source)
        for group in unique(record.acl):
            doc.add_text(F_ACL, group)
        doc.add_integer(F_TIMESTAMP, epoch_micros(record.timestamp))
        if record.title:
            doc.add_text(F_TITLE, record.title)
        doc.add_text(F_TEXT, record.text)
        doc.add_bytes(F_RECORD, encode_record(record))
        return doc

    def _any_of(self, field: str, values: Sequence[str]) -> Query:
        return Query.boolean_query(
            [(Occur.Should, Query.term_query(self._schema, field, v)) for v in unique(values)]
        )

    def _filter_clauses(self, flt: SearchFilter) -> list[Query] | None:
        """MUST clauses for ``flt``; ``None`` when the filter admits nothing."""
        clauses: list[Query] = []
        for field, values in (
            (F_ACL, flt.acl_groups),
            (F_SOURCE, flt.sources),
            (F_DOC_ID, flt.doc_ids),
        ):
            if values is None:
                continue
            if not values:
                return None  # an empty allow-list allows nothing
            clauses.append(self._any_of(field, values))
        if flt.time_from is not None or flt.time_to is not None:
            clauses.append(
                Query.range_query(
                    self._schema,
                    F_TIMESTAMP,
                    FieldType.Integer,
                    lower_bound=epoch_micros(flt.time_from) if flt.time_from else None,
                    upper_bound=epoch_micros(flt.time_to) if flt.time_to else None,
                )
            )
        # Zero-score wrappers: a filter restricts, it must not re-rank.
        return [Query.const_score_query(c, 0.0) for c in clauses]

    def _text_query(self, query: str) -> Query | None:
        terms = unique(self.analyse(query))[:MAX_QUERY_TERMS]
        if not terms:
            return None
        shoulds: list[tuple[Occur, Query]] = []
        for term in terms:
            shoulds.append((Occur.Should, Query.term_query(self._schema, F_TEXT, term)))
            shoulds.append(
                (
                    Occur.Should,
                    Query.boost_query(
                        Query.term_query(self._schema, F_TITLE, term), self.title_boost
                    ),
                )
            )
        # A word the analyser splits (ERR-4012, foo.bar_baz) also scores as a phrase, so
        # the record that holds the exact identifier outranks one holding its pieces apart.
        phrases = 0
        for word in unique(query.split()):
            parts: list[str | tuple[int, str]] = list(self.analyse(word))
            if len(parts) < 2:
                continue
            shoulds.append((Occur.Should, Query.phrase_query(self._schema, F_TEXT, parts)))
            phrases += 1
            if phrases >= MAX_QUERY_PHRASES:
                break
        return Query.boolean_query(shoulds)

    # -- LexicalEngine -------------------------------------------------------------------

    def upsert(self, records: Sequence[Record], *, delete_ids: Sequence[str] = ()) -> None:
        """Index ``records`` (replacing same-id records) and drop ``delete_ids``, one commit.

        ``delete_ids`` lets a caller swap a document's chunk set atomically when it shrinks.
        """
        self._check_open()
        batch = last_wins(records)
        if not batch and not delete_ids:
            return
        docs = [self._document(r) for r in batch]  # build first: bad input writes nothing
        with self._shared.writing() as writer:
            for rid in unique(delete_ids):
                writer.delete_documents_by_term(F_ID, rid)
            for record, doc in zip(batch, docs, strict=True):
                # A delete only hits documents added before it: delete, then add.
                writer.delete_documents_by_term(F_ID, record.id)
                writer.add_document(doc)

    def delete(self, ids: Sequence[str]) -> None:
        self._check_open()
        if not ids:
            return
        with self._shared.writing() as writer:
            for rid in unique(ids):
                writer.delete_documents_by_term(F_ID, rid)

    def delete_source(self, source: str) -> None:
        self._check_open()
        with self._shared.writing() as writer:
            writer.delete_documents_by_term(F_SOURCE, source)

    def search(self, query: str, k: int, flt: SearchFilter) -> list[Hit]:
        self._check_open()
        if k <= 0:
            return []
        text_query = self._text_query(query)
        filters = self._filter_clauses(flt)
        if text_query is None or filters is None:
            return []
        full = Query.boolean_query([(Occur.Must, text_query)] + [(Occur.Must, f) for f in filters])
        searcher = self._shared.index.searcher()  # one snapshot for search + fetch
        # tantivy reserves room for ``limit`` hits up front: a limit of 10^12 is a 16 TB
        # allocation that aborts the process, 2^62 a panic. No search finds more than the
        # index holds.
        limit = min(k, int(searcher.num_docs))
        if limit <= 0:
            return []
        result = searcher.search(full, limit=limit, count=False)
        hits: list[Hit] = []
        for rank, (score, address) in enumerate(result.hits, start=1):
            record = _stored_record(searcher, address)
            hits.append(Hit(record=record, score=float(score), rank=rank, leg="lexical"))
        return hits

    def get(self, ids: Sequence[str]) -> list[Record]:
        self._check_open()
        wanted = unique(ids)
        if not wanted:
            return []
        searcher = self._shared.index.searcher()
        found: list[Record] = []
        for start in range(0, len(wanted), GET_BATCH):
            batch = wanted[start : start + GET_BATCH]
            query = Query.term_set_query(self._schema, F_ID, batch)
            result = searcher.search(query, limit=len(batch), count=False)
            for _, address in result.hits:
                found.append(_stored_record(searcher, address))
        return order_by_ids(wanted, found)

    def ids_for_doc(self, doc_id: str) -> list[str]:
        """Chunk ids of a document, in chunk order."""
        self._check_open()
        searcher = self._shared.index.searcher()
        total = searcher.num_docs
        if total == 0:
            return []
        query = Query.term_query(self._schema, F_DOC_ID, doc_id)
        result = searcher.search(query, limit=total, count=False)
        ids = [str(searcher.doc(address).get_first(F_ID)) for _, address in result.hits]
        return sorted(unique(ids), key=chunk_order_key)

    def count(self) -> int:
        self._check_open()
        return int(self._shared.index.searcher().num_docs)

    def doc_freq(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """Document frequency in the ``text`` field per *analysed* term, and the doc count.

        Keys are the analysed forms (``"Running"`` -> ``"run"``; ``"ERR-4012"`` gives
        ``"err"`` and ``"4012"``). tantivy's term statistics still count deleted documents
        until their segment is merged, so a df is an upper bound, clamped to the total.
        At most ``MAX_DOC_FREQ_TERMS`` distinct analysed terms are looked up.
        """
        self._check_open()
        searcher = self._shared.index.searcher()
        total = int(searcher.num_docs)
        analysed = unique(t for term in terms for t in self.analyse(term))
        out: dict[str, int] = {}
        for term in analysed[:MAX_DOC_FREQ_TERMS]:
            out[term] = min(int(searcher.doc_freq(F_TEXT, term)), total)
        return out, total

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        _release(self._shared)
