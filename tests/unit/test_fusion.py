"""RRF arithmetic and the round-robin per-document cap, checked against hand-computed numbers."""

from __future__ import annotations

import pytest

from retrieval.fusion import cap_per_doc, rrf_fuse


def test_rrf_scores_match_hand_computation() -> None:
    fused = rrf_fuse({"lexical": ["a", "b", "c"], "dense": ["b", "d", "a"]}, rrf_k=60)
    scores = {f.id: f.score for f in fused}
    # a: lexical rank 1, dense rank 3; b: lexical 2, dense 1; c: lexical 3; d: dense 2.
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 63)
    assert scores["d"] == pytest.approx(1 / 62)
    assert [f.id for f in fused] == ["b", "a", "d", "c"]
    assert fused[0].ranks == {"lexical": 2, "dense": 1}


def test_missing_leg_contributes_zero() -> None:
    fused = rrf_fuse({"lexical": ["x"], "dense": []})
    assert len(fused) == 1
    assert fused[0].score == pytest.approx(1 / 61)
    assert fused[0].ranks == {"lexical": 1}


def test_weights_scale_each_leg() -> None:
    rankings = {"lexical": ["a", "b"], "dense": ["b", "a"]}
    # Symmetric ranks tie at equal weight; a heavier lexical leg lifts its own first hit.
    fused = rrf_fuse(rankings, weights={"lexical": 2.0})
    scores = {f.id: f.score for f in fused}
    assert scores["a"] == pytest.approx(2 / 61 + 1 / 62)
    assert scores["b"] == pytest.approx(2 / 62 + 1 / 61)
    assert [f.id for f in fused] == ["a", "b"]
    down = rrf_fuse(rankings, weights={"lexical": 0.5})
    assert [f.id for f in down] == ["b", "a"]


def test_rrf_k_changes_the_arithmetic() -> None:
    fused = rrf_fuse({"lexical": ["a"]}, rrf_k=0)
    assert fused[0].score == pytest.approx(1.0)
    with pytest.raises(ValueError):
        rrf_fuse({"lexical": ["a"]}, rrf_k=-1)


def test_ties_break_on_best_single_leg_rank_then_id() -> None:
    # Same rank in different legs -> equal score and equal best rank: the id decides
    # (c/d at rank 1, y/z at rank 2, p/q at rank 3).
    fused = rrf_fuse({"lexical": ["c", "y", "q"], "dense": ["d", "z", "p"]})
    order = [f.id for f in fused]
    assert order == ["c", "d", "y", "z", "p", "q"]
    # Equal score but different best rank needs a weight to line the scores up.
    tied = rrf_fuse({"lexical": ["m"], "dense": ["x1", "x2", "a"]}, weights={"dense": 63 / 61})
    # m: 1/61 ; a: (63/61)/63 = 1/61 -> equal score; m has best rank 1, a best rank 3, so m
    # comes first although "a" < "m".
    scores = {f.id: f.score for f in tied}
    assert scores["m"] == pytest.approx(scores["a"])
    ids = [f.id for f in tied]
    assert ids.index("m") < ids.index("a")


def test_order_is_independent_of_leg_mapping_order() -> None:
    one = rrf_fuse({"lexical": ["a", "b", "c"], "dense": ["c", "b", "a"]})
    two = rrf_fuse({"dense": ["c", "b", "a"], "lexical": ["a", "b", "c"]})
    assert [(f.id, f.score) for f in one] == [(f.id, f.score) for f in two]
    # a and c tie exactly (1/61 + 1/63 each, best rank 1): the id decides. b has
    # 2/62 = 0.032258 < 1/61 + 1/63 = 0.032266: agreement in the middle loses to one
    # first place, the RRF property this test pins.
    assert [f.id for f in one] == ["a", "c", "b"]


def test_duplicate_id_in_one_leg_keeps_its_best_rank() -> None:
    fused = rrf_fuse({"lexical": ["a", "b", "a"]})
    assert {f.id: f.ranks for f in fused}["a"] == {"lexical": 1}


def _doc(item: str) -> str:
    return item.split("#", 1)[0]


def test_cap_round_robin_across_documents() -> None:
    fused = ["A#0", "A#1", "A#2", "B#0", "C#0", "B#1", "A#3", "C#1"]
    assert cap_per_doc(fused, _doc, cap=2) == ["A#0", "B#0", "C#0", "A#1", "B#1", "C#1"]
    assert cap_per_doc(fused, _doc, cap=1) == ["A#0", "B#0", "C#0"]
    # Third pass takes A's third chunk only; its fourth never enters at cap 3.
    assert cap_per_doc(fused, _doc, cap=3) == [
        "A#0", "B#0", "C#0", "A#1", "B#1", "C#1", "A#2",
    ]  # fmt: skip


def test_cap_second_pass_keeps_fused_order_of_second_chunks() -> None:
    # B's second chunk is fused above A's second chunk, so it comes first in pass 2.
    fused = ["A#0", "B#0", "B#1", "A#1"]
    assert cap_per_doc(fused, _doc, cap=2) == ["A#0", "B#0", "B#1", "A#1"]
    fused = ["A#0", "B#0", "A#5", "B#2"]
    assert cap_per_doc(fused, _doc, cap=2) == ["A#0", "B#0", "A#5", "B#2"]


def test_cap_rejects_non_positive() -> None:
    with pytest.raises(ValueError):
        cap_per_doc(["a"], _doc, cap=0)
