"""The single-round search: rewrite -> lexical + dense legs -> RRF -> signals -> per-doc cap
-> cross-encoder rerank -> neighbour expansion.

One function, :func:`hybrid_search`, used by the tools, the CLI and the evaluation. Every
stage leaves its output in the :class:`SearchResult` (each leg's ranked list, fused order,
capped order, rerank scores, timings, warnings), so a developer can see why a passage is
where it is. A failed leg or a missing reranker degrades the result and says so; only a
search in which *every* requested leg failed raises.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from retrieval import rerank as rerank_stage
from retrieval.engines.base import DeferredHit, Hit, SearchFilter, is_engine_panic, load_records
from retrieval.fusion import FusedItem, cap_per_doc, rrf_fuse
from retrieval.leg_cache import DenseLegCache, leg_key
from retrieval.placement import engine_call
from retrieval.records import Record
from retrieval.rewrite import rewrite_query
from retrieval.search_models import (
    RankedItem,
    SearchHit,
    SearchOptions,
    SearchResult,
    locator_for,
)
from retrieval.signals import age_decay_factor, idf_gate

LEGS = ("lexical", "dense")
MIN_DEPTH, MAX_DYNAMIC_DEPTH = 20, 50

T = TypeVar("T")


class SearchFailed(RuntimeError):
    """Every requested leg failed: there is no degraded result to return.

    ``legs`` names the failed legs; ``warnings`` says why each failed (engine messages,
    which may name hosts or paths: for logs, not for remote callers).
    """

    def __init__(self, warnings: list[str], legs: Sequence[str] = ()) -> None:
        super().__init__("; ".join(warnings) or "search failed")
        self.warnings = warnings
        self.legs = list(legs)


def recall_depth(corpus_size: int, k: int, requested: int | None = None) -> int:
    """Per-leg depth: as asked, else min(max(20, N/10), 50); never shallower than k.

    Deep enough that a document found by one leg only is not lost for want of a rank in
    the other (RRF punishes absence), bounded so rerank and fusion stay cheap. On HotpotQA
    (3,886 passages, dynamic depth 50) depth 20 / 50 / 100 give 0.855 / 0.855 / 0.850
    both-gold@10: deeper is not better once the gold is in both lists' heads.
    """
    base = requested if requested is not None else min(max(MIN_DEPTH, corpus_size // 10), 50)
    return max(base, k)


def narrow_filter(flt: SearchFilter, options: SearchOptions) -> SearchFilter:
    """Apply the per-query scope of ``options`` inside the caller's filter, never widening it."""
    if options.sources is not None:
        wanted = set(options.sources)
        allowed = wanted if flt.sources is None else wanted & set(flt.sources)
        flt = replace(flt, sources=tuple(sorted(allowed)))
    if options.time_from is not None and (
        flt.time_from is None or options.time_from > flt.time_from
    ):
        flt = replace(flt, time_from=options.time_from)
    if options.time_to is not None and (flt.time_to is None or options.time_to < flt.time_to):
        flt = replace(flt, time_to=options.time_to)
    return flt


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 2)


async def _timed(fn: Callable[[], Awaitable[T]]) -> tuple[T, float]:
    start = time.perf_counter()
    value = await fn()
    return value, _ms(start)


def _passage(record: Record) -> str:
    """What the cross-encoder reads: the title carries context a chunk often lacks."""
    title = record.title
    return f"{title}: {record.text}" if title and not record.text.startswith(title) else record.text


def _hit(record: Record, score: float, rerank_score: float | None = None) -> SearchHit:
    return SearchHit(
        id=record.id,
        doc_id=record.doc_id,
        title=record.title,
        text=record.text,
        score=score,
        source=record.source,
        timestamp=record.timestamp,
        locator=locator_for(record),
        metadata=dict(record.metadata),
        rerank_score=rerank_score,
    )


_QUERY_POOL: ThreadPoolExecutor | None = None
_QUERY_WORKERS_MAX = 4  # queries are short: a few cores embed any round's batches


def _usable_cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


_QUERY_POOL_LOCK = threading.Lock()


