"""Lexical engine on Elasticsearch (the official ``elasticsearch`` client).

What it does and why:

* Mapping: ``id``/``doc_id``/``source``/``acl`` are keywords (exact filters), ``title`` and
  ``text`` use the ``english`` analyzer, ``timestamp`` is a ``date`` for people and tools
  while filters use ``timestamp_us`` (a long, exact microseconds: ``date`` keeps
  milliseconds). The whole record is kept in ``_source`` under ``record`` (an object with
  ``enabled: false``: stored, never indexed).
* Query: a ``bool`` whose ``must`` is a ``multi_match`` over ``title^2`` and ``text`` with
  the user's words as plain text (``most_fields`` sums the fields like the tantivy engine
  does), a ``should`` phrase ``multi_match`` that lifts exact identifiers such as
  ``ERR-4012``, and ``filter`` clauses for the SearchFilter. No ``query_string``, so query
  syntax in user text is inert.
* Writes: bulk requests with ``refresh="wait_for"``. The ES document id is the record id,
  so an upsert of an existing id is one ``index`` op that replaces it. Elasticsearch has no
  multi-document transactions: a concurrent reader may see a bulk half applied, but never
  two versions of one record.
* ``doc_freq``: terms are analysed with the index's own ``text`` analyzer
  (``indices.analyze``) and each analysed term is counted by a size-0 ``term`` search,
  batched in ``_msearch``. Exact over live documents (unlike Lucene term statistics,
  which still count deleted documents until a merge).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from elasticsearch import Elasticsearch, helpers
from elasticsearch.exceptions import BadRequestError

from retrieval.engines.base import Hit, SearchFilter
from retrieval.engines.record_codec import (
    chunk_order_key,
    epoch_micros,
    last_wins,
    order_by_ids,
    record_from_dict,
    record_to_dict,
    to_utc,
    unique,
)
from retrieval.records import Record

# Elasticsearch's default index.max_result_window: deeper pages need scrolling.
MAX_WINDOW = 10_000
MAX_DOC_FREQ_TERMS = 20_000
ANALYZE_BATCH = 200
MSEARCH_BATCH = 200
MGET_BATCH = 1_000
BULK_CHUNK = 500

MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "id": {"type": "keyword"},
        "doc_id": {"type": "keyword"},
        "source": {"type": "keyword"},
        "acl": {"type": "keyword"},
        "timestamp": {"type": "date"},
        "timestamp_us": {"type": "long"},
        "title": {"type": "text", "analyzer": "english"},
        "text": {"type": "text", "analyzer": "english"},
        "record": {"type": "object", "enabled": False},
    },
}


def record_to_source(record: Record) -> dict[str, Any]:
    return {
        "id": record.id,
        "doc_id": record.doc_id,
        "source": record.source,
        "acl": unique(record.acl),
        "timestamp": to_utc(record.timestamp).isoformat(),
        "timestamp_us": epoch_micros(record.timestamp),
        "title": record.title,
        "text": record.text,
        "record": record_to_dict(record),
    }


def filter_clauses(flt: SearchFilter) -> list[dict[str, Any]] | None:
    """``bool.filter`` clauses for ``flt``; ``None`` when the filter admits nothing."""
    clauses: list[dict[str, Any]] = []
    for field, values in (
        ("acl", flt.acl_groups),
        ("source", flt.sources),
        ("doc_id", flt.doc_ids),
    ):
        if values is None:
            continue
        if not values:
            return None  # an empty allow-list allows nothing
        clauses.append({"terms": {field: unique(values)}})
    if flt.time_from is not None or flt.time_to is not None:
        bounds: dict[str, int] = {}
        if flt.time_from is not None:
            bounds["gte"] = epoch_micros(flt.time_from)
        if flt.time_to is not None:
            bounds["lte"] = epoch_micros(flt.time_to)
        clauses.append({"range": {"timestamp_us": bounds}})
    return clauses


def search_query(query: str, flt: SearchFilter, title_boost: float = 2.0) -> dict[str, Any] | None:
    """The full ``query`` body for a search; ``None`` when nothing can match."""
    text = " ".join(query.split())
    filters = filter_clauses(flt)
    if not text or filters is None:
        return None
    fields = [f"title^{title_boost:g}", "text"]
    return {
        "bool": {
            "must": [{"multi_match": {"query": text, "fields": fields, "type": "most_fields"}}],
            "should": [{"multi_match": {"query": text, "fields": fields, "type": "phrase"}}],
            "filter": filters,
        }
    }


class ElasticLexicalEngine:
    """:class:`~retrieval.engines.base.LexicalEngine` on an Elasticsearch index.

    The client belongs to the caller (``close`` does not close it).
    """

    in_process = False  # over the network: calls always run in a worker thread

    def __init__(
        self,
        client: Elasticsearch,
        index: str,
        name: str = "elasticsearch",
        *,
        title_boost: float = 2.0,
    ) -> None:
        self.client = client
        self.index = index
        self.name = name
        self.title_boost = title_boost
        self._ensure_index()

    def _ensure_index(self) -> None:
        if self.client.indices.exists(index=self.index):
            return
        try:
            self.client.indices.create(index=self.index, mappings=MAPPINGS)
        except BadRequestError as exc:
            # Another process created it between exists() and create(): that is fine.
            if exc.message != "resource_already_exists_exception":
                raise

    def _bulk(self, actions: Iterable[dict[str, Any]]) -> None:
        helpers.bulk(
            self.client,
            actions,
            chunk_size=BULK_CHUNK,
            refresh="wait_for",
            # Deleting an id that is not there is not an error.
            ignore_status=(404,),
        )

    # -- LexicalEngine -------------------------------------------------------------------

    def upsert(self, records: Sequence[Record], *, delete_ids: Sequence[str] = ()) -> None:
        batch = last_wins(records)
        if not batch and not delete_ids:
            return
        actions: list[dict[str, Any]] = [
            {"_op_type": "delete", "_index": self.index, "_id": rid} for rid in unique(delete_ids)
        ]
        actions += [
            {
                "_op_type": "index",
                "_index": self.index,
                "_id": record.id,
                "_source": record_to_source(record),
            }
            for record in batch
        ]
        self._bulk(actions)

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        self._bulk({"_op_type": "delete", "_index": self.index, "_id": rid} for rid in unique(ids))

    def delete_source(self, source: str) -> None:
        self.client.delete_by_query(
            index=self.index,
            query={"term": {"source": source}},
            refresh=True,
            conflicts="proceed",
        )

    def search(self, query: str, k: int, flt: SearchFilter) -> list[Hit]:
        if k <= 0:
            return []
        body = search_query(query, flt, self.title_boost)
        if body is None:
            return []
        response = self.client.search(
            index=self.index,
            query=body,
            size=min(k, MAX_WINDOW),
            source_includes=["record"],
            track_total_hits=False,
        )
        hits: list[Hit] = []
        for rank, hit in enumerate(response["hits"]["hits"], start=1):
            record = record_from_dict(hit["_source"]["record"])
            hits.append(Hit(record=record, score=float(hit["_score"]), rank=rank, leg="lexical"))
        return hits

    def get(self, ids: Sequence[str]) -> list[Record]:
        wanted = unique(ids)
        found: list[Record] = []
        for start in range(0, len(wanted), MGET_BATCH):
            batch = wanted[start : start + MGET_BATCH]
            response = self.client.mget(index=self.index, ids=batch, source_includes=["record"])
            found.extend(
                record_from_dict(doc["_source"]["record"])
                for doc in response["docs"]
                if doc.get("found")
            )
        return order_by_ids(wanted, found)

    def ids_for_doc(self, doc_id: str) -> list[str]:
        """Chunk ids of a document, in chunk order (at most ``MAX_WINDOW`` chunks)."""
        response = self.client.search(
            index=self.index,
            query={"term": {"doc_id": doc_id}},
            size=MAX_WINDOW,
            source=False,
            track_total_hits=False,
        )
        ids = [str(hit["_id"]) for hit in response["hits"]["hits"]]
        return sorted(unique(ids), key=chunk_order_key)

    def count(self) -> int:
        return int(self.client.count(index=self.index)["count"])

    def analyse(self, text: str) -> list[str]:
        """The terms ``text`` is indexed as in the ``text`` field (one request)."""
        if not text.strip():
            return []
        response = self.client.indices.analyze(index=self.index, field="text", text=text)
        return [str(token["token"]) for token in response.get("tokens", [])]

    def doc_freq(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """Live-document frequency per analysed term, and the total.

        Terms are analysed by the index's own ``text`` analyzer (batched ``_analyze``
        calls) and counted with size-0 ``term`` searches batched into ``_msearch``:
        exact over live documents, a handful of round trips for a whole vocabulary.
        At most ``MAX_DOC_FREQ_TERMS`` distinct analysed terms are counted.
        """
        total = self.count()
        texts = [t for t in unique(terms) if t.strip()]
        analysed: list[str] = []
        for start in range(0, len(texts), ANALYZE_BATCH):
            response = self.client.indices.analyze(
                index=self.index, field="text", text=texts[start : start + ANALYZE_BATCH]
            )
            analysed.extend(str(token["token"]) for token in response.get("tokens", []))
        vocabulary = unique(analysed)[:MAX_DOC_FREQ_TERMS]
        out: dict[str, int] = {}
        for start in range(0, len(vocabulary), MSEARCH_BATCH):
            batch = vocabulary[start : start + MSEARCH_BATCH]
            searches: list[dict[str, Any]] = []
            for term in batch:
                searches.append({"index": self.index})
                searches.append(
                    {"size": 0, "track_total_hits": True, "query": {"term": {"text": term}}}
                )
            response = self.client.msearch(searches=searches)
            for term, answer in zip(batch, response["responses"], strict=True):
                if "error" in answer:
                    raise RuntimeError(f"doc_freq of {term!r} failed: {answer['error']}")
                out[term] = int(answer["hits"]["total"]["value"])
        return out, total

    def close(self) -> None:
        # The client is the caller's; there is nothing of ours to release.
        return None
