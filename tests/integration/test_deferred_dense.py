"""Qdrant Edge's dense hits carry ids only; their records are fetched together when first
read, under the search's own filter: a record changed or deleted since is gone, never
shown as it is now to a caller who may not see it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from retrieval.engines.base import DeferredHit, SearchFilter, load_records
from retrieval.engines.qdrant_edge import EdgeDenseEngine
from retrieval.records import Meta, Record
from tests.conftest import make_record

pytestmark = pytest.mark.integration

DIM = 4
ENG = SearchFilter.for_groups(["eng"])


def _vec(n: int) -> list[float]:
    return [1.0, n / 10, 0.0, 0.0]


class CountingShard:
    """The engine's shard, counting the fetches (scrolls) made through it."""

    def __init__(self, shard: Any) -> None:
        self.shard, self.scrolls = shard, 0

    def scroll(self, request: Any) -> Any:
        self.scrolls += 1
        return self.shard.scroll(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.shard, name)


@pytest.fixture
def engine(tmp_path: Path) -> Any:
    engine = EdgeDenseEngine(tmp_path / "shard", DIM)
    records = [make_record(f"d{n}", f"text {n}", acl=["eng"]) for n in range(8)]
    engine.upsert(records, [_vec(n) for n in range(8)])
    engine.optimize()
    yield engine
    engine.close()


def _secret(record: Record) -> Record:
    return record.model_copy(update={"metadata": {**record.metadata, Meta.ACL: ["secret"]}})


def test_hits_read_their_records_in_one_fetch(engine: Any) -> None:
    hits = engine.search(_vec(0), 6, ENG)
    assert len(hits) == 6 and all(isinstance(h, DeferredHit) for h in hits)
    counting = engine._shard = CountingShard(engine._shard)
    assert load_records(hits[:4]) == set()
    assert [h.record for h in hits[:4]] == engine.get([h.id for h in hits[:4]])
    assert counting.scrolls == 1  # reading them after the fetch costs nothing more
    assert hits[0].doc_id == hits[0].record.doc_id


def test_a_record_changed_or_deleted_since_the_search_is_gone(engine: Any) -> None:
    hits = engine.search(_vec(0), 4, ENG)
    changed, deleted = hits[1], hits[2]
    engine.upsert([_secret(engine.get([changed.id])[0])], [_vec(1)])
    engine.delete([deleted.id])
    assert load_records(hits) == {changed.id, deleted.id}
    with pytest.raises(LookupError):
        _ = changed.record
    assert hits[0].record.id == hits[0].id and hits[3].record.id == hits[3].id
