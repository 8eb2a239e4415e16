"""Rank fusion and per-document capping: pure functions, no engines, no I/O.

Fusion works on ranks, never on raw scores: BM25 scores and cosine similarities live on
different scales and a score-level mix would let one leg dominate by accident.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

DEFAULT_RRF_K = 60

T = TypeVar("T")


class FusedItem:
    """One id after fusion: its RRF score and the 1-based rank it had in each leg.

    A slotted class, not a frozen dataclass: a search fuses a few hundred ids, and the
    frozen dataclass's ``__init__`` (one ``object.__setattr__`` per field) was a third of
    fusion's time.
    """

    __slots__ = ("id", "score", "ranks", "best_rank")

    def __init__(
        self, id: str, score: float, ranks: dict[str, int] | None = None, best_rank: int = 0
    ) -> None:
        self.id = id
        self.score = score
        self.ranks = ranks if ranks is not None else {}
        self.best_rank = best_rank if best_rank else min(self.ranks.values(), default=0)

    def __repr__(self) -> str:
        return f"FusedItem(id={self.id!r}, score={self.score!r}, ranks={self.ranks!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FusedItem):
            return NotImplemented
        return (self.id, self.score, self.ranks) == (other.id, other.score, other.ranks)

    __hash__ = None  # type: ignore[assignment]  # mutable dict inside: not hashable


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
