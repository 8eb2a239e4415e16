"""The state's reducers: idempotent, and evidence found again keeps what each read added."""

from __future__ import annotations

from typing import Any

from graph.state import merge_pool


def _item(text: str, *provenance: tuple[int, str, str], score: float = 0.5) -> dict[str, Any]:
    return {
        "id": "wiki:it#1",
        "text": text,
        "score": score,
        "locator": {"char_end": len(text)},
        "provenance": [{"round": r, "tool": t, "query": q} for r, t, q in provenance],
    }


def test_a_chunk_found_again_keeps_every_provenance_and_its_widest_read() -> None:
    cut = "itertools.pairwise(iterable)\n\nRoughly equivalent to:"
    hit = _item(cut, (1, "search_knowledge", "pairwise version"))
    whole = _item(f"{cut}\n\nNew in version 3.10.", (1, "lookup_entity", "itertools.pairwise"))
    for first, then in ((hit, whole), (whole, hit)):
        merged = merge_pool({"wiki:it#1": first}, {"wiki:it#1": then})["wiki:it#1"]
        assert merged["text"].endswith("New in version 3.10.")
        assert merged["locator"] == whole["locator"]
        assert [p["tool"] for p in merged["provenance"]] == [
            p["tool"] for p in [*first["provenance"], *then["provenance"]]
        ]
    # another text under the same id (a re-ingested chunk) is not a wider read of it
    other = _item("Something else entirely, and longer than the cut.", (2, "search_knowledge", "x"))
    assert merge_pool({"wiki:it#1": hit}, {"wiki:it#1": other})["wiki:it#1"]["text"] == cut


def test_merging_is_idempotent() -> None:
    pool = {"wiki:it#1": _item("a text", (1, "search_knowledge", "q"))}
    assert merge_pool(pool, pool) == pool
    assert merge_pool(pool, {})["wiki:it#1"] is pool["wiki:it#1"]
