"""Orchestration of hybrid_search with fake engines (no models, no disk).

The real engines are exercised in tests/integration/test_pipeline.py; here the point is
the wiring: which query each leg gets, depth, degradation, fusion, cap, signals, expansion.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from retrieval.engines.base import DeferredHit, Hit, RecordLoader, SearchFilter
from retrieval.leg_cache import DenseLegCache
from retrieval.pipeline import SearchFailed, hybrid_search, narrow_filter, recall_depth
from retrieval.records import Record
from retrieval.rerank import NO_MODEL_WARNING
from retrieval.search_models import SearchOptions
from tests.conftest import make_record

PUBLIC = SearchFilter.for_groups([])


def _rec(doc: str, index: int = 0, text: str | None = None, **kw: Any) -> Record:
    return make_record(doc, text or f"text of {doc} part {index}", index=index, **kw)


@dataclass
class FakeLexical:
    ranked: list[Record]
    name: str = "fake-lexical"
    fail: Exception | None = None
    block: threading.Event | None = None

    def __post_init__(self) -> None:
        self.calls: list[tuple[str, int, SearchFilter]] = []

    def search(self, query: str, k: int, flt: SearchFilter) -> list[Hit]:
        self.calls.append((query, k, flt))
        if self.block is not None:
            self.block.wait(5)
        if self.fail:
            raise self.fail
        return [
            Hit(record=r, score=10.0 - n, rank=n + 1, leg="lexical")
            for n, r in enumerate(self.ranked[:k])
        ]

    def doc_freq(self, terms: Sequence[str]) -> tuple[Mapping[str, int], int]:
        # "filler" words are everywhere, everything else is rare.
        return {t: (100 if t in {"ok", "thanks", "sure"} else 1) for t in terms}, 100


@dataclass
class FakeDense:
    ranked: list[Record]
    name: str = "fake-dense"
    fail: Exception | None = None

    def __post_init__(self) -> None:
        self.calls: list[tuple[list[float], int]] = []

    def search(self, vector: Sequence[float], k: int, flt: SearchFilter) -> list[Hit]:
        self.calls.append((list(vector), k))
        if self.fail:
            raise self.fail
        return [
            Hit(record=r, score=0.9 - n / 100, rank=n + 1, leg="dense")
            for n, r in enumerate(self.ranked[:k])
        ]


class FakeEmbedder:
    name = "fake"
    dim = 2

    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return [[1.0, 0.0] for _ in texts]


class FakeStore:
    def __init__(
        self,
        lexical: list[Record],
        dense: list[Record],
        size: int = 100,
        documents: list[Record] | None = None,
    ) -> None:
        self.lexical = FakeLexical(lexical)
        self.dense = FakeDense(dense)
        self.embedder = FakeEmbedder()
        self.settings = SimpleNamespace(rerank_model=None)
        self.size = size
        self.documents = documents or []

    def corpus_size(self) -> int:
        return self.size

    def neighbors(self, chunk_id: str, flt: SearchFilter, window: int = 1) -> list[Record]:
        me = next(r for r in self.documents if r.id == chunk_id)
        return [
            r
            for r in self.documents
            if r.doc_id == me.doc_id
            and r.id != me.id
            and abs(r.chunk_index - me.chunk_index) <= window
        ]


A, B, C, D = _rec("a"), _rec("b"), _rec("c"), _rec("d")


async def test_legs_get_their_queries_and_fuse_by_rank() -> None:
    store = FakeStore(lexical=[A, B, C], dense=[B, D, A])
    result = await hybrid_search(store, "What is the retry policy?", PUBLIC)
    assert result.rewritten_query == "retry policy"
    assert store.lexical.calls[0][0] == "retry policy"
    assert store.embedder.texts == ["What is the retry policy?"]  # dense embeds the question
    assert result.leg_queries == {"lexical": "retry policy", "dense": "What is the retry policy?"}
    # a: 1/61 + 1/63 > b: 1/62 + 1/61 ... see tests/unit/test_fusion.py for the arithmetic.
    assert [i.id for i in result.fused] == [B.id, A.id, D.id, C.id]
    assert [h.id for h in result.hits] == [B.id, A.id, D.id, C.id]
    assert result.legs["lexical"][0].title == "a"
    assert [i.rank for i in result.legs["dense"]] == [1, 2, 3]
    assert result.fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    hit = result.hits[0]
    assert hit.locator.chunk_id == B.id and hit.locator.doc_id == "test:b"
    assert hit.text == B.text and hit.source == "test" and hit.title == "b"
    assert {"rewrite", "lexical", "dense", "fuse", "rerank", "expand", "total"} <= set(
        result.timings_ms
    )


async def test_explain_depth_shortens_the_lists_not_the_search() -> None:
    lexical, dense = [A, B, C, _rec("e")], [B, D, A, _rec("f")]
    full = await hybrid_search(FakeStore(lexical, dense), "retry policy", PUBLIC)
    short = await hybrid_search(
        FakeStore(lexical, dense), "retry policy", PUBLIC, SearchOptions(explain_depth=2)
    )
    # Fusion, cap and hits see every candidate; only the reported lists are cut.
    assert [h.id for h in short.hits] == [h.id for h in full.hits]
    assert len(full.fused) == 6 and len(full.legs["lexical"]) == 4
    for leg in ("lexical", "dense"):
        assert short.legs[leg] == full.legs[leg][:2]
    assert short.fused == full.fused[:2] and short.capped == full.capped[:2]


async def test_dense_can_embed_the_rewritten_query() -> None:
    store = FakeStore(lexical=[A], dense=[A])
    await hybrid_search(
        store, "what is the retry policy?", PUBLIC, SearchOptions(dense_query="rewritten")
    )
    assert store.embedder.texts == ["retry policy"]


async def test_only_requested_legs_run() -> None:
    store = FakeStore(lexical=[A, B], dense=[C])
    result = await hybrid_search(store, "retry", PUBLIC, SearchOptions(legs=["lexical"]))
    assert store.dense.calls == [] and store.embedder.texts == []
    assert list(result.legs) == ["lexical"]
    assert [h.id for h in result.hits] == [A.id, B.id]
    assert "dense" not in result.timings_ms
    with pytest.raises(ValueError):
        await hybrid_search(store, "retry", PUBLIC, SearchOptions(legs=["sparse"]))


async def test_failed_leg_degrades_with_a_warning() -> None:
    store = FakeStore(lexical=[A, B], dense=[C])
    store.dense.fail = RuntimeError("shard closed")
    result = await hybrid_search(store, "retry", PUBLIC)
    assert result.warnings[0] == "dense leg failed: RuntimeError: shard closed"
    assert [h.id for h in result.hits] == [A.id, B.id]
    assert "dense" not in result.legs


async def test_every_leg_failing_raises() -> None:
    store = FakeStore(lexical=[A], dense=[A])
    store.lexical.fail = OSError("disk gone")
    store.dense.fail = RuntimeError("shard closed")
    with pytest.raises(SearchFailed) as info:
        await hybrid_search(store, "retry", PUBLIC)
    assert len(info.value.warnings) == 2
    assert info.value.legs == ["lexical", "dense"]


async def test_slow_leg_times_out_and_degrades() -> None:
    store = FakeStore(lexical=[A], dense=[B])
    release = threading.Event()
    store.lexical.block = release
    try:
        result = await hybrid_search(store, "retry", PUBLIC, SearchOptions(leg_timeout_s=0.05))
    finally:
        release.set()
    assert result.warnings[0] == "lexical leg failed: timed out after 0.05s"
    assert [h.id for h in result.hits] == [B.id]


async def test_a_search_cancelled_while_a_leg_runs_is_cancelled_not_degraded() -> None:
    class Gate:
        """Blocks the leg (in its thread) and says when it got there."""

        def __init__(self) -> None:
            self.entered, self.release = threading.Event(), threading.Event()

        def wait(self, timeout: float) -> bool:
            self.entered.set()
            return self.release.wait(timeout)

    store = FakeStore(lexical=[A], dense=[B])
    gate = Gate()
    store.lexical.block = gate  # type: ignore[assignment]
    search = asyncio.ensure_future(
        hybrid_search(store, "retry", PUBLIC, SearchOptions(leg_timeout_s=5.0))
    )
    try:
        assert await asyncio.to_thread(gate.entered.wait, 5)  # the lexical leg is running
        search.cancel()
        with pytest.raises(asyncio.CancelledError):
            await search
    finally:
        gate.release.set()


@pytest.mark.parametrize(
    ("size", "k", "requested", "expected"),
    [(0, 10, None, 20), (300, 10, None, 30), (100_000, 10, None, 50), (100_000, 80, None, 80),
     (1000, 10, 5, 10), (1000, 10, 120, 120)],
)  # fmt: skip
def test_recall_depth(size: int, k: int, requested: int | None, expected: int) -> None:
    assert recall_depth(size, k, requested) == expected


async def test_depth_reaches_the_engines() -> None:
    store = FakeStore(lexical=[A], dense=[A], size=400)
    result = await hybrid_search(store, "retry", PUBLIC)
    assert result.depth == 40 and result.corpus_size == 400
    assert store.lexical.calls[0][1] == 40 and store.dense.calls[0][1] == 40


async def test_per_doc_cap_round_robin_in_result() -> None:
    a0, a1, a2 = _rec("a", 0), _rec("a", 1), _rec("a", 2)
    store = FakeStore(lexical=[a0, a1, a2, B], dense=[])
    result = await hybrid_search(store, "x", PUBLIC, SearchOptions(per_doc_cap=2))
    assert [i.id for i in result.fused] == [a0.id, a1.id, a2.id, B.id]
    assert [i.id for i in result.capped] == [a0.id, B.id, a1.id]
    assert [h.id for h in result.hits] == [a0.id, B.id, a1.id]


async def test_rerank_without_model_is_skipped_visibly() -> None:
    store = FakeStore(lexical=[A], dense=[A])
    result = await hybrid_search(store, "retry", PUBLIC)
    assert result.reranked is None and result.rerank_model is None
    assert NO_MODEL_WARNING in result.warnings
    store.settings.rerank_model = "/nonexistent/cross-encoder"
    result = await hybrid_search(store, "retry", PUBLIC)
    assert any(w.startswith(NO_MODEL_WARNING) and "/nonexistent" in w for w in result.warnings)
    quiet = await hybrid_search(store, "retry", PUBLIC, SearchOptions(rerank=False))
    assert quiet.warnings == [] and quiet.reranked is None


async def test_idf_gate_drops_filler_and_is_recorded() -> None:
    filler = _rec("chat", text="ok thanks sure")
    store = FakeStore(lexical=[filler, A], dense=[])
    plain = await hybrid_search(store, "x", PUBLIC, SearchOptions(rerank=False))
    assert [h.id for h in plain.hits] == [filler.id, A.id] and plain.signals == {}
    gated = await hybrid_search(store, "x", PUBLIC, SearchOptions(rerank=False, idf_gate=2.0))
    assert [h.id for h in gated.hits] == [A.id]
    assert gated.signals["idf_gate"]["dropped"] == [filler.id]
    assert gated.signals["idf_gate"]["mean_idf"][A.id] > 2.0


async def test_age_decay_reorders_and_is_recorded() -> None:
    now = datetime.now(UTC)
    old = _rec("old", timestamp=now - timedelta(days=365))
    new = _rec("new", timestamp=now - timedelta(days=1))
    store = FakeStore(lexical=[old, new], dense=[])
    plain = await hybrid_search(store, "x", PUBLIC, SearchOptions(rerank=False))
    assert [h.id for h in plain.hits] == [old.id, new.id]
    opts = SearchOptions(rerank=False, age_decay_half_life_days=30)
    decayed = await hybrid_search(store, "x", PUBLIC, opts)
    assert [h.id for h in decayed.hits] == [new.id, old.id]
    factors = decayed.signals["age_decay"]["factors"]
    assert factors[old.id] == pytest.approx(0.5 ** (365 / 30), rel=1e-2)
    assert decayed.hits[0].score == pytest.approx(1 / 62 * factors[new.id], rel=1e-4)


async def test_neighbour_expansion_adds_adjacent_sections_once() -> None:
    d0, d1, d2, d3 = (_rec("d", i) for i in range(4))
    e0, e1 = _rec("e", 0), _rec("e", 1)
    store = FakeStore(lexical=[d1, e0, d2], dense=[], documents=[d0, d1, d2, d3, e0, e1])
    opts = SearchOptions(rerank=False, expand_neighbors=2, per_doc_cap=3)
    result = await hybrid_search(store, "x", PUBLIC, opts)
    # d1 -> d0 (d2 is already a hit); e0 -> e1; d2 is third, beyond the top 2: not expanded.
    assert [(h.id, h.expanded_from) for h in result.hits] == [
        (d1.id, None), (d0.id, d1.id), (e0.id, None), (e1.id, e0.id), (d2.id, None),
    ]  # fmt: skip


def test_options_narrow_but_never_widen_the_filter() -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    flt = SearchFilter(acl_groups=("eng", "public"), sources=("wiki", "slack"), time_from=t0)
    narrowed = narrow_filter(
        flt, SearchOptions(sources=["slack", "jira"], time_from=t0 - timedelta(days=9))
    )
    assert narrowed.sources == ("slack",)
    assert narrowed.time_from == t0
    assert narrowed.acl_groups == ("eng", "public")


async def test_empty_query_is_rejected() -> None:
    with pytest.raises(ValueError):
        await hybrid_search(FakeStore([], []), "   ", PUBLIC)


class InProcessLexical(FakeLexical):
    """An engine that says it runs in this process (hashable, as real engines are)."""

    in_process = True
    __hash__ = object.__hash__


async def test_a_leg_run_on_the_loop_that_overruns_its_timeout_fails_as_timed_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An in-process engine's short calls run on the event loop (retrieval.placement),
    # where they cannot be interrupted: one that overran is still reported as timed out
    # (the lexical leg alone here, so that nothing else waits behind the blocked loop).
    store = FakeStore(lexical=[A], dense=[B])
    lexical = InProcessLexical(store.lexical.ranked)
    store.lexical = lexical  # type: ignore[assignment]
    only_lexical = SearchOptions(legs=["lexical"], rerank=False, leg_timeout_s=0.05)
    first = await hybrid_search(store, "retry", PUBLIC, only_lexical)
    assert first.warnings == [] and [h.id for h in first.hits] == [A.id]
    slow = lexical.search

    def overrun(query: str, k: int, flt: SearchFilter) -> list[Hit]:
        time.sleep(0.08)
        return slow(query, k, flt)

    monkeypatch.setattr(lexical, "search", overrun)
    with pytest.raises(SearchFailed) as info:
        await hybrid_search(store, "retry", PUBLIC, only_lexical)
    assert info.value.warnings == ["lexical leg failed: timed out after 0.05s"]


class DeferredDense(FakeDense):
    """Dense hits that fetch their records when read; ``gone``: changed since the search."""

    def __init__(self, ranked: list[Record], gone: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        super().__init__(ranked)
        self.gone = set(gone)
        self.fetches: list[list[str]] = []

    def search(self, vector: Sequence[float], k: int, flt: SearchFilter) -> list[Hit]:
        by_id = {r.id: r for r in self.ranked}

        def fetch(ids: Sequence[str]) -> list[Record]:
            self.fetches.append(list(ids))
            return [by_id[i] for i in ids if i not in self.gone]

        loader = RecordLoader(fetch)
        return [
            DeferredHit(r.id, r.doc_id, loader, 0.9 - n / 100, n + 1, "dense")
            for n, r in enumerate(self.ranked[:k])
        ]


async def test_deferred_dense_hits_fetch_only_what_the_result_shows_in_one_call() -> None:
    many = [_rec(f"d{n}") for n in range(30)]
    store = FakeStore(lexical=[A, B], dense=[B, *many])
    store.dense = DeferredDense(store.dense.ranked)
    result = await hybrid_search(store, "retry policy", PUBLIC, SearchOptions(k=3, explain_depth=3))
    assert len(store.dense.fetches) == 1  # one call for the whole result
    fetched = set(store.dense.fetches[0])
    # B is held by the lexical leg; the dense-only hits the lists and the top 3 show, only.
    shown = (
        {i.id for i in result.legs["dense"]}
        | {i.id for i in result.fused}
        | {h.id for h in result.hits}
    )
    assert fetched == shown - {A.id, B.id}
    assert len(fetched) < 30
    assert result.legs["dense"][1].title == "d0" and result.hits[0].text == B.text


async def test_a_deferred_hit_gone_since_the_search_is_dropped_and_the_next_one_shown() -> None:
    d0, d1, d2, d3 = (_rec(f"d{n}") for n in range(4))
    store = FakeStore(lexical=[], dense=[d0, d1, d2, d3])
    store.dense = DeferredDense(store.dense.ranked, gone={d1.id})
    result = await hybrid_search(
        store, "retry policy", PUBLIC, SearchOptions(k=3, explain_depth=3, legs=["dense"])
    )
    assert [h.id for h in result.hits] == [d0.id, d2.id, d3.id]
    assert d1.id not in {i.id for i in result.legs["dense"]} | {i.id for i in result.fused}
    assert [i.id for i in result.legs["dense"]] == [d0.id, d2.id, d3.id]


async def test_lists_shown_deeper_than_the_hits_read_every_record_they_name() -> None:
    # the cap drops z#2, so the capped list's 4th entry lies past the fused list's top 4
    z = [_rec("z", n) for n in range(3)]
    store = FakeStore(lexical=[*z, A, B], dense=[])
    store.dense = DeferredDense([*z, A, B])
    result = await hybrid_search(
        store, "retry policy", PUBLIC, SearchOptions(k=2, explain_depth=4, rerank=False)
    )
    assert [i.id for i in result.capped] == [z[0].id, A.id, B.id, z[1].id]
    assert all(i.title for i in result.capped)
    assert len(result.hits) == 2


class FailingFetchDense(DeferredDense):
    def search(self, vector: Sequence[float], k: int, flt: SearchFilter) -> list[Hit]:
        def fetch(ids: Sequence[str]) -> list[Record]:
            raise OSError("shard closed")

        loader = RecordLoader(fetch)
        return [
            DeferredHit(r.id, r.doc_id, loader, 0.9 - n / 100, n + 1, "dense")
            for n, r in enumerate(self.ranked[:k])
        ]


async def test_a_dense_leg_whose_records_cannot_be_read_degrades_like_a_failed_leg() -> None:
    store = FakeStore(lexical=[A, B], dense=[])
    store.dense = FailingFetchDense([C, D])
    result = await hybrid_search(store, "retry policy", PUBLIC, SearchOptions(k=3))
    assert [h.id for h in result.hits] == [A.id, B.id]
    assert "dense" not in result.legs
    assert any(
        w.startswith("dense leg failed: its records could not be read") for w in result.warnings
    )
    with pytest.raises(SearchFailed):
        await hybrid_search(store, "retry policy", PUBLIC, SearchOptions(k=3, legs=["dense"]))


# -- a research run's searches share a dense leg that repeats (retrieval.leg_cache) --

E = _rec("e")


class CountingDense(DeferredDense):
    """Deferred dense hits; every engine query counted, ``fail`` raised when set."""

    def search(self, vector: Sequence[float], k: int, flt: SearchFilter) -> list[Hit]:
        self.calls.append((list(vector), k))
        if self.fail:
            raise self.fail
        return super().search(vector, k, flt)


class VersionedStore(FakeStore):
    """A store whose content version an ingest bumps (retrieval.store.Store.version)."""

    def __init__(self, lexical: list[Record], dense: list[Record]) -> None:
        super().__init__(lexical=lexical, dense=dense)
        self.dense = CountingDense(dense)
        self.content_version = 1

    def version(self) -> int:
        return self.content_version


def _ids(result: object) -> list[str]:
    return [h.id for h in result.hits]  # type: ignore[attr-defined]


async def _search(store: FakeStore, query: str, cache: DenseLegCache | None, **kw: object):  # type: ignore[no-untyped-def]
    return await hybrid_search(store, query, PUBLIC, SearchOptions(k=4, **kw), dense_cache=cache)


async def test_concurrent_searches_with_one_dense_query_query_the_engine_once() -> None:
    store = VersionedStore(lexical=[A, B], dense=[C, D, E])
    cache = DenseLegCache()
    # Same dense text (the fake embeds every text to one vector), different words.
    first, second = await asyncio.gather(
        _search(store, "retry policy", cache), _search(store, "backoff policy", cache)
    )
    assert len(store.dense.calls) == 1
    assert cache.shared == 1
    # The ranking is shared, the records are not: each search fetches what it shows.
    assert len(store.dense.fetches) == 2

    alone = VersionedStore(lexical=[A, B], dense=[C, D, E])
    assert _ids(first) == _ids(await _search(alone, "retry policy", None))
    assert _ids(second) == _ids(await _search(alone, "backoff policy", None))
    assert [h.text for h in second.hits] == [h.text for h in first.hits]


async def test_a_record_revoked_after_the_shared_query_is_dropped_by_every_later_search() -> None:
    store = VersionedStore(lexical=[A], dense=[C, D])
    cache = DenseLegCache()
    first = await _search(store, "retry policy", cache)
    assert C.id in _ids(first)
    # Its ACL changed in the engine; the catalog's version bump has not landed yet.
    store.dense.gone.add(C.id)
    second = await _search(store, "retry policy", cache)
    assert cache.shared == 1 and len(store.dense.calls) == 1
    assert C.id not in _ids(second) and D.id in _ids(second)
    assert C.id not in {i.id for i in second.legs["dense"]}


async def test_a_leg_whose_records_came_with_the_query_is_not_shared() -> None:
    store = VersionedStore(lexical=[A], dense=[C, D])
    store.dense = FakeDense([C, D])  # plain hits: the record read with the query
    cache = DenseLegCache()
    first, second = await asyncio.gather(
        _search(store, "retry policy", cache), _search(store, "backoff policy", cache)
    )
    await _search(store, "retry policy", cache)
    assert len(store.dense.calls) == 3 and cache.shared == 0
    assert _ids(first)[:2] == _ids(second)[:2]


async def test_a_search_whose_shared_leg_times_out_degrades_and_the_next_one_gets_it() -> None:
    store = VersionedStore(lexical=[A], dense=[C, D])
    release = threading.Event()
    slow = store.dense.search

    def blocking(vector: Sequence[float], k: int, flt: SearchFilter) -> list[Hit]:
        release.wait(5)
        return slow(vector, k, flt)

    store.dense.search = blocking  # type: ignore[method-assign]
    store.dense.in_process = False  # a network engine: its calls run in a thread
    cache = DenseLegCache()
    impatient = await _search(store, "retry policy", cache, leg_timeout_s=0.05)
    assert any(w.startswith("dense leg failed: timed out") for w in impatient.warnings)
    release.set()
    patient = await _search(store, "retry policy", cache)
    assert len(store.dense.calls) == 1 and cache.shared == 1
    assert C.id in _ids(patient)


async def test_a_changed_content_version_or_another_depth_queries_again() -> None:
    store = VersionedStore(lexical=[A], dense=[C, D])
    cache = DenseLegCache()
    await _search(store, "retry policy", cache)
    store.content_version += 1  # an ingest, a delete or an ACL change in between
    await _search(store, "retry policy", cache)
    await _search(store, "retry policy", cache, depth=7)
    assert len(store.dense.calls) == 3
    assert cache.shared == 0


async def test_a_failed_leg_is_forgotten_and_runs_again() -> None:
    store = VersionedStore(lexical=[A], dense=[C, D])
    cache = DenseLegCache()
    store.dense.fail = OSError("shard closed")
    failed = await _search(store, "retry policy", cache)
    assert any(w.startswith("dense leg failed: OSError") for w in failed.warnings)
    store.dense.fail = None
    recovered = await _search(store, "retry policy", cache)
    assert len(store.dense.calls) == 2
    assert C.id in _ids(recovered)


async def test_a_search_that_stops_waiting_leaves_the_shared_leg_running() -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def slow() -> list[Hit]:
        started.set()
        await release.wait()
        return [Hit(record=C, score=1.0, rank=1, leg="dense")]

    cache = DenseLegCache()
    key = (1, b"v", 10, PUBLIC)
    impatient = asyncio.ensure_future(cache.hits(key, slow))
    await started.wait()
    patient = asyncio.ensure_future(cache.hits(key, slow))
    await asyncio.sleep(0)
    impatient.cancel()  # its search timed out
    release.set()
    assert [h.id for h in await patient] == [C.id]
    with pytest.raises(asyncio.CancelledError):
        await impatient


async def test_no_cache_without_a_content_version() -> None:
    store = FakeStore(lexical=[A], dense=[C, D])  # no version(): nothing to key on
    cache = DenseLegCache()
    await _search(store, "retry policy", cache)
    await _search(store, "retry policy", cache)
    assert len(store.dense.calls) == 2


def test_the_cache_is_bounded() -> None:
    async def run() -> None:
        cache = DenseLegCache(max_entries=2)

        async def found() -> list[Hit]:
            return []

        for n in range(5):
            await cache.hits((n, b"v", 10, PUBLIC), found)
        assert len(cache._legs) == 2

    asyncio.run(run())
