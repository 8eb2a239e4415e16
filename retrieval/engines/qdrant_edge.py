"""Dense leg on Qdrant Edge: the Qdrant engine in-process, one on-disk shard, cosine.

Writes go through one ``update`` call per batch, so a replaced chunk (same id) is swapped
in place and readers never see it missing or doubled. The HNSW graph is built by
:meth:`EdgeDenseEngine.optimize`, which the indexer calls after a batch: queries never
pay for index construction. Filters are Qdrant payload filters inside the query, backed
by keyword indexes on ``acl``/``source``/``doc_id`` and a datetime index on ``timestamp``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import qdrant_edge as qe

from retrieval.engines import payload as pl
from retrieval.engines.base import DeferredHit, Hit, RecordLoader, SearchFilter
from retrieval.records import Record

# Marker files of an existing shard directory (EdgeShard.create refuses such a directory).
_SHARD_MARKERS = ("edge_config.json", "segments")
_SCROLL_PAGE = 256


class EdgeDenseEngine:
    """:class:`retrieval.engines.base.DenseEngine` on a Qdrant Edge shard at ``path``."""

    in_process = True  # no network: short queries run on the loop (retrieval.placement)

    def __init__(self, path: Path, dim: int, name: str = "edge") -> None:
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.name = name
        self.path = Path(path)
        self.dim = dim
        self._closed = False
        config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine))
        if any((self.path / marker).exists() for marker in _SHARD_MARKERS):
            try:
                # Passing the config makes Edge check it against the stored segments.
                self._shard = qe.EdgeShard.load(str(self.path), config)
            except Exception as exc:  # the binding raises bare Exception
                raise ValueError(f"cannot open dense shard at {self.path}: {exc}") from exc
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            self._shard = qe.EdgeShard.create(str(self.path), config)
        self._ensure_indexes()

    def _ensure_indexes(self) -> None:
        present = set(self._shard.info().payload_schema)
        wanted = [(key, qe.PayloadSchemaType.Keyword) for key in pl.KEYWORD_INDEXED] + [
            (key, qe.PayloadSchemaType.Datetime) for key in pl.DATETIME_INDEXED
        ]
        for key, schema in wanted:
            if key not in present:
                self._shard.update(qe.UpdateOperation.create_field_index(key, schema))

    # -- writes --

    def upsert(self, records: Sequence[Record], vectors: Sequence[Sequence[float]]) -> None:
        pl.check_batch(records, vectors, self.dim)
        points = [
            qe.Point(
                id=pl.point_id(record.id),
                vector=[float(x) for x in vector],
                payload=pl.record_to_payload(record),
            )
            for record, vector in pl.last_wins(records, vectors)
        ]
        if points:
            self._shard.update(qe.UpdateOperation.upsert_points(points))

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            point_ids: list[qe.PointId] = [pl.point_id(rid) for rid in ids]
            self._shard.update(qe.UpdateOperation.delete_points(point_ids))

    def delete_source(self, source: str) -> None:
        flt = qe.Filter(must=[qe.FieldCondition(key=pl.SOURCE, match=qe.MatchValue(source))])
        self._shard.update(qe.UpdateOperation.delete_points_by_filter(flt))

    def optimize(self) -> None:
        self._shard.optimize()
        self._shard.flush()

    # -- reads --

    def search(self, vector: Sequence[float], k: int, flt: SearchFilter) -> list[Hit]:
        pl.check_query_vector(vector, self.dim)
        spec = pl.filter_spec(flt)
        if k <= 0 or spec.matches_nothing:
            return []
        # Ids and document ids only (~0.5 ms for 50 points, ~1.4 ms with whole payloads
        # here); the records a result shows are fetched afterwards, in one call.
        points = self._shard.query(
            qe.QueryRequest(
                limit=k,
                query=qe.Query.Nearest([float(x) for x in vector]),
                filter=native_filter(spec),
                with_payload=qe.PayloadSelector.Include([pl.RECORD_ID, pl.DOC_ID]),
                with_vector=False,
            )
        )

        def fetch(ids: Sequence[str]) -> list[Record]:
            # The search's filter, narrowed to these points: a record changed since
            # (its ACL, its source) is fetched only if the caller may still see it.
            points_of = qe.HasIdCondition({pl.point_id(i) for i in ids})
            narrowed = qe.Filter(must=[*native_conditions(spec), points_of])
            found, _ = self._shard.scroll(
                qe.ScrollRequest(limit=len(ids), filter=narrowed, with_payload=True)
            )
            return [pl.payload_to_record(p.payload or {}) for p in found]

        loader = RecordLoader(fetch)
        hits: list[Hit] = []
        for rank, point in enumerate(points, start=1):
            ids = point.payload or {}
            hits.append(
                DeferredHit(
                    str(ids[pl.RECORD_ID]),
                    str(ids[pl.DOC_ID]),
                    loader,
                    float(point.score),
                    rank,
                    "dense",
                )
            )
        return hits

    def get(self, ids: Sequence[str]) -> list[Record]:
        if not ids:
            return []
        point_ids: list[qe.PointId] = [pl.point_id(rid) for rid in ids]
        found = self._shard.retrieve(point_ids, with_payload=True, with_vector=False)
        return pl.records_in_order(ids, found)

    def ids_for_doc(self, doc_id: str) -> list[str]:
        """Record ids of one document's chunks, in chunk order."""
        flt = qe.Filter(must=[qe.FieldCondition(key=pl.DOC_ID, match=qe.MatchValue(doc_id))])
        selector = qe.PayloadSelector.Include([pl.RECORD_ID, pl.CHUNK_INDEX])
        points: list[pl.StoredPoint] = []
        offset: qe.PointId | None = None
        while True:
            page, offset = self._shard.scroll(
                qe.ScrollRequest(
                    offset=offset, limit=_SCROLL_PAGE, filter=flt, with_payload=selector
                )
            )
            points.extend(page)
            if offset is None:
                break
        return pl.ids_in_chunk_order(points)

    def count(self) -> int:
        return int(self._shard.count(qe.CountRequest(exact=True)))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._shard.flush()
        self._shard.close()


def native_filter(spec: pl.FilterSpec) -> qe.Filter | None:
    """The Qdrant Edge filter of a spec (None when it constrains nothing)."""
    if spec.is_empty:
        return None
    return qe.Filter(must=native_conditions(spec))


def native_conditions(spec: pl.FilterSpec) -> list[qe.ConditionType]:
    """The conditions of a spec, all of which must hold."""
    must: list[qe.ConditionType] = [
        qe.FieldCondition(key=key, match=qe.MatchAny(list(values))) for key, values in spec.matches
    ]
    if spec.time_gte is not None or spec.time_lte is not None:
        gte = pl.iso_utc(spec.time_gte) if spec.time_gte is not None else None
        lte = pl.iso_utc(spec.time_lte) if spec.time_lte is not None else None
        must.append(qe.FieldCondition(key=pl.TIMESTAMP, range=qe.RangeDateTime(gte=gte, lte=lte)))
    return must