def query_encoder() -> ThreadPoolExecutor:
    """The threads that embed search queries: torch runs on one core in each (one thread per
    usable core, at most 4).

    Split over both cores of a small machine, a few short queries cost more in the
    hand-offs between torch's threads than they gain, and the second thread waits for a
    core that the other leg, the event loop or another process holds: a research round's
    batch of two questions took ~50 ms in the loop for ~29 ms alone. On one core a batch
    is encoded with bitwise the same vectors (tests/unit/test_query_encoder.py).
    Ingestion's large batches keep torch's default (they are not run here).

    ``torch.set_num_threads`` sets the calling thread's count and the default that later
    threads take on their first torch call: each worker takes the default, sets 1 for
    itself, and the process default is put back once all exist (the pool starts no more).
    """
    global _QUERY_POOL
    with _QUERY_POOL_LOCK:
        if _QUERY_POOL is None:
            import torch

            workers = max(1, min(_QUERY_WORKERS_MAX, _usable_cores()))
            default = torch.get_num_threads()
            started = threading.Barrier(workers + 1)

            def one_core() -> None:
                torch.get_num_threads()  # its own count taken from the default now, once
                torch.set_num_threads(1)
                started.wait()

            pool = ThreadPoolExecutor(workers, thread_name_prefix="query-encoder")
            futures = [pool.submit(one_core) for _ in range(workers)]
            started.wait()
            for f in futures:
                f.result()
            torch.set_num_threads(default)
            _QUERY_POOL = pool
        return _QUERY_POOL


def encode_queries(embedder: Any, texts: Sequence[str]) -> asyncio.Future[list[list[float]]]:
    """Embed search queries on :func:`query_encoder`'s threads (the running loop's future
    of the vectors): the one way a search, a batch embedded ahead or a warm-up encodes.
    An embedder's ``encode_queries`` (the traced model) is used when it has one."""
    encode = getattr(embedder, "encode_queries", None) or embedder.encode
    return asyncio.get_running_loop().run_in_executor(query_encoder(), encode, list(texts))


async def warm_up(store: Any) -> float | None:
    """Load the embedding model and start the query-encoder threads now, so the first
    search of a process does not pay for both (~0.7 s seen). A long-running service calls
    it at start-up. Returns the seconds it took, or None for a store without an embedder;
    a model that cannot load raises here as it would in the first search."""
    embedder = getattr(store, "embedder", None)
    if embedder is None:
        return None
    started = time.perf_counter()
    await encode_queries(embedder, ["warm-up"])
    return time.perf_counter() - started


def _forget_query_encoder_after_fork() -> None:
    """A forked child has none of the parent's worker threads: it starts its own."""
    global _QUERY_POOL, _QUERY_POOL_LOCK
    _QUERY_POOL, _QUERY_POOL_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_query_encoder_after_fork)


def dense_leg_query(query: str, options: SearchOptions | None = None) -> str:
    """The text the dense leg embeds for ``query`` (what a caller may embed in advance)."""
    options = options or SearchOptions()
    if options.dense_query == "original" or not options.rewrite:
        return query.strip()
    return rewrite_query(query).rewritten


