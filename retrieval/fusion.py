"""Rank fusion and per-document capping: pure functions, no engines, no I/O.

Fusion works on ranks, never on raw scores: BM25 scores and cosine similarities live on
different scales and a score-level mix would let one leg dominate by accident.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

DEFAULT_RRF_K = 60

T = TypeVar("T")


@dataclass(frozen=True)
class FusedItem:
    """One id after fusion: its RRF score and the 1-based rank it had in each leg."""

    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)

    @property
    def best_rank(self) -> int:
        return min(self.ranks.values()) if self.ranks else 0


def rrf_fuse(
    rankings: Mapping[str, Sequence[str]],
    weights: Mapping[str, float] | None = None,
    rrf_k: int = DEFAULT_RRF_K,
) -> list[FusedItem]:
    """Reciprocal Rank Fusion.

    ``rankings`` maps a leg name to its ids, best first (rank = position + 1). The score of
    an id is ``sum(w_leg / (rrf_k + rank_leg))`` over the legs that returned it; a leg that
    missed it contributes 0. Ties break on the best single-leg rank, then on the id, so the
    order is deterministic. A leg listing the same id twice keeps its first (best) rank.
    """
    if rrf_k < 0:
        raise ValueError(f"rrf_k must be >= 0, got {rrf_k}")
    weights = weights or {}
    ranks: dict[str, dict[str, int]] = {}
    # Legs in sorted order so the float sums are identical whatever the mapping's order.
    for leg in sorted(rankings):
        for position, item_id in enumerate(rankings[leg]):
            per_leg = ranks.setdefault(item_id, {})
            per_leg.setdefault(leg, position + 1)
    fused = [
        FusedItem(
            id=item_id,
            score=sum(
                weights.get(leg, 1.0) / (rrf_k + rank) for leg, rank in sorted(leg_ranks.items())
            ),
            ranks=leg_ranks,
        )
        for item_id, leg_ranks in ranks.items()
    ]
    # Rounded so that scores equal up to float noise count as ties (then best rank, then id).
    fused.sort(key=lambda f: (-round(f.score, 12), f.best_rank, f.id))
    return fused


def cap_per_doc(items: Sequence[T], doc_of: Callable[[T], str], cap: int) -> list[T]:
    """Keep at most ``cap`` items per document, interleaving documents round-robin.

    Pass 1 takes every document's best item (in the input order), pass 2 every document's
    second item, and so on up to ``cap`` passes; within a pass items keep the input order.
    One long document therefore cannot fill the list with its sections before other
    documents get a first slot.
    """
    if cap < 1:
        raise ValueError(f"per-document cap must be >= 1, got {cap}")
    per_doc: dict[str, list[tuple[int, T]]] = {}
    for position, item in enumerate(items):
        per_doc.setdefault(doc_of(item), []).append((position, item))
    out: list[T] = []
    for round_index in range(cap):
        # Within a pass, items keep their input (fused) order.
        this_pass = [
            doc_items[round_index] for doc_items in per_doc.values() if round_index < len(doc_items)
        ]
        out.extend(item for _, item in sorted(this_pass, key=lambda pair: pair[0]))
    return out
