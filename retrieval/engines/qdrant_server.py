"""Dense leg on a Qdrant server or cluster through ``qdrant-client``.

Same payload layout and filter semantics as the Edge adapter (see
:mod:`retrieval.engines.payload`). The client may also be in local mode
(``QdrantClient(":memory:")`` / ``QdrantClient(path=...)``): that is a test double for the
client API, not an engine (it scans in Python and ignores payload indexes).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext

from qdrant_client import QdrantClient, models
from qdrant_client.local.qdrant_local import QdrantLocal

from retrieval.engines import payload as pl
from retrieval.engines.base import Hit, SearchFilter
from retrieval.records import Record

_SCROLL_PAGE = 256
_LOCAL_INDEX_WARNING = "Payload indexes have no effect in the local Qdrant"


class QdrantServerDenseEngine:
    """:class:`retrieval.engines.base.DenseEngine` on one Qdrant collection."""

    in_process = False  # over the network: calls always run in a worker thread

    def __init__(
        self,
        client: QdrantClient,
        collection: str,
        dim: int,
        name: str = "qdrant",
        owns_client: bool = False,
    ) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.name = name
        self.client = client
        self.collection = collection
        self.dim = dim
        self._owns_client = owns_client
        # Local mode mutates plain Python/numpy structures with no locking of its own; a
        # server serialises nothing on our side, so only local mode gets a lock.
        self._is_local = isinstance(getattr(client, "_client", None), QdrantLocal)
        self._lock = threading.RLock()
        self._ensure_collection()

    def _guard(self) -> AbstractContextManager[object]:
        return self._lock if self._is_local else nullcontext()

    def _ensure_collection(self) -> None:
        if not self.client.collection_exists(self.collection):
            self.client.create_collection(
                self.collection,
                vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.COSINE),
            )
        info = self.client.get_collection(self.collection)
        vectors = info.config.params.vectors
        if not isinstance(vectors, models.VectorParams):
            raise ValueError(
                f"collection {self.collection!r} has named vectors; expected one unnamed vector"
            )
        if vectors.size != self.dim or vectors.distance != models.Distance.COSINE:
            raise ValueError(
                f"collection {self.collection!r} has vectors of size {vectors.size} "
                f"({vectors.distance}); engine expects {self.dim} (Cosine)"
            )
        present = set(info.payload_schema or {})
        wanted = [(key, models.PayloadSchemaType.KEYWORD) for key in pl.KEYWORD_INDEXED] + [
            (key, models.PayloadSchemaType.DATETIME) for key in pl.DATETIME_INDEXED
        ]
        with _quiet_local_index_warning():
            for key, schema in wanted:
                if key not in present:
                    self.client.create_payload_index(
                        self.collection, field_name=key, field_schema=schema, wait=True
                    )

    # -- writes --

    def upsert(self, records: Sequence[Record], vectors: Sequence[Sequence[float]]) -> None:
        pl.check_batch(records, vectors, self.dim)
        points = [
            models.PointStruct(
                id=pl.point_id(record.id),
                vector=[float(x) for x in vector],
                payload=pl.record_to_payload(record),
            )
            for record, vector in pl.last_wins(records, vectors)
        ]
        if not points:
            return
        with self._guard():
            self.client.upsert(self.collection, points=points, wait=True)

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        selector = models.PointIdsList(points=[pl.point_id(rid) for rid in ids])
        with self._guard():
            self.client.delete(self.collection, points_selector=selector, wait=True)

    def delete_source(self, source: str) -> None:
        flt = models.Filter(
            must=[models.FieldCondition(key=pl.SOURCE, match=models.MatchValue(value=source))]
        )
        with self._guard():
            self.client.delete(
                self.collection, points_selector=models.FilterSelector(filter=flt), wait=True
            )

    def optimize(self) -> None:
        """Nothing to do: the server builds HNSW in its own background optimizers."""

    # -- reads --

    def search(self, vector: Sequence[float], k: int, flt: SearchFilter) -> list[Hit]:
        pl.check_query_vector(vector, self.dim)
        spec = pl.filter_spec(flt)
        if k <= 0 or spec.matches_nothing:
            return []
        with self._guard():
            response = self.client.query_points(
                self.collection,
                query=[float(x) for x in vector],
                query_filter=native_filter(spec),
                limit=k,
                with_payload=True,
                with_vectors=False,
            )
        return pl.dense_hits(response.points)

    def get(self, ids: Sequence[str]) -> list[Record]:
        if not ids:
            return []
        with self._guard():
            found = self.client.retrieve(
                self.collection,
                ids=[pl.point_id(rid) for rid in ids],
                with_payload=True,
                with_vectors=False,
            )
        return pl.records_in_order(ids, found)

    def ids_for_doc(self, doc_id: str) -> list[str]:
        """Record ids of one document's chunks, in chunk order."""
        flt = models.Filter(
            must=[models.FieldCondition(key=pl.DOC_ID, match=models.MatchValue(value=doc_id))]
        )
        points: list[pl.StoredPoint] = []
        offset: models.ExtendedPointId | None = None
        while True:
            with self._guard():
                page, offset = self.client.scroll(
                    self.collection,
                    scroll_filter=flt,
                    limit=_SCROLL_PAGE,
                    offset=offset,
                    with_payload=[pl.RECORD_ID, pl.CHUNK_INDEX],
                    with_vectors=False,
                )
            points.extend(page)
            if offset is None:
                break
        return pl.ids_in_chunk_order(points)

    def count(self) -> int:
        with self._guard():
            return int(self.client.count(self.collection, exact=True).count)

    def close(self) -> None:
        # A shared client (it may serve several collections) is closed by its maker.
        if self._owns_client:
            self.client.close()


@contextmanager
def _quiet_local_index_warning() -> Iterator[None]:
    # Local mode warns that payload indexes do nothing there; the same calls matter on a
    # server, so they are made anyway and only that one warning is silenced.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_LOCAL_INDEX_WARNING)
        yield


def native_filter(spec: pl.FilterSpec) -> models.Filter | None:
    """The qdrant-client filter of a spec (None when it constrains nothing)."""
    if spec.is_empty:
        return None
    must: list[models.Condition] = [
        models.FieldCondition(key=key, match=models.MatchAny(any=list(values)))
        for key, values in spec.matches
    ]
    if spec.time_gte is not None or spec.time_lte is not None:
        must.append(
            models.FieldCondition(
                key=pl.TIMESTAMP,
                range=models.DatetimeRange(gte=spec.time_gte, lte=spec.time_lte),
            )
        )
    return models.Filter(must=must)
