"""Ingestion throughput and search latency per stage, on real data and at scale.

Two corpora:
- ``hotpotqa``: the union of the paragraphs of ../shared/data/hotpotqa/dev.jsonl (about 4k
  passages), the full pipeline with real MiniLM embeddings;
- ``generated``: N synthetic passages (default 100k). Embedding 100k passages with MiniLM
  takes ~20 min on 2 cores, so by default the generated corpus measures the *engines*
  (tantivy + Qdrant Edge, catalog, ingest bookkeeping) with deterministic random unit
  vectors in place of the model; ``--real-embeddings`` uses the model instead (the
  backends of ``--backends``, one run each), ``--short`` makes the passages short (12-36
  real words).

Prints a table and writes JSON (``--out``). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import random
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from retrieval.pipeline import hybrid_search  # noqa: E402
from retrieval.records import Meta, Record, chunk_id, content_hash  # noqa: E402
from retrieval.search_models import SearchOptions  # noqa: E402
from retrieval.store import Store  # noqa: E402

HOTPOT = REPO.parent / "shared" / "data" / "hotpotqa" / "dev.jsonl"


class RandomEmbedder:
    """Deterministic unit vectors from a text hash: exercises the engines, not the model."""

    name, version, dim = "random-384", "bench", 384

    def encode(self, texts: list[str]) -> list[list[float]]:
        out = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha1(t.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            out.append((v / np.linalg.norm(v)).tolist())
        return out


def passage_record(source: str, title: str, text: str, acl: str = "public") -> Record:
    doc = hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:16]
    doc_id = f"{source}:{doc}"
    return Record(
        id=chunk_id(doc_id, 0),
        source=source,
        text=text,
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        metadata={
            Meta.DOC_ID: doc_id,
            Meta.CHUNK_INDEX: 0,
            Meta.TITLE: title,
            Meta.CONTENT_HASH: content_hash(f"{title}\n{text}"),
            Meta.ACL: [acl],
            Meta.KIND: "passage",
        },
    )


def hotpot_corpus(limit_rows: int | None) -> tuple[list[Record], list[str]]:
    seen: set[tuple[str, str]] = set()
    records, questions = [], []
    with HOTPOT.open() as fh:
        for n, line in enumerate(fh):
            if limit_rows is not None and n >= limit_rows:
                break
            row = json.loads(line)
            questions.append(row["question"])
            for p in row["paragraphs"]:
                key = (p["title"], p["text"])
                if key not in seen:
                    seen.add(key)
                    records.append(passage_record("hotpotqa", p["title"], p["text"]))
    return records, questions


def model_words() -> list[str]:
    """The whole words of the embedding model's vocabulary (one token each)."""
    from retrieval.settings import RetrievalSettings

    vocab = Path(RetrievalSettings().embedding_model) / "vocab.txt"
    return [w for w in vocab.read_text().split() if w.isalpha() and len(w) >= 3]


