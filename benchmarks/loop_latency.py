"""Research-loop latency: iterative against hybrid on one eval set, in one process.

Answers the first N questions of a multi-hop set one after another in ``hybrid`` and in
``iterative`` mode (rule policy, budget 10, a SQLite checkpointer and trace store in a temp
dir, as ``waypoint eval`` does), alternating the modes question by question so both see
the same machine load. Prints p50 seconds per question, the ratio (target: iterative
<= 3x hybrid), where the loop's time goes (per node, outside the nodes, tool calls,
embedding calls, and each mode's embedding call p50: hybrid's time is mostly one, so the
host's embedding speed moves the ratio), the loop's critical path (from a question's start:
its first query embedding back, its first round's searches done, then the rest of the run)
and the load average; writes the figures as JSON.

The eval index must already be cached (``waypoint eval <set>`` builds it once).

    .venv/bin/python benchmarks/loop_latency.py ../shared/data/musique/dev.jsonl \\
        [--limit 40] [--out benchmarks/results/loop_latency.json]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from evalsets.index import open_eval_index
from evalsets.loaders import load_questions
from evalsets.runner import ModeRunner
from graph.models import Caller, RunOptions
from graph.runner import Researcher


def _p50(values: list[float]) -> float:
    return round(statistics.median(values), 4) if values else 0.0


async def measure(path: Path, limit: int, budget: int) -> dict[str, Any]:
    es = load_questions(path, [])
    index = open_eval_index(es.records, es.dataset, None)
    store = index.store
    questions = es.questions[:limit]
    encodes: list[int] = []
    # Each mode's query-embedding calls (ms): hybrid's p50 is mostly one, so how fast the
    # host embeds right now moves the ratio (read the two figures beside it).
    encode_ms: dict[str, list[float]] = {"hybrid": [], "iterative": []}
    encode_done: list[float] = []  # wall clock (time.time, as trace events) of each return
    mode = ["hybrid"]
    encode = store.embedder.encode_queries

    def counting_encode(texts: list[str]) -> list[list[float]]:
        encodes.append(len(texts))
        started = time.perf_counter()
        try:
            return encode(texts)  # type: ignore[no-any-return]
        finally:
            encode_ms[mode[0]].append((time.perf_counter() - started) * 1000)
            encode_done.append(time.time())

    store.embedder.encode_queries = counting_encode  # type: ignore[method-assign]
    hybrid = ModeRunner(store, "hybrid", budget)
    scratch = tempfile.TemporaryDirectory(prefix="waypoint-loop-latency-")
    researcher = Researcher(store, checkpointer_path=Path(scratch.name) / "runs.sqlite")
    hy_s: list[float] = []
    it_s: list[float] = []
    node_ms: collections.Counter[str] = collections.Counter()
    tool_ms: collections.Counter[str] = collections.Counter()
    tool_n: collections.Counter[str] = collections.Counter()
    path: dict[str, list[float]] = {"first_embedding": [], "round_1_searches": [], "rest": []}
    rounds = calls = 0
    encode_calls = 0
    options = RunOptions(mode="iterative", budget=budget)
    try:
        await hybrid.answer(questions[0])  # load the models outside the figures
        await researcher.run(questions[0].question, Caller(), options)
        for ms in encode_ms.values():
            ms.clear()  # the warm-up's
        for q in questions:
            mode[0] = "hybrid"
            hy_s.append((await hybrid.answer(q)).seconds)
            mode[0] = "iterative"
            caller = Caller(user=q.user, groups=list(q.groups))
            before = len(encodes)
            encode_done.clear()
            wall_start = time.time()
            started = time.perf_counter()
            result = await researcher.run(q.question, caller, options)
            it_s.append(time.perf_counter() - started)
            wall_end = time.time()
            encode_calls += len(encodes) - before
            rounds += result.rounds
            calls += result.tool_calls
            trace = researcher.get_trace(result.run_id)
            searched = next(
                (e.ts for e in trace if e.type == "node_end" and e.node == "execute"), None
            )
            if encode_done and searched is not None:
                path["first_embedding"].append(encode_done[0] - wall_start)
                path["round_1_searches"].append(searched - encode_done[0])
                path["rest"].append(wall_end - searched)
            for event in trace:
                if event.type == "node_end" and event.node:
                    node_ms[event.node] += event.data.get("duration_ms", 0.0)
                elif event.type == "tool_result":
                    tool_ms[event.data["tool"]] += event.data.get("duration_ms", 0.0)
                    tool_n[event.data["tool"]] += 1
    finally:
        await researcher.aclose()
        await hybrid.aclose()
        scratch.cleanup()
    n = len(questions)
    in_nodes = sum(node_ms.values()) / n
    return {
        "dataset": es.dataset,
        "questions": n,
        "budget": budget,
        "hybrid_p50_s": _p50(hy_s),
        "iterative_p50_s": _p50(it_s),
        "ratio_p50": round(_p50(it_s) / _p50(hy_s), 2) if hy_s and _p50(hy_s) else None,
        "iterative_mean_s": round(statistics.mean(it_s), 4),
        "rounds_mean": round(rounds / n, 2),
        "tool_calls_mean": round(calls / n, 2),
        "embedding_calls_per_question": round(encode_calls / n, 2),
        "embedding_call_p50_ms": {
            m: round(statistics.median(v), 2) for m, v in encode_ms.items() if v
        },
        "node_ms_per_question": {k: round(v / n, 1) for k, v in node_ms.most_common()},
        "outside_nodes_ms_per_question": round(statistics.mean(it_s) * 1000 - in_nodes, 1),
        "tool_ms_per_call": {k: round(v / tool_n[k], 1) for k, v in tool_ms.items()},
        # p50 of each stretch over the questions that embedded (they need not add up)
        "critical_path_p50_ms": {
            k: round(statistics.median(v) * 1000, 1) for k, v in path.items() if v
        },
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/loop_latency.json"))
    args = parser.parse_args()
    figures = asyncio.run(measure(args.questions, args.limit, args.budget))
    for key, value in figures.items():
        print(f"{key}: {value}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
