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


@dataclass(slots=True)
class FusedItem:
    """One id after fusion: its RRF score, the 1-based rank it had in each leg and the best
    of those (kept as fusion goes, not recomputed by every sort key).

    Slotted and not frozen: a search fuses a few hundred ids, and a frozen dataclass's
    ``__init__`` (one ``object.__setattr__`` per field) was a third of fusion's time.
    """

    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    best_rank: int = 0

    def __post_init__(self) -> None:
        if not self.best_rank:
            self.best_rank = min(self.ranks.values(), default=0)


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
    items: dict[str, FusedItem] = {}
    # Legs in sorted order so the float sums are identical whatever the mapping's order:
    # each id's score is added up leg by leg in that order, as sum() over them would.
    for leg in sorted(rankings):
        weight = weights.get(leg, 1.0)
        for rank, item_id in enumerate(rankings[leg], start=1):
            item = items.get(item_id)
            if item is None:
                items[item_id] = FusedItem(item_id, weight / (rrf_k + rank), {leg: rank}, rank)
            elif leg not in item.ranks:
                item.ranks[leg] = rank
                item.score += weight / (rrf_k + rank)
                if rank < item.best_rank:
                    item.best_rank = rank
    fused = list(items.values())
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
    # Each kept item with its pass (the how-many-th of its document it is); a stable sort
    # on the pass keeps the input order within each pass.
    passes: list[tuple[int, T]] = []
    seen: dict[str, int] = {}
    for item in items:
        doc = doc_of(item)
        n = seen.get(doc, 0)
        seen[doc] = n + 1
        if n < cap:
            passes.append((n, item))
    passes.sort(key=_pass_of)
    return [item for _, item in passes]


def _pass_of(entry: tuple[int, object]) -> int:
    return entry[0]
