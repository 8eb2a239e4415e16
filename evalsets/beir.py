"""BEIR evaluation: nDCG@10 and recall@100 of the single-round pipeline per mode.

Each leg recalls 100 deep so recall@100 measures the leg, not the default depth; with a
configured cross-encoder each mode also runs as ``<mode>+rerank``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from evalsets.loaders import BeirSet
from evalsets.metrics import mean, ndcg_at_k, percentile, recall_at_k
from evalsets.runner import SINGLE_ROUND_LEGS

BEIR_MODES = tuple(SINGLE_ROUND_LEGS)
DEPTH = 100


def rerank_status(store: Any) -> str | None:
    """The usable cross-encoder folder, or None ("rerank: not configured")."""
    from retrieval.rerank import RerankUnavailable, resolve_model_path

    try:
        return str(resolve_model_path(store.settings.rerank_model))
    except RerankUnavailable:
        return None


def beir_variants(modes: Sequence[str], rerank_model: str | None) -> list[tuple[str, str, bool]]:
    """``(label, mode, rerank)`` in run order; rerank variants only when configured."""
    variants = [(m, m, False) for m in modes]
    if rerank_model:
        variants += [(f"{m}+rerank", m, True) for m in modes]
    return variants


async def run_beir(
    store: Any,
    beir: BeirSet,
    modes: Sequence[str],
    limit: int | None = None,
    on_progress: Callable[[str, int], None] | None = None,
) -> dict[str, Any]:
    from retrieval.pipeline import hybrid_search
    from retrieval.search_models import SearchOptions

    query_ids = list(beir.queries)[:limit] if limit else list(beir.queries)
    flt = store.filter_for([])
    rerank_model = rerank_status(store)
    results: dict[str, Any] = {}
    warnings: set[str] = set()
    for label, mode, rerank in beir_variants(modes, rerank_model):
        ndcgs: list[float] = []
        recalls: list[float] = []
        seconds: list[float] = []
        options = SearchOptions(
            k=DEPTH, legs=SINGLE_ROUND_LEGS[mode], depth=DEPTH, rerank=rerank, per_doc_cap=1
        )
        for i, qid in enumerate(query_ids, start=1):
            start = time.perf_counter()
            result = await hybrid_search(store, beir.queries[qid], flt, options)
            seconds.append(time.perf_counter() - start)
            warnings.update(result.warnings)
            ranked = [h.doc_id for h in result.hits]
            ndcgs.append(ndcg_at_k(ranked, beir.qrels[qid], 10))
            recalls.append(recall_at_k(ranked, beir.qrels[qid], 100))
            if on_progress:
                on_progress(label, i)
        results[label] = {
            "ndcg@10": round(mean(ndcgs) or 0.0, 4),
            "recall@100": round(mean(recalls) or 0.0, 4),
            "p50_s": _r(percentile(seconds, 50)),
            "p95_s": _r(percentile(seconds, 95)),
        }
    return {
        "dataset": beir.dataset,
        "split": beir.split,
        "queries": len(query_ids),
        "corpus_passages": len(beir.records),
        "rerank": rerank_model or "not configured",
        "modes": results,
        "skipped_rows": len(beir.skipped),
        "warnings": sorted(warnings),
    }


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 4)
