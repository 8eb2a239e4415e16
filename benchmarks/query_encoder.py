"""Query-encoder benchmark: the eager model against its TorchScript trace.

For batches of 1 and 2 search queries (MuSiQue questions by default), on one torch
thread as the query-encoder threads run: the time of an encode alone, and beside a
Python thread that wants the GIL all the time (what a busy event loop is to the
encoder). Also checks that both give the same vectors.

    .venv/bin/python benchmarks/query_encoder.py [--questions ../shared/data/musique/dev.jsonl]
        [--repeats 150] [--out benchmarks/results/query_encoder.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

DEFAULT_QUESTIONS = Path(__file__).resolve().parents[1] / "evalsets" / "acme" / "questions.jsonl"


def _questions(path: Path) -> list[str]:
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            out.append(str(json.loads(line)["question"]))
    return out


def _timed(fn: Any, batches: list[list[str]]) -> list[float]:
    took = []
    for texts in batches:
        start = time.perf_counter()
        fn(texts)
        took.append(time.perf_counter() - start)
    return took


def _beside_spinner(fn: Any, batches: list[list[str]]) -> list[float]:
    """Encode times while another thread runs Python without pause."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        return _timed(fn, batches)
    finally:
        stop.set()
        thread.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS)
    parser.add_argument("--repeats", type=int, default=150)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import torch

    from retrieval.embedding import Embedder, _traced_for
    from retrieval.settings import RetrievalSettings

    torch.set_num_threads(1)  # as on the query-encoder threads
    embedder = Embedder(RetrievalSettings().embedding_model)
    model = embedder._load()
    traced = _traced_for(embedder.model_path, model, embedder.encode)
    if traced is None:
        print("the model's trace is not usable here (see the log): nothing to compare")
        return 1
    qs = _questions(args.questions)
    qs = (qs * (1 + 2 * args.repeats // max(len(qs), 1)))[: 2 * args.repeats + 1]
    encoders = {"eager": embedder.encode, "torchscript": traced.encode}
    report: dict[str, Any] = {"questions": str(args.questions), "repeats": args.repeats}
    same = True
    for n in (1, 2):
        batches = [qs[i : i + n] for i in range(args.repeats)]
        same = same and all(embedder.encode(b) == traced.encode(b) for b in batches[:20])
        for name, fn in encoders.items():
            fn(batches[0])  # warm
            alone = _timed(fn, batches)
            beside = _beside_spinner(fn, batches[: max(10, args.repeats // 5)])
            row = {
                "alone_p50_ms": round(statistics.median(alone) * 1000, 2),
                "beside_gil_spinner_p50_ms": round(statistics.median(beside) * 1000, 2),
            }
            report[f"{name}_batch{n}"] = row
            print(
                f"{name:12} batch {n}: alone p50 {row['alone_p50_ms']:7.2f} ms, beside a "
                f"thread running Python without pause {row['beside_gil_spinner_p50_ms']:8.2f} ms"
            )
    report["same_vectors"] = same
    print(f"same vectors (first 20 batches of each size): {same}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
        print(f"wrote {args.out}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
