"""Single-round retrieval recall on HotpotQA dev: lexical-only, dense-only, hybrid.

Corpus: the union of every row's paragraphs, deduplicated on (title, text), one record per
paragraph with its title. Metric: the share of questions with BOTH gold paragraphs in the
top k (default 10) hits of ``retrieval.pipeline.hybrid_search``, plus recall@k of single
gold paragraphs and MRR of the first gold hit.

Besides the three modes at the pipeline defaults, it measures the knobs the defaults were
chosen from (each variant changes one thing): the query the dense leg embeds (original
question vs rewrite), the lexical title boost, the per-leg depth, and the dense embedding
text (the Store's default "title. text" vs text alone or "title: text"; each needs its own
index, so they run only when asked with --embed-variants).

    .venv/bin/python benchmarks/hotpot_recall.py [--data PATH] [--home DIR] [--out JSON]

The index is kept in --home (default .waypoint/bench-hotpot, git-ignored) and reused when unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrieval.engines.base import SearchFilter
from retrieval.pipeline import hybrid_search
from retrieval.records import PUBLIC_GROUP, Meta, Record, chunk_id, content_hash
from retrieval.search_models import SearchOptions
from retrieval.settings import RetrievalSettings
from retrieval.store import Store

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "hotpotqa" / "dev.jsonl"
UNDATED = datetime(2000, 1, 1, tzinfo=UTC)
PUBLIC = SearchFilter.for_groups([])
# What the dense leg embeds. "" = the Store's default (``store.embedding_text``: "title. text").
EMBED_VARIANTS = {"title": "", "text": "{text}", "colon": "{title}: {text}"}


@dataclass
class Question:
    id: str
    text: str
    gold: list[str]  # doc ids of the supporting paragraphs


def _doc_id(title: str, text: str) -> str:
    digest = hashlib.sha1(f"{title}\x00{text}".encode()).hexdigest()[:16]
    return f"hotpot:{digest}"


def load(path: Path, embed: str) -> tuple[list[Record], list[Question]]:
    records: dict[str, Record] = {}
    questions: list[Question] = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            gold: list[str] = []
            for para in row["paragraphs"]:
                title, text = para["title"], para["text"]
                doc_id = _doc_id(title, text)
                if doc_id not in records:
                    metadata: dict[str, Any] = {
                        Meta.DOC_ID: doc_id,
                        Meta.CHUNK_INDEX: 0,
                        Meta.TITLE: title,
                        Meta.KIND: "passage",
                        Meta.ACL: [PUBLIC_GROUP],
                        Meta.CONTENT_HASH: content_hash(f"{title}\x00{text}\x00{embed}"),
                    }
                    if embed in EMBED_VARIANTS and EMBED_VARIANTS[embed]:
                        metadata[Meta.EMBED_TEXT] = EMBED_VARIANTS[embed].format(
                            title=title, text=text
                        )
                    records[doc_id] = Record(
                        id=chunk_id(doc_id, 0),
                        source="hotpot",
                        text=text,
                        timestamp=UNDATED,
                        metadata=metadata,
                    )
                if para.get("is_supporting") and doc_id not in gold:
                    gold.append(doc_id)
            questions.append(Question(id=row["id"], text=row["question"], gold=gold))
    return list(records.values()), questions


async def evaluate(store: Store, questions: list[Question], options: SearchOptions) -> dict:
    both = 0
    found = 0
    gold_total = 0
    rr = 0.0
    latencies: list[float] = []
    for q in questions:
        result = await hybrid_search(store, q.text, PUBLIC, options)
        latencies.append(result.timings_ms["total"])
        top = [h.doc_id for h in result.hits[: options.k]]
        hit_gold = [g for g in q.gold if g in top]
        both += int(len(hit_gold) == len(q.gold))
        found += len(hit_gold)
        gold_total += len(q.gold)
        first = next((n for n, d in enumerate(top, start=1) if d in q.gold), None)
        rr += 1.0 / first if first else 0.0
    n = len(questions)
    latencies.sort()
    return {
        "both_gold_at_k": round(both / n, 4),
        "gold_recall_at_k": round(found / gold_total, 4),
        "mrr": round(rr / n, 4),
        "p50_ms": latencies[n // 2],
    }


def open_index(home: Path, records: list[Record]) -> Store:
    # No cross-encoder: this measures retrieval, and rerank is a separate stage.
    store = Store.open(RetrievalSettings(home=home, rerank_model=None))
    start = time.perf_counter()
    report = store.ingest(records)
    print(
        f"index {home}: {store.corpus_size()} passages "
        f"(added {report.added}, unchanged {report.unchanged}, failed {len(report.failed)}) "
        f"in {time.perf_counter() - start:.1f}s",
        file=sys.stderr,
    )
    return store


def _with_title_boost(store: Store, boost: float) -> Any:
    from retrieval.engines.tantivy_engine import TantivyLexicalEngine

    return TantivyLexicalEngine(store.settings.home / "lexical", title_boost=boost)


async def run(args: argparse.Namespace) -> dict:
    k = args.k
    records, questions = load(args.data, embed="title")
    questions = questions[: args.limit] if args.limit else questions
    print(f"{len(records)} passages, {len(questions)} questions", file=sys.stderr)
    figures: dict[str, Any] = {
        "data": str(args.data),
        "passages": len(records),
        "questions": len(questions),
        "k": k,
        "metric": "share of questions with both gold paragraphs in the top k",
        "modes": {},
        "variants": {},
    }

    async def measure(name: str, table: str, store: Store, **opts: Any) -> None:
        options = SearchOptions(k=k, rerank=False, **opts)
        start = time.perf_counter()
        figures[table][name] = scores = await evaluate(store, questions, options)
        scores["options"] = {key: value for key, value in opts.items()}
        print(
            f"{table:8} {name:34} both@{k}={scores['both_gold_at_k']:.3f} "
            f"recall@{k}={scores['gold_recall_at_k']:.3f} mrr={scores['mrr']:.3f} "
            f"({time.perf_counter() - start:.0f}s)",
            file=sys.stderr,
        )

    store = open_index(args.home / "title", records)
    try:
        figures["depth"] = (await hybrid_search(store, "x", PUBLIC)).depth
        await measure("lexical", "modes", store, legs=["lexical"])
        await measure("dense", "modes", store, legs=["dense"])
        await measure("hybrid", "modes", store)
        if not args.quick:
            await measure("dense, rewritten query", "variants", store, legs=["dense"],
                          dense_query="rewritten")  # fmt: skip
            await measure("hybrid, dense on rewritten query", "variants", store,
                          dense_query="rewritten")  # fmt: skip
            await measure("hybrid, no rewrite", "variants", store, rewrite=False)
            await measure("hybrid, depth 100", "variants", store, depth=100)
            await measure("hybrid, depth 20", "variants", store, depth=20)
            await measure("hybrid, lexical weight 0.7", "variants", store,
                          leg_weights={"lexical": 0.7})  # fmt: skip
            await measure("hybrid, dense weight 0.7", "variants", store,
                          leg_weights={"dense": 0.7})  # fmt: skip
            default_lexical = store.lexical
            for boost in args.title_boosts:
                store.lexical = _with_title_boost(store, boost)
                try:
                    await measure(f"lexical, title boost {boost:g}", "variants", store,
                                  legs=["lexical"])  # fmt: skip
                    await measure(f"hybrid, title boost {boost:g}", "variants", store)
                finally:
                    store.lexical.close()
                    store.lexical = default_lexical
    finally:
        store.close()

    for embed in args.embed_variants:
        variant_records, _ = load(args.data, embed=embed)
        variant_store = open_index(args.home / embed, variant_records)
        label = EMBED_VARIANTS[embed].replace("{", "").replace("}", "")
        try:
            await measure(f"dense, embed '{label}'", "variants", variant_store, legs=["dense"])
            await measure(f"hybrid, embed '{label}'", "variants", variant_store)
        finally:
            variant_store.close()

    modes = figures["modes"]
    best_leg = max(modes["lexical"]["both_gold_at_k"], modes["dense"]["both_gold_at_k"])
    figures["hybrid_not_worse_than_best_leg"] = modes["hybrid"]["both_gold_at_k"] >= best_leg
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--home", type=Path, default=REPO / ".waypoint" / "bench-hotpot")
    parser.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / "results" / "hotpot_recall.json"
    )
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--limit", type=int, default=0, help="first N questions only")
    parser.add_argument(
        "--title-boosts",
        type=float,
        nargs="*",
        default=[0.5, 1.0, 1.5, 3.0],
        help="lexical title boosts to compare with the engine default",
    )
    parser.add_argument("--quick", action="store_true", help="the three modes only")
    parser.add_argument(
        "--embed-variants",
        nargs="*",
        choices=[e for e in EMBED_VARIANTS if e != "title"],
        default=[],
        help="also build an index whose dense leg embeds 'text' alone or 'colon' (title: text)",
    )
    args = parser.parse_args()
    if not args.data.is_file():
        print(f"error: no data file at {args.data}", file=sys.stderr)
        raise SystemExit(2)
    figures = asyncio.run(run(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n")
    modes = figures["modes"]
    for name in ("lexical", "dense", "hybrid"):
        print(f"{name:8} both-gold@{args.k} = {modes[name]['both_gold_at_k']:.3f}")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
