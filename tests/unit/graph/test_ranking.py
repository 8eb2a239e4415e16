"""The final evidence selection keeps the chain: a followed hop's best passage and the
passage it was followed from hold their seats against near-duplicates of the first hop."""

from __future__ import annotations

from datetime import UTC, datetime

from graph.policies.ranking import rank_pool
from retrieval.search_models import Locator
from tools.evidence import Evidence, Provenance

QUESTION = "Which river flows through the birthplace of the author of Blue Harbour?"


def _ev(doc: str, text: str, *provenance: Provenance) -> Evidence:
    return Evidence(
        id=f"{doc}#0",
        doc_id=doc,
        title=doc,
        text=text,
        score=1.0,
        source="wiki",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        locator=Locator(doc_id=doc, chunk_id=f"{doc}#0"),
        provenance=list(provenance),
    )


def _search(rank: int, parent: str | None = None, round_no: int = 1) -> Provenance:
    return Provenance(round=round_no, tool="search_knowledge", query="q", rank=rank, parent=parent)


def _pool() -> list[Evidence]:
    # Eight passages that repeat the question's own words (the first hop, over and over)...
    echoes = [
        _ev(f"echo{i}", "Blue Harbour is a novel; its author was born in a river town.", _search(i))
        for i in range(1, 8)
    ]
    # ...the passage that names the bridge entity, found low in the first search...
    bridge = _ev("bridge", "Blue Harbour was written by Ana Lind.", _search(9))
    # ...and the page of the bridge entity, opened by following that mention.
    hop = _ev(
        "lind",
        "Ana Lind was born in Tarnow.",
        Provenance(round=2, tool="lookup_entity", query="Ana Lind", rank=1, parent="bridge#0"),
    )
    return [*echoes, bridge, hop]


def test_a_followed_hop_and_its_basis_keep_their_seats_in_the_budget() -> None:
    ranked = rank_pool(QUESTION, _pool(), titles=None, budget=4)
    top = [i for i, _ in ranked[:4]]
    assert "bridge#0" in top and "lind#0" in top
    assert top[0].startswith("echo")  # the best direct hit keeps its seat too
    assert len(ranked) == 9  # nothing leaves the pool: the rest follows, by score


def test_a_search_hop_is_a_weaker_link_than_opening_a_named_page() -> None:
    pool = _pool()
    searched = pool[-1].model_copy(
        update={
            "id": "lind2#0",
            "doc_id": "lind2",
            "title": "lind2",
            "provenance": [_search(1, parent="bridge#0", round_no=2)],
        }
    )
    scores = dict(rank_pool(QUESTION, [*pool, searched], titles=None, budget=10))
    assert scores["lind#0"] > scores["lind2#0"]
