"""Embedding throughput of short passages per backend, in one run (issue 23: ONNX Runtime
against torch), and whether each backend passes its agreement check.

Passages: HotpotQA dev paragraphs from ../shared/data/hotpotqa/dev.jsonl when present
(``--passages`` of them), else generated sentences; ``--lengths`` measures them whole
(``paragraph``, about 100 tokens) and cut to their first sentence (``short``, about 25
tokens: a chat message, a ticket title, a table row). Each backend (``torch``, ``onnx``,
``onnx-int8``) embeds the same passages through :class:`retrieval.embedding.Embedder` as
an ingest does, after a warm-up (the export, the session, the check) that is not timed;
``min cosine`` compares its vectors with the torch model's. A backend whose check fails
is reported as refused (an ingest would use torch).

Prints a table and writes JSON (``--out``). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from retrieval.embedding import Embedder  # noqa: E402
from retrieval.settings import RetrievalSettings  # noqa: E402

HOTPOT = REPO.parent / "shared" / "data" / "hotpotqa" / "dev.jsonl"


def passages(n: int) -> tuple[list[str], str]:
    if HOTPOT.exists():
        out: list[str] = []
        seen: set[str] = set()
        with HOTPOT.open() as fh:
            for line in fh:
                row = json.loads(line)
                for paragraph in row.get("paragraphs", []):
                    title, text = paragraph.get("title", ""), paragraph.get("text", "").strip()
                    if text and title not in seen:
                        seen.add(title)
                        out.append(f"{title}. {text}")
                if len(out) >= n:
                    return out[:n], "hotpotqa dev paragraphs"
        if out:
            return out, "hotpotqa dev paragraphs"
    rng = random.Random(7)
    words = (
        "the ledger service posts refunds when the payments api times out and the on-call "
        "engineer pages the team lead about ERR-4012 in region eu-west after a deploy"
    ).split()
    return [" ".join(rng.choice(words) for _ in range(rng.randint(20, 80))) for _ in range(n)], (
        "generated sentences"
    )


def first_sentence(text: str) -> str:
    """A paragraph's first sentence (at most 200 characters)."""
    cut = text.find(". ", 40)
    return (text if cut < 0 else text[: cut + 1])[:200]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--passages", type=int, default=1000)
    ap.add_argument("--backends", default="torch,onnx,onnx-int8")
    ap.add_argument("--lengths", default="short,paragraph", help="short, paragraph or both")
    ap.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / "results" / "embed_throughput.json"
    )
    args = ap.parse_args()
    paragraphs, corpus = passages(args.passages)
    model = RetrievalSettings().embedding_model
    rows: list[dict[str, object]] = []
    for length in args.lengths.split(","):
        texts = paragraphs if length == "paragraph" else [first_sentence(t) for t in paragraphs]
        reference: np.ndarray | None = None
        for backend in args.backends.split(","):
            os.environ["WAYPOINT_EMBEDDING_BACKEND"] = backend
            embedder = Embedder(model)
            # Warm-up as an ingest's first batch: load, export, session, the agreement
            # check (on a fixed sample and these first texts).
            embedder.encode(texts[:64])
            used = embedder.backend
            started = time.perf_counter()
            vectors = np.array(embedder.encode(texts))
            seconds = time.perf_counter() - started
            if reference is None:
                reference = np.array(embedder._encode_torch(texts)) if used != "torch" else vectors
            cosine = (vectors * reference).sum(axis=1)
            rows.append(
                {
                    "length": length,
                    "mean_chars": round(sum(map(len, texts)) / len(texts)),
                    "backend": backend,
                    "used": used,
                    "passages_per_s": round(len(texts) / seconds, 1),
                    "seconds": round(seconds, 2),
                    "min_cosine": round(float(cosine.min()), 5),
                    "mean_cosine": round(float(cosine.mean()), 5),
                }
            )
    print(f"{len(paragraphs)} {corpus}, load average {os.getloadavg()[0]:.1f}")
    print(
        f"{'length':<11}{'chars':>6}  {'backend':<12}{'used':<12}{'passages/s':>12}"
        f"{'seconds':>10}{'min cos':>10}"
    )
    for row in rows:
        print(
            f"{row['length']!s:<11}{row['mean_chars']!s:>6}  {row['backend']!s:<12}"
            f"{row['used']!s:<12}{row['passages_per_s']!s:>12}{row['seconds']!s:>10}"
            f"{row['min_cosine']!s:>10}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "passages": len(paragraphs),
                "corpus": corpus,
                "rows": rows,
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": platform.machine(),
                "load_average": os.getloadavg()[0],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