def generated_corpus(n: int, short: bool = False, seed: int = 7) -> tuple[list[Record], list[str]]:
    """``n`` passages of 40-120 made-up words, or with ``short`` of 12-36 words of the
    model's vocabulary (about a token each: a chat message, a ticket's title, a row)."""
    rng = random.Random(seed)
    base = model_words() if short else [f"w{i}" for i in range(20_000)]
    vocab = base + [f"ERR-{i}" for i in range(500)]
    low, high = (12, 36) if short else (40, 120)
    records = []
    for i in range(n):
        words = rng.choices(vocab, k=rng.randint(low, high))
        # a tenth of the corpus is restricted, so filtered search is exercised
        acl = "finance" if i % 10 == 0 else "public"
        records.append(passage_record("generated", f"doc {i}", " ".join(words), acl))
    queries = [" ".join(rng.choices(vocab, k=4)) for _ in range(200)]
    return records, queries


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    return float(np.percentile(np.array(values), q))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_corpus(
    name: str, records: list[Record], queries: list[str], random_vectors: bool, n_queries: int
) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"wp-bench-{name}-") as tmp:
        store = Store.open(home=Path(tmp))
        if random_vectors:
            store.embedder = RandomEmbedder()  # type: ignore[assignment]
        else:
            store.embedder.encode(["warm up"])  # model load is not ingestion
        t0 = time.perf_counter()
        report = store.ingest(records, batch_records=1024)
        ingest_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        again = store.ingest(records, batch_records=1024)
        reingest_s = time.perf_counter() - t1

        flt = store.filter_for(["eng"])
        options = SearchOptions(k=10)
        stages: dict[str, list[float]] = {}
        for q in queries[:n_queries]:
            result = asyncio.run(hybrid_search(store, q, flt, options))
            for stage, ms in result.timings_ms.items():
                stages.setdefault(stage, []).append(ms)
        store.close()
    return {
        "corpus": name,
        "records": len(records),
        "vectors": "random (engines only)" if random_vectors else store.embedder.name,
        "backend": "-" if random_vectors else store.embedder.backend,
        "ingest_seconds": round(ingest_s, 2),
        "records_per_s": round(len(records) / ingest_s, 1),
        "embeddings_per_s": round(report.embeddings / ingest_s, 1),
        "reingest_unchanged_seconds": round(reingest_s, 2),
        "reingest_embeddings": again.embeddings,
        "queries": min(n_queries, len(queries)),
        "latency_ms": {
            s: {"p50": round(pct(v, 50), 2), "p95": round(pct(v, 95), 2)} for s, v in stages.items()
        },
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--corpus", choices=["hotpotqa", "generated", "all"], default="all")
    ap.add_argument("--generated", type=int, default=100_000, help="generated passages")
    ap.add_argument(
        "--real-embeddings",
        action="store_true",
        help="embed the generated corpus with the model (slow)",
    )
    ap.add_argument(
        "--short",
        action="store_true",
        help="generated passages of 12-36 words of the model's vocabulary (else 40-120 made-up)",
    )
    ap.add_argument(
        "--backends",
        default=os.environ.get("WAYPOINT_EMBEDDING_BACKEND", "torch"),
        help="with --real-embeddings: embedding backends to ingest with, one after another "
        "(torch,onnx,onnx-int8)",
    )
    ap.add_argument("--queries", type=int, default=200, help="queries per corpus")
    ap.add_argument("--hotpot-rows", type=int, default=None, help="limit HotpotQA rows")
    ap.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / "results" / "ingest_search.json"
    )
    args = ap.parse_args()

    results = []
    if args.corpus in ("hotpotqa", "all"):
        recs, qs = hotpot_corpus(args.hotpot_rows)
        results.append(run_corpus("hotpotqa", recs, qs, False, args.queries))
    if args.corpus in ("generated", "all"):
        recs, qs = generated_corpus(args.generated, args.short)
        for backend in args.backends.split(",") if args.real_embeddings else ["-"]:
            if backend != "-":
                os.environ["WAYPOINT_EMBEDDING_BACKEND"] = backend
            results.append(
                run_corpus("generated", recs, qs, not args.real_embeddings, args.queries)
            )

    for r in results:
        print(
            f"\n== {r['corpus']}: {r['records']} records, vectors: {r['vectors']} "
            f"(backend {r['backend']})"
        )
        print(
            f"ingest {r['ingest_seconds']} s = {r['records_per_s']} records/s, "
            f"{r['embeddings_per_s']} embeddings/s; unchanged re-ingest "
            f"{r['reingest_unchanged_seconds']} s ({r['reingest_embeddings']} embeddings)"
        )
        for stage, v in r["latency_ms"].items():
            print(f"  {stage:>8}: p50 {v['p50']:8.2f} ms   p95 {v['p95']:8.2f} ms")
        print(f"peak RSS {r['peak_rss_mb']} MB")
    payload = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2))
    print(f"\nwritten {args.out}")


if __name__ == "__main__":
    main()
