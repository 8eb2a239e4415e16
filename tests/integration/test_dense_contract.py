"""Contract of every DenseEngine: real Qdrant Edge on disk, qdrant-client local mode, and
a real Qdrant server when ``WAYPOINT_QDRANT_URL`` is set.

Vectors are small and deterministic (dim 8, fixed seed): the contract is about the
engine, not about an embedding model.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient

from retrieval.engines.base import DenseEngine, SearchFilter
from retrieval.engines.qdrant_edge import EdgeDenseEngine
from retrieval.engines.qdrant_server import QdrantServerDenseEngine
from retrieval.records import Meta, Record

pytestmark = pytest.mark.integration

DIM = 8
T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
ALL = SearchFilter(acl_groups=None)  # trusted: no ACL constraint


def unit(v: np.ndarray) -> list[float]:
    return [float(x) for x in v / np.linalg.norm(v)]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


def rec(
    rid: str,
    text: str | None = None,
    *,
    acl: list[str] | None = None,
    source: str = "wiki",
    ts: datetime = T0,
    **meta: object,
) -> Record:
    doc_id, _, idx = rid.partition("#")
    metadata: dict[str, object] = {
        Meta.DOC_ID: doc_id,
        Meta.CHUNK_INDEX: int(idx or 0),
        Meta.ACL: acl or ["public"],
        **meta,
    }
    return Record(
        id=rid, source=source, text=text or f"text of {rid}", timestamp=ts, metadata=metadata
    )


# -- engines under test --

# Both adapters also offer ids_for_doc (not part of the DenseEngine protocol).
AnyDense = EdgeDenseEngine | QdrantServerDenseEngine
EngineMaker = Callable[[], AnyDense]


@pytest.fixture(params=["edge", "qdrant-local", "qdrant-server"])
def make_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EngineMaker]:
    """A factory that opens the engine on the same storage each call (for reopen tests)."""
    opened: list[AnyDense] = []
    cleanup: list[Callable[[], None]] = []
    kind = request.param

    if kind == "edge":

        def make() -> AnyDense:
            return EdgeDenseEngine(tmp_path / "shard", DIM)

    elif kind == "qdrant-local":

        def make() -> AnyDense:
            client = QdrantClient(path=str(tmp_path / "local"))
            return QdrantServerDenseEngine(client, "chunks", DIM, owns_client=True)

    else:
        url = os.environ.get("WAYPOINT_QDRANT_URL")
        if not url:
            pytest.skip("WAYPOINT_QDRANT_URL not set: no Qdrant server to test against")
        collection = f"waypoint_test_{uuid.uuid4().hex[:12]}"
        client = QdrantClient(url=url, api_key=os.environ.get("WAYPOINT_QDRANT_API_KEY"))

        def drop() -> None:
            client.delete_collection(collection)

        cleanup.append(drop)
        cleanup.append(client.close)

        def make() -> AnyDense:
            return QdrantServerDenseEngine(client, collection, DIM)

    def tracked() -> AnyDense:
        engine = make()
        opened.append(engine)
        return engine

    yield tracked
    for engine in opened:
        engine.close()
    for step in cleanup:
        step()


@pytest.fixture
def engine(make_engine: EngineMaker) -> AnyDense:
    return make_engine()


# -- cases --


def test_is_a_dense_engine(engine: AnyDense) -> None:
    assert isinstance(engine, DenseEngine)
    assert engine.count() == 0
    assert engine.search(unit(np.ones(DIM)), 5, ALL) == []


def test_nearest_first_with_record_intact(engine: AnyDense, rng: np.random.Generator) -> None:
    query = rng.normal(size=DIM)
    # Increasing noise: r0 is nearest to the query, r4 farthest.
    noise = rng.normal(size=DIM)
    vectors = [unit(query + 0.3 * i * noise) for i in range(5)]
    records = [
        rec(f"wiki:d{i}#0", f"passage {i}", title=f"Doc {i}", heading_path=["A", str(i)])
        for i in range(5)
    ]
    engine.upsert(records[::-1], vectors[::-1])  # insertion order must not matter
    engine.optimize()

    hits = engine.search(unit(query), 3, SearchFilter.for_groups([]))

    assert [h.id for h in hits] == ["wiki:d0#0", "wiki:d1#0", "wiki:d2#0"]
    assert [h.rank for h in hits] == [1, 2, 3]
    assert all(h.leg == "dense" for h in hits)
    assert hits[0].score > hits[1].score > hits[2].score
    top = hits[0].record
    assert top == records[0]  # text, source, timestamp and metadata survive the payload
    assert top.metadata["heading_path"] == ["A", "0"]


def test_acl_filter_is_inside_the_query(engine: AnyDense, rng: np.random.Generator) -> None:
    query = rng.normal(size=DIM)
    secret = rec("fin:budget#0", "budget 2024", acl=["finance"])
    open_ = rec("wiki:howto#0", "how to", acl=["eng"])
    # The restricted record IS the query vector: a post-filter over top-1 would return nothing.
    engine.upsert([secret, open_], [unit(query), unit(query + rng.normal(size=DIM))])

    as_eng = engine.search(unit(query), 1, SearchFilter.for_groups(["eng"]))
    as_public = engine.search(unit(query), 10, SearchFilter(acl_groups=("public",)))
    as_finance = engine.search(unit(query), 1, SearchFilter(acl_groups=("finance",)))
    as_nobody = engine.search(unit(query), 10, SearchFilter(acl_groups=()))

    assert [h.id for h in as_eng] == ["wiki:howto#0"]
    assert as_public == []
    assert [h.id for h in as_finance] == ["fin:budget#0"]
    assert as_nobody == []
    assert {h.id for h in engine.search(unit(query), 10, ALL)} == {secret.id, open_.id}


def test_source_doc_and_time_filters(engine: AnyDense, rng: np.random.Generator) -> None:
    day = timedelta(days=1)
    records = [
        rec("wiki:a#0", source="wiki", ts=T0),
        rec("wiki:a#1", source="wiki", ts=T0 + day),
        rec("slack:t#0", source="slack", ts=T0 + 2 * day),
        rec("jira:k#0", source="jira", ts=T0 + 3 * day),
    ]
    engine.upsert(records, [unit(rng.normal(size=DIM)) for _ in records])
    query = unit(rng.normal(size=DIM))

    def ids(flt: SearchFilter) -> set[str]:
        return {h.id for h in engine.search(query, 10, flt)}

    pub = SearchFilter.for_groups
    assert ids(pub([], sources=("slack", "jira"))) == {"slack:t#0", "jira:k#0"}
    assert ids(pub([], doc_ids=("wiki:a",))) == {"wiki:a#0", "wiki:a#1"}
    assert ids(pub([], sources=())) == set()
    assert ids(pub([], time_from=T0 + day, time_to=T0 + 2 * day)) == {"wiki:a#1", "slack:t#0"}
    assert ids(pub([], time_from=T0 + 3 * day)) == {"jira:k#0"}
    assert ids(pub([], time_to=T0)) == {"wiki:a#0"}
    # A naive bound is read as UTC, like a naive record timestamp.
    assert ids(pub([], time_to=(T0 + day).replace(tzinfo=None))) == {"wiki:a#0", "wiki:a#1"}
    # Constraints combine (AND).
    assert ids(pub([], sources=("wiki",), time_from=T0 + day)) == {"wiki:a#1"}


def test_reupsert_same_id_replaces(engine: AnyDense, rng: np.random.Generator) -> None:
    old_vec, new_vec = unit(rng.normal(size=DIM)), unit(rng.normal(size=DIM))
    engine.upsert([rec("wiki:a#0", "old"), rec("wiki:b#0", "other")], [old_vec, new_vec])
    engine.upsert([rec("wiki:a#0", "new", acl=["eng"])], [new_vec])

    assert engine.count() == 2
    [got] = engine.get(["wiki:a#0"])
    assert got.text == "new"
    assert got.acl == ["eng"]
    # The replaced payload is what the filter sees: the old ACL no longer matches.
    public_hits = engine.search(new_vec, 10, SearchFilter(acl_groups=("public",)))
    assert [h.id for h in public_hits] == ["wiki:b#0"]


def test_get_keeps_order_and_skips_missing(engine: AnyDense, rng: np.random.Generator) -> None:
    records = [rec(f"wiki:a#{i}") for i in range(3)]
    engine.upsert(records, [unit(rng.normal(size=DIM)) for _ in records])

    got = engine.get(["wiki:a#2", "nope", "wiki:a#0"])

    assert [r.id for r in got] == ["wiki:a#2", "wiki:a#0"]
    assert engine.get([]) == []


def test_ids_for_doc_in_chunk_order(engine: AnyDense, rng: np.random.Generator) -> None:
    records = [rec(f"wiki:a#{i}") for i in (10, 2, 0, 1)] + [rec("wiki:b#0")]
    engine.upsert(records, [unit(rng.normal(size=DIM)) for _ in records])

    assert engine.ids_for_doc("wiki:a") == ["wiki:a#0", "wiki:a#1", "wiki:a#2", "wiki:a#10"]
    assert engine.ids_for_doc("wiki:zzz") == []


def test_delete_and_delete_source(engine: AnyDense, rng: np.random.Generator) -> None:
    records = [
        rec("wiki:a#0", source="wiki"),
        rec("wiki:a#1", source="wiki"),
        rec("slack:t#0", source="slack"),
        rec("slack:t#1", source="slack"),
    ]
    engine.upsert(records, [unit(rng.normal(size=DIM)) for _ in records])
    query = unit(rng.normal(size=DIM))

    engine.delete(["wiki:a#1", "never-existed"])
    assert engine.count() == 3
    assert engine.get(["wiki:a#1"]) == []

    engine.delete_source("slack")
    assert engine.count() == 1
    assert [h.id for h in engine.search(query, 10, ALL)] == ["wiki:a#0"]


def test_bad_batches_are_rejected_before_writing(engine: AnyDense) -> None:
    with pytest.raises(ValueError, match="2 records but 1 vectors"):
        engine.upsert([rec("wiki:a#0"), rec("wiki:a#1")], [[1.0] * DIM])
    with pytest.raises(ValueError, match="dimensions"):
        engine.upsert([rec("wiki:a#0"), rec("wiki:a#1")], [[1.0] * DIM, [1.0] * (DIM - 1)])
    with pytest.raises(ValueError, match="dimensions"):
        engine.search([1.0] * (DIM + 1), 3, ALL)
    assert engine.count() == 0


def test_reopen_keeps_data(make_engine: EngineMaker, rng: np.random.Generator) -> None:
    first = make_engine()
    vec = unit(rng.normal(size=DIM))
    first.upsert([rec("wiki:a#0", "persisted", acl=["eng"])], [vec])
    first.optimize()
    first.close()

    again = make_engine()

    assert again.count() == 1
    hits = again.search(vec, 1, SearchFilter.for_groups(["eng"]))
    assert [h.record.text for h in hits] == ["persisted"]
    # Indexes and filters still hold after reopening.
    assert again.search(vec, 1, SearchFilter(acl_groups=("finance",))) == []


def test_reopen_with_other_dim_is_a_clear_error(tmp_path: Path) -> None:
    EdgeDenseEngine(tmp_path / "shard", DIM).close()
    with pytest.raises(ValueError, match="cannot open dense shard"):
        EdgeDenseEngine(tmp_path / "shard", DIM * 2)
    client = QdrantClient(":memory:")
    QdrantServerDenseEngine(client, "c", DIM)
    with pytest.raises(ValueError, match="engine expects 16"):
        QdrantServerDenseEngine(client, "c", DIM * 2)


def test_reader_never_sees_a_document_missing_or_doubled(
    engine: AnyDense, rng: np.random.Generator
) -> None:
    chunks = 6
    doc = [f"wiki:live#{i}" for i in range(chunks)]
    others = [rec(f"wiki:other{i}#0") for i in range(40)]
    engine.upsert(others, [unit(rng.normal(size=DIM)) for _ in others])
    vectors = [unit(rng.normal(size=DIM)) for _ in range(chunks)]
    engine.upsert([rec(cid, "gen 0") for cid in doc], vectors)
    engine.optimize()
    query = unit(rng.normal(size=DIM))
    only_doc = SearchFilter.for_groups([], doc_ids=("wiki:live",))

    done = threading.Event()
    seen: list[list[str]] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            # Bounded: at most 2000 reads, stops as soon as the writer is done.
            for _ in range(2000):
                seen.append([h.id for h in engine.search(query, 50, only_doc)])
                if done.is_set():
                    break
        except BaseException as exc:  # handed to the main thread, which re-raises it
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for gen in range(1, 40):
            engine.upsert([rec(cid, f"gen {gen}") for cid in doc], vectors[::-1])
            if gen % 10 == 0:
                engine.optimize()
    finally:
        done.set()
        thread.join()

    assert not errors, errors
    assert seen
    bad = [ids for ids in seen if sorted(ids) != sorted(doc)]
    assert bad == []
    assert engine.count() == 40 + chunks
    assert {r.text for r in engine.get(doc)} == {"gen 39"}
