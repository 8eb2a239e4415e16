"""The final evidence selection keeps the chain: a followed hop's best passage and the
passage it was followed from hold their seats against near-duplicates of the first hop."""

from __future__ import annotations

from graph.policies.ranking import rank_pool
from tools.evidence import Evidence, Provenance
from tools.testing import evidence

QUESTION = "Which river flows through the birthplace of the author of Blue Harbour?"


def _search(rank: int, parent: str | None = None, round_no: int = 1) -> Provenance:
    return Provenance(round=round_no, tool="search_knowledge", query="q", rank=rank, parent=parent)


def _pool() -> list[Evidence]:
    # Eight passages that repeat the question's own words (the first hop, over and over)...
    echoes = [
        evidence(
            f"echo{i}", "Blue Harbour is a novel; its author was born in a river town.", _search(i)
        )
        for i in range(1, 8)
    ]
    # ...the passage that names the bridge entity, found low in the first search...
    bridge = evidence("bridge", "Blue Harbour was written by Ana Lind.", _search(9))
    # ...and the page of the bridge entity, opened by following that mention.
    hop = evidence(
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


def _lookup(parent: str, round_no: int = 2, lead: int = 0) -> Provenance:
    return Provenance(
        round=round_no, tool="lookup_entity", query="name", rank=1, parent=parent, lead=lead
    )


def test_each_hop_further_from_the_question_vouches_for_less() -> None:
    # A page opened from a page that was itself opened by a hop stands two hops from the
    # question; the best search beside a direct hit's name stands one. Though a search hop
    # is the weaker kind of link, the nearer one wins.
    hit = evidence("hit", "Blue Harbour was written by Ana Lind.", _search(1))
    near = evidence("near", "Ana Lind was born in Tarnow.", _lookup("hit#0"))
    far = evidence("far", "Tarnow lies on the Dunajec.", _lookup("near#0", round_no=3))
    beside = evidence(
        "beside", "Tarnow lies on the Dunajec.", _search(1, parent="hit#0", round_no=2)
    )
    scores = dict(rank_pool(QUESTION, [hit, near, far, beside], titles=None, budget=10))
    assert scores["beside#0"] > scores["far#0"]


def test_a_passage_that_several_calls_found_gains() -> None:
    once = evidence("once", "Tarnow lies on a river.", _search(3))
    twice = evidence(
        "twice",
        "Tarnow lies on a river.",
        _search(3),
        Provenance(round=1, tool="search_knowledge", query="another query", rank=3),
    )
    scores = dict(rank_pool(QUESTION, [once, twice], titles=None, budget=10))
    assert scores["twice#0"] > scores["once#0"]


def test_a_document_gets_a_second_seat_only_after_every_other_document() -> None:
    def chunk(doc: str, n: int, text: str, rank: int) -> Evidence:
        e = evidence(doc, text, _search(rank))
        return e.model_copy(update={"id": f"{doc}#{n}"})

    # Three chunks of one long page rank first; a second page ranks below all of them.
    pool = [
        chunk("long", 0, "Blue Harbour is a novel; its author was born in a river town.", 1),
        chunk("long", 1, "Blue Harbour author river town birthplace flows.", 2),
        chunk("long", 2, "Blue Harbour author river birthplace.", 3),
        chunk("other", 0, "Ana Lind, author.", 9),
    ]
    top = {i for i, _ in rank_pool(QUESTION, pool, titles=None, budget=2)[:2]}
    assert "other#0" in top and len(top & {"long#0", "long#1", "long#2"}) == 1
    # A seat left over once every document has one goes to the page's next chunk.
    top = {i for i, _ in rank_pool(QUESTION, pool, titles=None, budget=3)[:3]}
    assert "other#0" in top and len(top & {"long#0", "long#1", "long#2"}) == 2


def test_a_documents_seat_goes_to_its_best_passage() -> None:
    # The page's intro is the best direct search hit and so keeps a protected seat for its
    # document; the page's section that several calls found scores higher overall and
    # takes that seat instead.
    intro = evidence("hub", "Blue Harbour author.", _search(1))
    section = evidence(
        "hub",
        "Blue Harbour author birthplace river: Tarnow on the Dunajec.",
        *[
            Provenance(round=2, tool="lookup_entity", query=f"q{n}", rank=1, parent=None)
            for n in range(4)
        ],
    ).model_copy(update={"id": "hub#2"})
    others = [evidence(f"o{i}", "Blue Harbour author.", _search(i + 2)) for i in range(3)]
    pool = [intro, section, *others]
    scores = dict(rank_pool(QUESTION, pool, titles=None, budget=10))
    assert scores["hub#2"] > scores["hub#0"]
    top = [i for i, _ in rank_pool(QUESTION, pool, titles=None, budget=3)[:3]]
    assert "hub#2" in top and "hub#0" not in top


def test_a_hit_for_the_question_rewritten_with_the_bridge_counts_as_a_direct_hit() -> None:
    # "Where was Ana Lind born?" is the question itself, one hop on: its sixth hit holds
    # the answer. A search of the question's missing words beside the same name is only
    # a lead, and the same passage at the same rank scores lower from it.
    bridge = evidence("bridge", "Blue Harbour was written by Ana Lind.", _search(1))
    echoes = [
        evidence(f"echo{i}", "Blue Harbour is a novel about a river town.", _search(i + 1))
        for i in range(1, 8)
    ]

    def hop(rewrite: bool) -> Evidence:
        return evidence(
            "lind",
            "Ana Lind was born in Tarnow, a town on the Dunajec.",
            Provenance(
                round=2,
                tool="search_knowledge",
                query="Which river flows through the birthplace of Ana Lind?",
                rank=6,
                parent="bridge#0",
                lead=0,
                rewrite=rewrite,
            ),
        )

    as_rewrite = dict(rank_pool(QUESTION, [bridge, *echoes, hop(True)], None, budget=4))
    as_lead = dict(rank_pool(QUESTION, [bridge, *echoes, hop(False)], None, budget=4))
    assert as_rewrite["lind#0"] > as_lead["lind#0"]
    top = [i for i, _ in rank_pool(QUESTION, [bridge, *echoes, hop(True)], None, budget=4)[:4]]
    assert "lind#0" in top and "bridge#0" in top


def test_a_chunk_cut_after_an_entrys_label_leaves_the_entry_to_the_next_chunk() -> None:
    # The page's section ends with the label "Repr.maxstring"; the entry's text opens the
    # next chunk. That chunk holds a question term the section only names as a label, so
    # it earns its own seat before another page's second chunk.
    question = "in reprlib, which default limit is bigger: maxstring or maxlong?"

    def chunk(doc: str, n: int, text: str, rank: int) -> Evidence:
        return evidence(doc, text, _search(rank)).model_copy(update={"id": f"{doc}#{n}"})

    section = chunk(
        "reprlib",
        3,
        "Repr.maxlong\n\nMaximum characters for an integer. The default is 40.\n\nRepr.maxstring",
        1,
    )
    entry = chunk("reprlib", 4, "Repr.maxstring\n\nThe default is 30.", 9)
    others = [chunk(f"o{i}", 0, "Notes on reprlib.", i + 2) for i in range(4)]
    second = chunk("o0", 1, "More notes on reprlib limits.", 6)
    pool = [section, entry, *others, second]
    top = [i for i, _ in rank_pool(question, pool, titles=None, budget=6)[:6]]
    assert "reprlib#4" in top and "o0#1" not in top