async def hybrid_search(
    store: Any,
    query: str,
    flt: SearchFilter,
    options: SearchOptions | None = None,
    *,
    query_vector: Callable[[], Awaitable[Sequence[float] | None]] | None = None,
    dense_cache: DenseLegCache | None = None,
) -> SearchResult:
    """Search ``store`` for ``query`` within ``flt`` (ACL, scope, time pushed into engines).

    ``query_vector``: returns the embedding of :func:`dense_leg_query` computed ahead (a
    round's queries embedded in one batch), or None; then the dense leg embeds it itself.
    ``dense_cache``: a research run's dense legs (:mod:`retrieval.leg_cache`); a search
    whose dense leg repeats an earlier one's (same vector, depth, filter, content
    version) shares its hits instead of querying the engine again.
    """
    options = options or SearchOptions()
    unknown = [leg for leg in options.legs if leg not in LEGS]
    if unknown or not options.legs:
        raise ValueError(f"unknown or no search legs {options.legs!r}; choose from {list(LEGS)}")
    if not query.strip():
        raise ValueError("empty query")
    legs = [leg for leg in LEGS if leg in options.legs]
    total_start = time.perf_counter()
    timings: dict[str, float] = {}
    warnings: list[str] = []

    # -- 1. rewrite ------------------------------------------------------------------
    start = time.perf_counter()
    rewritten = rewrite_query(query).rewritten if options.rewrite else query.strip()
    timings["rewrite"] = _ms(start)
    leg_queries = {
        "lexical": rewritten,
        # The dense leg embeds the question as asked: the encoder was trained on natural
        # sentences, and fillers cost it nothing. On HotpotQA the rewritten query ties
        # (dense 0.745 vs 0.743, hybrid 0.853 vs 0.855 both-gold@10, within 1 question of
        # 400; benchmarks/hotpot_recall.py), so the paraphrase-robust form is the default.
        "dense": query.strip() if options.dense_query == "original" else rewritten,
    }
    flt = narrow_filter(flt, options)
    corpus_size = await _visible_size(store, flt)
    depth = recall_depth(corpus_size, options.k, options.depth)

    # -- 2. legs, concurrently -------------------------------------------------------
    def run_lexical() -> list[Hit]:
        return list(store.lexical.search(leg_queries["lexical"], depth, flt))

    async def run_dense() -> list[Hit]:
        vector = await query_vector() if query_vector is not None else None
        if vector is None:
            vector = (await encode_queries(store.embedder, [leg_queries["dense"]]))[0]

        def search() -> Awaitable[list[Hit]]:
            return engine_call(
                store.dense,
                "search",
                lambda: list(store.dense.search(vector, depth, flt)),
                timeout_s=options.leg_timeout_s,
            )

        version = getattr(store, "version", None)
        if dense_cache is None or version is None:
            return await search()
        # Read where engine calls run: an ingest in another thread may hold the catalog.
        current = await engine_call(store, "version", version)
        return await dense_cache.hits(leg_key(current, vector, depth, flt), search)

    async def run_leg(leg: str) -> list[Hit]:
        work = (
            run_dense()
            if leg == "dense"
            else engine_call(store.lexical, "search", run_lexical, timeout_s=options.leg_timeout_s)
        )
        # A timeout scope, not ``wait_for``: no task of its own for each leg.
        async with asyncio.timeout(options.leg_timeout_s):
            return await work

    outcomes = await asyncio.gather(
        *(_timed(functools.partial(run_leg, leg)) for leg in legs),
        return_exceptions=True,
    )
    leg_hits: dict[str, list[Hit]] = {}
    for leg, outcome in zip(legs, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            if not isinstance(outcome, Exception) and not is_engine_panic(outcome):
                raise outcome  # cancellation / interpreter exit: not a leg failure
            reason = (
                f"timed out after {options.leg_timeout_s:g}s"
                if isinstance(outcome, TimeoutError)
                else f"{type(outcome).__name__}: {outcome}"
            )
            warnings.append(f"{leg} leg failed: {reason}")
            continue
        found, elapsed = outcome
        leg_hits[leg] = found
        timings[leg] = elapsed
    if not leg_hits:
        raise SearchFailed(warnings, legs)

    # One hit per id, the one holding its record where a leg has it (a dense hit fetches
    # its record when first read: retrieval.engines.base.DeferredHit).
    first = _one_hit_per_id(leg_hits)
    shown = options.explain_depth  # entries kept per ranked list of the result
    rerank_path: Path | None = None
    if options.rerank and any(leg_hits.values()):  # nothing found: nothing to rerank
        try:
            rerank_path = rerank_stage.resolve_model_path(store.settings.rerank_model)
        except rerank_stage.RerankUnavailable as exc:
            warnings.append(str(exc))
    # The hits whose records the result reads, fetched in one call per dense search: the
    # top of each ranked list it shows; of the capped list also the final hits and the
    # reranker's candidates.
    capped_top = (
        None
        if shown is None
        else max(shown, options.k, options.rerank_depth if rerank_path is not None else 0)
    )

    # -- 3./4. fuse, optional signals, per-document cap ------------------------------
    start = time.perf_counter()
    fetch_s = 0.0  # fetching deferred records, inside the fuse stage's time
    if options.idf_gate is not None or options.age_decay_half_life_days is not None:
        # the signals read every fused record
        started = time.perf_counter()
        gone = await _fetch_records(store, first.values())
        leg_hits, first = _without(gone, leg_hits, first)
        fetch_s += time.perf_counter() - started
    while True:
        fused, scores, signals = _fuse_with_signals(store, leg_hits, first, options)
        capped: list[FusedItem] = cap_per_doc(
            fused, functools.partial(_doc_of, first), options.per_doc_cap
        )
        needed = {
            *(h.id for found in leg_hits.values() for h in found[:shown]),
            *(f.id for f in fused[:shown]),
            *(f.id for f in capped[:capped_top]),
        }
        started = time.perf_counter()
        try:
            gone = await _fetch_records(store, [first[i] for i in needed])
        except Exception as exc:  # a leg whose records cannot be read failed, as a leg
            failed = [
                leg
                for leg, found in leg_hits.items()
                if any(isinstance(h, DeferredHit) for h in found)
            ]
            warnings += [
                f"{leg} leg failed: its records could not be read: {type(exc).__name__}: {exc}"
                for leg in failed
            ]
            if set(leg_hits) <= set(failed):
                raise SearchFailed(warnings, legs) from exc
            leg_hits = {leg: found for leg, found in leg_hits.items() if leg not in failed}
            first = _one_hit_per_id(leg_hits)
            continue
        finally:
            fetch_s += time.perf_counter() - started
        if not gone:
            break
        # Changed or deleted since the search (or no longer visible): dropped, then fused
        # again without them. Each pass drops at least one hit, so this ends.
        leg_hits, first = _without(gone, leg_hits, first)
    records = {i: first[i].record for i in needed}
    legs_out = {
        leg: [
            RankedItem(id=hit.id, rank=position, score=hit.score, title=records[hit.id].title)
            for position, hit in enumerate(leg_hits[leg][:shown], start=1)
        ]
        for leg in legs
        if leg in leg_hits
    }
    timings["fuse"] = _ms(start)
    timings["fetch"] = round(fetch_s * 1000.0, 2)

    def ranked(items: list[FusedItem]) -> list[RankedItem]:
        return [
            RankedItem(id=f.id, rank=n, score=scores[f.id], title=records[f.id].title)
            for n, f in enumerate(items[:shown], start=1)
        ]

    # -- 5. rerank -------------------------------------------------------------------
    start = time.perf_counter()
    final_ids = [f.id for f in capped]
    rerank_scores: dict[str, float] = {}
    reranked: list[RankedItem] | None = None
    rerank_model: str | None = None
    if rerank_path is not None and capped:
        candidates = final_ids[: options.rerank_depth]
        try:
            values = await asyncio.to_thread(
                rerank_stage.score_pairs,
                rerank_path,
                query.strip(),
                [_passage(records[i]) for i in candidates],
            )
        except Exception as exc:  # a broken model folder degrades, recorded below
            warnings.append(f"rerank failed: {type(exc).__name__}: {exc}")
        else:
            rerank_model = str(rerank_path)
            rerank_scores = dict(zip(candidates, values, strict=True))
            candidate_position = {i: n for n, i in enumerate(candidates)}
            # Ties keep the fused order; candidates past rerank_depth follow unscored.
            by_score = sorted(candidates, key=lambda i: (-rerank_scores[i], candidate_position[i]))
            reranked = [
                RankedItem(id=i, rank=n, score=rerank_scores[i], title=records[i].title)
                for n, i in enumerate(by_score[:shown], start=1)
            ]
            final_ids = by_score + final_ids[len(candidates) :]
    timings["rerank"] = _ms(start)

    # -- 6. final hits and neighbour expansion --------------------------------------
    hits = [_hit(records[i], scores[i], rerank_scores.get(i)) for i in final_ids[: options.k]]
    start = time.perf_counter()
    if options.expand_neighbors > 0 and hits:
        hits = await _expand(store, hits, flt, options.expand_neighbors)
    timings["expand"] = _ms(start)
    timings["total"] = _ms(total_start)

    return SearchResult(
        original_query=query,
        rewritten_query=rewritten,
        legs=legs_out,
        fused=ranked(fused),
        capped=ranked(capped),
        reranked=reranked,
        hits=hits,
        timings_ms=timings,
        warnings=warnings,
        depth=depth,
        corpus_size=corpus_size,
        leg_queries={leg: leg_queries[leg] for leg in legs},
        signals=signals,
        rerank_model=rerank_model,
    )


async def _visible_size(store: Any, flt: SearchFilter) -> int:
    """The records ``flt`` admits, where the store can count them; else the whole corpus
    (test doubles and stores holding only what every caller may read)."""
    visible = getattr(store, "visible_size", None)
    if visible is None:
        return int(await engine_call(store, "corpus_size", store.corpus_size))
    return int(await engine_call(store, "visible_size", visible, flt))


def _one_hit_per_id(leg_hits: dict[str, list[Hit]]) -> dict[str, Hit]:
    """The first hit of each id, or a later one that holds its record (not deferred)."""
    first: dict[str, Hit] = {}
    for found in leg_hits.values():
        for hit in found:
            held = first.get(hit.id)
            if held is None or (isinstance(held, DeferredHit) and not isinstance(hit, DeferredHit)):
                first[hit.id] = hit
    return first


async def _fetch_records(store: Any, hits: Iterable[Hit]) -> set[str]:
    """Fetch the deferred hits' records where engine calls run (the loop or a thread, by
    their recent cost); the ids gone since the search. No deferred hit: no call."""
    deferred = [h for h in hits if isinstance(h, DeferredHit)]
    if not deferred:
        return set()
    return await engine_call(store.dense, "fetch", load_records, deferred)


def _doc_of(first: dict[str, Hit], item: FusedItem) -> str:
    return first[item.id].doc_id


def _without(
    gone: set[str], leg_hits: dict[str, list[Hit]], first: dict[str, Hit]
) -> tuple[dict[str, list[Hit]], dict[str, Hit]]:
    if not gone:
        return leg_hits, first
    kept = {leg: [h for h in found if h.id not in gone] for leg, found in leg_hits.items()}
    return kept, {i: h for i, h in first.items() if i not in gone}


def _fuse_with_signals(
    store: Any, leg_hits: dict[str, list[Hit]], first: dict[str, Hit], options: SearchOptions
) -> tuple[list[FusedItem], dict[str, float], dict[str, Any]]:
    """RRF over the legs, then the optional IDF gate and age decay: (fused, scores, signals)."""
    fused = rrf_fuse(
        {leg: [hit.id for hit in found] for leg, found in leg_hits.items()},
        weights=options.leg_weights,
        rrf_k=options.rrf_k,
    )
    signals: dict[str, Any] = {}
    scores = {f.id: f.score for f in fused}
    if options.idf_gate is not None and fused:
        analyse = getattr(store.lexical, "analyse", None)
        dropped, means = idf_gate(
            [(f.id, first[f.id].record.text) for f in fused],
            store.lexical.doc_freq,
            options.idf_gate,
            analyse=analyse,
        )
        fused = [f for f in fused if f.id not in dropped]
        signals["idf_gate"] = {
            "threshold": options.idf_gate,
            "dropped": sorted(dropped),
            "mean_idf": means,
        }
    if options.age_decay_half_life_days is not None and fused:
        half_life = options.age_decay_half_life_days
        factors = {f.id: age_decay_factor(first[f.id].record.timestamp, half_life) for f in fused}
        scores = {f.id: f.score * factors[f.id] for f in fused}
        fused_position = {f.id: n for n, f in enumerate(fused)}
        fused = sorted(fused, key=lambda f: (-round(scores[f.id], 12), fused_position[f.id]))
        signals["age_decay"] = {
            "half_life_days": half_life,
            "factors": {i: round(v, 6) for i, v in factors.items()},
        }
    return fused, scores, signals


async def _expand(
    store: Any, hits: list[SearchHit], flt: SearchFilter, top_n: int
) -> list[SearchHit]:
    """Add the adjacent sections of the top ``top_n`` hits right after each of them."""
    origins = hits[:top_n]
    neighbours = await asyncio.gather(
        *(engine_call(store, "neighbors", store.neighbors, h.id, flt) for h in origins)
    )
    present = {h.id for h in hits}
    extra: dict[str, list[SearchHit]] = {}
    for origin, found in zip(origins, neighbours, strict=True):
        for record in found:
            if record.id in present:
                continue
            present.add(record.id)
            added = _hit(record, origin.score)
            added.expanded_from = origin.id
            extra.setdefault(origin.id, []).append(added)
    out: list[SearchHit] = []
    for h in hits:
        out.append(h)
        out.extend(extra.get(h.id, []))
    return out
