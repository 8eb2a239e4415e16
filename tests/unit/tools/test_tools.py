"""The catalog, the executor and title mentions, against the in-memory store."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

import tools.context
from retrieval.engines.base import SearchFilter
from retrieval.records import Meta, Record
from tools.catalog import Catalog, ToolOutput, ToolSpec
from tools.context import ToolContext
from tools.executor import ToolCall, ToolExecutor, TransientToolError
from tools.testing import MemoryStore, memory_search, passage
from tools.titles import TitleIndex


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore(
        [
            passage("a", "Ed Wood (film)", "Ed Wood is a 1994 film directed by Tim Burton."),
            passage("b", "Tim Burton", "Tim Burton is an American filmmaker."),
            passage("c", "Payroll", "Payroll runs on the ledger service.", acl=["finance"]),
        ]
    )


def ctx_for(store: MemoryStore, groups: list[str] | None = None) -> ToolContext:
    ctx = ToolContext.for_caller(store, groups or [])
    ctx.search_fn = memory_search
    return ctx


def test_catalog_describes_each_tool_with_a_json_schema() -> None:
    described = {d["name"]: d for d in Catalog().describe()}
    assert set(described) == {
        "search_knowledge",
        "lookup_entity",
        "get_document",
        "get_links",
        "get_neighbors",
    }
    assert described["search_knowledge"]["args"]["required"] == ["query"]
    assert described["lookup_entity"]["args"]["required"] == ["name"]
    assert all(d["description"] and "\n" not in d["description"] for d in described.values())


async def test_search_results_carry_provenance(store: MemoryStore) -> None:
    [out] = await ToolExecutor().run(
        [ToolCall(tool="search_knowledge", args={"query": "Tim Burton film"})], ctx_for(store), 2
    )
    assert out.ok and out.evidence
    first = out.evidence[0]
    assert first.provenance[0].model_dump() == {
        "round": 2,
        "tool": "search_knowledge",
        "query": "Tim Burton film",
        "rank": 1,
        "parent": None,
        "lead": None,
        "rewrite": False,
    }
    assert first.locator.chunk_id == first.id


async def test_tools_apply_the_callers_acl(store: MemoryStore) -> None:
    calls = [
        ToolCall(tool="search_knowledge", args={"query": "payroll ledger"}),
        ToolCall(tool="lookup_entity", args={"name": "Payroll"}),
        ToolCall(tool="get_document", args={"id": "wiki:c"}),
    ]
    outsider = await ToolExecutor().run(calls, ctx_for(store), 1)
    assert all(o.ok for o in outsider)
    assert not any(e.doc_id == "wiki:c" for o in outsider for e in o.evidence)
    insider = await ToolExecutor().run(calls, ctx_for(store, ["finance"]), 1)
    assert all(any(e.doc_id == "wiki:c" for e in o.evidence) for o in insider)


async def test_lookup_scores_an_exact_title_above_a_fuzzy_one(store: MemoryStore) -> None:
    [out] = await ToolExecutor().run(
        [ToolCall(tool="lookup_entity", args={"name": "Ed Wood"})], ctx_for(store), 1
    )
    assert [(e.title, e.score) for e in out.evidence] == [("Ed Wood (film)", 1.0)]


class _Args(BaseModel):
    query: str


def _catalog(fn) -> Catalog:  # type: ignore[no-untyped-def]
    return Catalog([ToolSpec("t", "test tool", _Args, fn)])


async def test_transient_errors_are_retried_then_succeed(store: MemoryStore) -> None:
    attempts = 0

    async def flaky(ctx: ToolContext, args: _Args) -> ToolOutput:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise TransientToolError("busy")
        return ToolOutput(evidence=[])

    ex = ToolExecutor(_catalog(flaky), max_retries=2)
    [out] = await ex.run([ToolCall(tool="t", args={"query": "q"})], ctx_for(store), 1)
    assert out.ok and out.attempts == 3


async def test_a_failing_leg_degrades_without_failing_the_round(store: MemoryStore) -> None:
    async def broken(ctx: ToolContext, args: _Args) -> ToolOutput:
        raise ValueError("engine exploded")

    ex = ToolExecutor(_catalog(broken), max_retries=3)
    outs = await ex.run(
        [ToolCall(tool="t", args={"query": "q"}), ToolCall(tool="nope", args={})],
        ctx_for(store),
        1,
    )
    assert [o.ok for o in outs] == [False, False]
    assert outs[0].attempts == 1  # a bug is not transient: no retry
    assert "engine exploded" in (outs[0].error or "")
    assert "unknown tool" in (outs[1].error or "")


async def test_bad_arguments_are_reported_not_raised(store: MemoryStore) -> None:
    [out] = await ToolExecutor().run(
        [ToolCall(tool="search_knowledge", args={"k": 3})], ctx_for(store), 1
    )
    assert not out.ok and out.error and out.error.startswith("bad call")


async def test_timeouts_give_up_after_the_retry_budget(store: MemoryStore) -> None:
    async def hangs(ctx: ToolContext, args: _Args) -> ToolOutput:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    ex = ToolExecutor(_catalog(hangs), timeout_s=0.05, max_retries=1)
    [out] = await ex.run([ToolCall(tool="t", args={"query": "q"})], ctx_for(store), 1)
    assert not out.ok and out.attempts == 2 and "gave up" in (out.error or "")


async def test_fan_out_is_concurrent_and_bounded(store: MemoryStore) -> None:
    running = peak = 0
    release = asyncio.Event()

    async def tool(ctx: ToolContext, args: _Args) -> ToolOutput:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == 2:
            release.set()  # two in flight at once: concurrency proven, let them finish
        await release.wait()
        running -= 1
        return ToolOutput(evidence=[])

    ex = ToolExecutor(_catalog(tool), max_concurrency=2)
    outs = await ex.run(
        [ToolCall(tool="t", args={"query": str(i)}) for i in range(5)], ctx_for(store), 1
    )
    assert all(o.ok for o in outs) and peak == 2


def test_title_mentions_prefer_the_longest_name() -> None:
    index = TitleIndex(["Ed Wood (film)", "Ed Wood", "Wood", "Tim Burton", "It"])
    text = "Directed by Tim Burton, Ed Wood stars Johnny Depp. It was filmed in wood."
    assert index.mentions(text) == ["Tim Burton", "Ed Wood (film)", "Ed Wood", "Wood"]


async def test_lookup_with_a_query_adds_the_pages_best_section() -> None:
    store = MemoryStore(
        [
            passage("svc", "route-planner", "route-planner plans routes.", index=0),
            passage("svc", "route-planner", "Owned by the Routing team.", index=1),
            passage("svc", "route-planner", "The p99 latency SLO is 800 ms.", index=2),
        ]
    )
    args = {"name": "route-planner", "limit": 1, "query": "p99 latency SLO of route-planner"}
    [out] = await ToolExecutor().run([ToolCall(tool="lookup_entity", args=args)], ctx_for(store), 2)
    # The section that answers first, then the page's opening.
    assert [e.id for e in out.evidence] == ["wiki:svc#2", "wiki:svc#0"]
    assert out.call.key() == "lookup_entity:route-planner"  # the name identifies the call


class _VersionedStore(MemoryStore):
    """A store whose content version lets the tools cache its title index."""

    def version(self) -> int:
        return 1


def test_a_title_index_is_never_served_for_another_store_at_the_same_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # CPython hands a freed object's address to a later object: a store opened after
    # another one closed may have its id. Every store gets the same id here.
    monkeypatch.setattr(tools.context, "id", lambda _: 1, raising=False)
    flt = SearchFilter.for_groups([])
    first = _VersionedStore([passage("a", "Alpha Station", "Alpha Station is a depot.")])
    second = _VersionedStore([passage("b", "Beta Yard", "Beta Yard is a yard.")])
    assert ToolContext(store=first, flt=flt).title_index().titles == {"Alpha Station"}  # type: ignore[union-attr]
    assert ToolContext(store=second, flt=flt).title_index().titles == {"Beta Yard"}  # type: ignore[union-attr]


def test_a_names_surfaces_in_ascii_text_are_the_patterns_matches() -> None:
    """named_titles finds how an ASCII text writes a name without compiling a pattern per
    name: the surfaces must be exactly what the case-insensitive whole-word pattern finds,
    overlapping occurrences, edges, digits, underscores and punctuation included."""
    import random

    from tools.titles import _name_pattern, _surfaces, name_spans

    rng = random.Random(0)
    names = ["aa", "Ed Wood", "C++", "ledger-service", "x_1", "a.b", "a.a", "2010", "Ab"]
    alphabet = "aAbB _-+.x1C2\n" + "...."
    texts = ["aaaa aa", "Ed Wood's ED WOOD edwood", "C++ and c++11 (C++)", "_aa aa_ aa"]
    texts += ["a.a.a A.a"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    for text in texts:
        for name in names:
            found = list(_name_pattern(name).finditer(text))
            assert list(_surfaces(name, text)) == [m.group(0) for m in found], (name, text)
            assert list(name_spans(name, text)) == [m.span() for m in found], (name, text)
    # Not ASCII: the pattern itself (IGNORECASE folds what lower() does not)
    assert list(_surfaces("Strasse", "STRASSE Straße")) == ["STRASSE"]
    assert list(_surfaces("Kelvin", "\u212aelvin kelvin")) == ["\u212aelvin", "kelvin"]


def test_a_lookup_reads_the_section_where_the_names_entry_goes_on() -> None:
    from tools.catalog import _page_evidence

    opening = passage("reprlib", "reprlib", "reprlib - Alternate repr() implementation", index=0)
    # a section cut right after the entry's label line, and the next one holding its text
    cut = passage(
        "reprlib", "reprlib", "Repr.maxlong\n\nThe default is 40.\n\nRepr.maxstring", index=3
    )
    body = passage(
        "reprlib", "reprlib", "Repr.maxstring\n\nLimit on characters. The default is 30.", index=4
    )
    found = _page_evidence(
        None,  # type: ignore[arg-type] - the page's sections are given
        opening,
        1.0,
        "which default limit is bigger: maxstring or maxlong",
        [opening, cut, body],
        defining="maxstring",
    )
    assert [e.id for e in found][0] == "wiki:reprlib#4"


def _at(record: Record, start: int, section: str = "Itertool functions") -> Record:
    meta = {Meta.CHAR_START: start, Meta.CHAR_END: start + len(record.text)}
    meta[Meta.HEADING_PATH] = ["itertools", section]
    return record.model_copy(update={"metadata": {**record.metadata, **meta}})


def test_a_lookup_reads_an_entry_a_chunk_boundary_cut_to_its_end() -> None:
    from tools.catalog import _page_evidence

    opening = _at(passage("it", "itertools", "itertools - iterator building blocks"), 0)
    start = "itertools.pairwise(iterable)\n\nReturn successive overlapping pairs."
    cut = _at(passage("it", "itertools", f"Some loop.\n\n{start}\n\nRoughly:", index=1), 100)
    # the next chunk repeats the boundary's last line, then ends the entry and opens another
    rest = "Roughly:\n\n    return zip(a, b)\n\nNew in version 3.10.\n\nitertools.permutations(it)"
    after = _at(passage("it", "itertools", rest, index=2), 100 + len(cut.text) - len("Roughly:"))
    found = _page_evidence(
        None,  # type: ignore[arg-type] - the page's sections are given
        opening,
        1.0,
        "which python version introduced pairwise",
        [opening, cut, after],
        defining="itertools.pairwise",
    )
    entry = found[0]
    assert entry.id == "wiki:it#1"  # cited as the chunk that opens the entry
    assert entry.text.endswith("Roughly:\n\n    return zip(a, b)\n\nNew in version 3.10.")
    assert entry.text.count("Roughly:") == 1  # the chunks' overlap is read once
    assert "permutations" not in entry.text  # the next entry is not part of it
    assert entry.locator is not None and entry.locator.char_end == after.metadata[
        Meta.CHAR_START
    ] + len("Roughly:") + len("\n\n    return zip(a, b)\n\nNew in version 3.10.")

    # an entry followed by another in its own chunk, or a next chunk in another section,
    # is read as it is
    closed = _at(passage("it", "itertools", f"{start}\n\nitertools.product(x)", index=1), 100)
    moved = _at(passage("it", "itertools", "New in version 3.10.", index=2), 200, "Recipes")
    for chunks in ([opening, closed, after], [opening, cut, moved]):
        found = _page_evidence(None, opening, 1.0, "pairwise version", chunks, "itertools.pairwise")  # type: ignore[arg-type]
        assert found[0].text == chunks[1].text
