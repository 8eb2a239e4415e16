"""A round's searches embed their queries in one batch, ahead of the searches, and find
exactly what they find when each embeds its own (fake engines, no models)."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from retrieval.embedding import moved_toward
from retrieval.engines.base import Hit, SearchFilter
from retrieval.pipeline import hybrid_search
from retrieval.search_models import SearchOptions
from tools.catalog import SearchArgs
from tools.context import ToolContext
from tools.executor import ToolCall, ToolExecutor
from tools.testing import RecordingEmbedder, memory_search, passage

PUBLIC = SearchFilter.for_groups([])
RECORDS = [
    passage("a", "Ed Wood (film)", "Ed Wood is a 1994 film directed by Tim Burton."),
    passage("b", "Tim Burton", "Tim Burton is an American filmmaker."),
    passage("c", "Cafeteria", "The cafeteria opens at eight."),
]


class Lexical:
    def search(self, query: str, k: int, flt: SearchFilter) -> list[Hit]:
        words = set(query.casefold().split())
        scored = [(len(words & set(r.text.casefold().split())), r) for r in RECORDS]
        ranked = [r for s, r in sorted(scored, key=lambda x: (-x[0], x[1].id)) if s]
        return [Hit(record=r, score=1.0 / (n + 1), rank=n + 1) for n, r in enumerate(ranked[:k])]


class Dense:
    def __init__(self) -> None:
        self.vectors: list[list[float]] = []

    def search(self, vector: Sequence[float], k: int, flt: SearchFilter) -> list[Hit]:
        self.vectors.append(list(vector))
        # The order depends on the vector: a wrong vector would show in the results.
        start = int(vector[0] + vector[1]) % len(RECORDS)
        ranked = RECORDS[start:] + RECORDS[:start]
        return [Hit(record=r, score=1.0 / (n + 1), rank=n + 1) for n, r in enumerate(ranked[:k])]


class Store:
    def __init__(self, fail: bool = False) -> None:
        self.lexical, self.dense, self.embedder = (
            Lexical(),
            Dense(),
            RecordingEmbedder(failures=int(fail)),
        )
        self.settings = SimpleNamespace(rerank_model=None)
        # Stored passage vectors and who may read them (the real Store keeps them in its
        # catalog and applies the same rule as its by-id reads).
        self.stored = {"a": ([1.0, 0.0], "public"), "b": ([0.0, 3.0], "public")}
        self.stored["hr-only"] = ([9.0, 9.0], "hr")
        self.vector_reads: list[list[str]] = []

    def vectors(self, ids: Sequence[str], flt: SearchFilter) -> dict[str, list[float]]:
        self.vector_reads.append(list(ids))
        groups = set(flt.acl_groups or ())
        readable = [i for i in ids if i in self.stored and self.stored[i][1] in groups]
        return {i: self.stored[i][0] for i in readable}

    def corpus_size(self) -> int:
        return len(RECORDS)


QUERIES = ["Who directed Ed Wood?", " Tim Burton filmmaker ", "cafeteria hours"]


def _searches() -> list[ToolCall]:
    return [ToolCall(tool="search_knowledge", args={"query": q, "k": 3}) for q in QUERIES]


async def _one_by_one() -> list[list[str]]:
    store = Store()
    out = []
    for q in QUERIES:
        result = await hybrid_search(store, q, PUBLIC, SearchOptions(k=3))
        out.append([h.id for h in result.hits])
    assert len(store.embedder.calls) == len(QUERIES)
    return out


async def test_a_rounds_searches_embed_in_one_batch_and_find_the_same() -> None:
    store = Store()
    outcomes = await ToolExecutor().run(_searches(), ToolContext(store=store, flt=PUBLIC), 1)
    assert all(o.ok for o in outcomes)
    assert store.embedder.calls == [[q.strip() for q in QUERIES]]  # one call, as stripped
    assert [[e.id for e in o.evidence] for o in outcomes] == await _one_by_one()


async def test_planned_searches_are_embedded_once_even_when_run_later() -> None:
    store = Store()
    ctx = ToolContext(store=store, flt=PUBLIC)
    executor = ToolExecutor()
    executor.embed_ahead(_searches()[:2], ctx)  # as the plan node does
    outcomes = await executor.run(_searches(), ctx, 1)
    assert all(o.ok for o in outcomes)
    assert store.embedder.calls == [[q.strip() for q in QUERIES[:2]], [QUERIES[2]]]


async def test_a_failed_batch_leaves_each_search_to_embed_its_own_query() -> None:
    store = Store(fail=True)
    outcomes = await ToolExecutor().run(_searches(), ToolContext(store=store, flt=PUBLIC), 1)
    assert all(o.ok for o in outcomes)
    assert not any("dense" in w for o in outcomes for w in o.warnings)
    assert len(store.embedder.calls) == 1 + len(QUERIES)
    assert [[e.id for e in o.evidence] for o in outcomes] == await _one_by_one()


async def test_a_swapped_search_function_is_left_to_embed_as_it_likes() -> None:
    from tools.testing import MemoryStore

    store: Any = MemoryStore(RECORDS)
    store.embedder = RecordingEmbedder()
    ctx = ToolContext(store=store, flt=PUBLIC, search_fn=memory_search)
    outcomes = await ToolExecutor().run(_searches(), ctx, 1)
    assert all(o.ok for o in outcomes)
    assert store.embedder.calls == []


async def test_hybrid_search_embeds_itself_when_no_vector_was_computed_ahead() -> None:
    store = Store()

    async def nothing_ahead() -> None:
        return None

    result = await hybrid_search(store, QUERIES[0], PUBLIC, query_vector=nothing_ahead)
    assert store.embedder.calls == [[QUERIES[0]]]
    assert result.hits


async def test_a_lexical_only_search_embeds_nothing_and_runs_one_leg() -> None:
    store = Store()
    calls = [
        ToolCall(tool="search_knowledge", args={"query": QUERIES[0], "k": 3}),
        ToolCall(tool="search_knowledge", args={"query": QUERIES[1], "legs": ["lexical"]}),
    ]
    outcomes = await ToolExecutor().run(calls, ToolContext(store=store, flt=PUBLIC), 1)
    assert all(o.ok for o in outcomes)
    assert store.embedder.calls == [[QUERIES[0]]]  # the keyword search is not embedded
    assert len(store.dense.vectors) == 1
    assert set(outcomes[1].detail["legs"]) == {"lexical"}
    # BM25's own ranking; the dense fake would have added the unrelated cafeteria page.
    assert [e.id for e in outcomes[1].evidence] == ["wiki:b#0", "wiki:a#0"]


def _near(question: str, feedback: list[str]) -> ToolCall:
    """A next-hop search: its words name the bridge, its meaning starts from the question."""
    return ToolCall(
        tool="search_knowledge",
        args={"query": "Tim Burton films", "k": 3, "dense_query": question, "feedback": feedback},
    )


async def test_a_search_with_feedback_looks_near_the_question_and_the_found_passages() -> None:
    store = Store()
    ctx = ToolContext(store=store, flt=PUBLIC)
    executor = ToolExecutor()
    question = ToolCall(tool="search_knowledge", args={"query": QUERIES[0], "k": 3})
    await executor.run([question], ctx, 1)
    outcomes = await executor.run([_near(QUERIES[0], ["a", "b"])], ctx, 2)
    assert all(o.ok for o in outcomes)
    # The question's embedding from round one is reused: nothing new is embedded.
    assert store.embedder.calls == [[QUERIES[0]]]
    base = RecordingEmbedder().encode([QUERIES[0]])[0]
    assert store.dense.vectors[-1] == moved_toward(base, [[1.0, 0.0], [0.0, 3.0]])
    assert store.dense.vectors[-1] != moved_toward(base, [])
    assert store.vector_reads == [["a", "b"]]


async def test_feedback_from_a_passage_the_caller_may_not_read_is_ignored() -> None:
    store = Store()
    ctx = ToolContext(store=store, flt=PUBLIC)
    outcomes = await ToolExecutor().run([_near(QUERIES[0], ["hr-only", "unknown"])], ctx, 1)
    assert all(o.ok for o in outcomes)
    base = RecordingEmbedder().encode([QUERIES[0]])[0]
    assert store.dense.vectors == [moved_toward(base, [])]  # the question's direction only
    assert store.embedder.calls == [[QUERIES[0]]]  # the dense query, not the search words
    hr = ToolContext(store=store, flt=SearchFilter.for_groups(["hr"]))
    await ToolExecutor().run([_near(QUERIES[0], ["hr-only"])], hr, 1)
    assert store.dense.vectors[-1] == moved_toward(base, [[9.0, 9.0]])


async def test_a_dense_query_is_embedded_even_when_nothing_was_embedded_ahead() -> None:
    store = Store(fail=True)  # the batch fails: the search embeds its dense query itself
    call = ToolCall(
        tool="search_knowledge", args={"query": "Tim Burton films", "dense_query": QUERIES[2]}
    )
    outcomes = await ToolExecutor().run([call], ToolContext(store=store, flt=PUBLIC), 1)
    assert all(o.ok for o in outcomes)
    assert not any("dense" in w for w in outcomes[0].warnings)
    assert store.embedder.calls == [[QUERIES[2]], [QUERIES[2]]]
    assert store.dense.vectors == RecordingEmbedder().encode([QUERIES[2]])


async def test_texts_a_later_round_will_embed_go_in_the_first_rounds_batch() -> None:
    store = Store()
    ctx = ToolContext(store=store, flt=PUBLIC)
    executor = ToolExecutor()
    frame = "Who directed ?"  # what the question asks of its first hop's answer
    question = ToolCall(tool="search_knowledge", args={"query": QUERIES[0], "k": 3})
    executor.embed_ahead([question], ctx, also=[frame])  # as the plan node does
    await executor.run([question], ctx, 1)
    outcomes = await executor.run([_near(frame, ["a"])], ctx, 2)
    assert all(o.ok for o in outcomes)
    assert store.embedder.calls == [[QUERIES[0], frame]]  # one batch, in round one
    base = RecordingEmbedder().encode([frame])[0]
    assert store.dense.vectors[-1] == moved_toward(base, [[1.0, 0.0]])


async def test_a_composed_question_looks_near_its_parts_and_is_not_embedded_itself() -> None:
    store = Store()
    ctx = ToolContext(store=store, flt=PUBLIC)
    executor = ToolExecutor()
    first_hop, frame = "director of Ed Wood", "Who is the wife of ?"
    calls = [
        ToolCall(
            tool="search_knowledge",
            args={"query": "Who is the wife of the director of Ed Wood?", "k": 3,
                  "dense_parts": [first_hop, frame]},
        ),
        ToolCall(tool="search_knowledge", args={"query": first_hop, "k": 3}),
    ]  # fmt: skip
    executor.embed_ahead(calls, ctx, also=[frame])  # as the plan node does
    outcomes = await executor.run(calls, ctx, 1)
    assert all(o.ok for o in outcomes)
    # One batch of the two parts; the long question is never embedded.
    assert store.embedder.calls == [[first_hop, frame]]
    parts = RecordingEmbedder().encode([first_hop, frame])
    # The question's vector: the parts' summed and normalised; the first hop's: its own.
    # (The two searches run concurrently: either may reach the engine first.)
    assert sorted(store.dense.vectors) == sorted([moved_toward(parts[0], parts[1:]), parts[0]])


async def test_parts_whose_batch_failed_are_embedded_one_by_one() -> None:
    store = Store(fail=True)  # the round's batch fails: each part is embedded on its own
    call = ToolCall(
        tool="search_knowledge",
        args={"query": "Tim Burton films", "dense_parts": [QUERIES[0], QUERIES[2]]},
    )
    outcomes = await ToolExecutor().run([call], ToolContext(store=store, flt=PUBLIC), 1)
    assert all(o.ok for o in outcomes)
    assert not any("dense" in w for w in outcomes[0].warnings)
    assert store.embedder.calls == [[QUERIES[0], QUERIES[2]], [QUERIES[0]], [QUERIES[2]]]
    parts = RecordingEmbedder().encode([QUERIES[0], QUERIES[2]])
    assert store.dense.vectors == [moved_toward(parts[0], parts[1:])]


def test_dense_query_and_dense_parts_exclude_each_other() -> None:
    with pytest.raises(ValidationError, match="not both"):
        SearchArgs.model_validate({"query": "q", "dense_query": "a", "dense_parts": ["b"]})
    assert SearchArgs.model_validate({"query": "q", "dense_parts": ["a", "b"]}).dense_texts == [
        "a",
        "b",
    ]
