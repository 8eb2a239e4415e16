"""Fan-out benchmark: a round costs its slowest leg, not the sum.

Two fake tools of known delay (0.3 s and 0.6 s) run through the real executor; the round
time is compared with the slowest tool. Target: round <= 1.15 x slowest.

    .venv/bin/python benchmarks/fanout.py [--repeats 5] [--out benchmarks/results/fanout.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from pydantic import BaseModel

from tools.catalog import Catalog, ToolOutput, ToolSpec
from tools.context import ToolContext
from tools.executor import ToolCall, ToolExecutor
from tools.testing import MemoryStore

DELAYS = {"fast_tool": 0.3, "slow_tool": 0.6}
TARGET = 1.15


class _Args(BaseModel):
    query: str


def _sleeper(delay: float):  # noqa: ANN202
    async def tool(ctx: ToolContext, args: _Args) -> ToolOutput:
        await asyncio.sleep(delay)
        return ToolOutput(evidence=[])

    return tool


async def measure(repeats: int) -> dict[str, object]:
    catalog = Catalog([ToolSpec(n, f"sleeps {d}s", _Args, _sleeper(d)) for n, d in DELAYS.items()])
    executor = ToolExecutor(catalog, max_concurrency=4, timeout_s=5)
    ctx = ToolContext.for_caller(MemoryStore(), [])
    calls = [ToolCall(tool=n, args={"query": n}) for n in DELAYS]
    rounds = []
    for _ in range(repeats):
        started = time.perf_counter()
        outcomes = await executor.run(calls, ctx, round_no=1)
        rounds.append(time.perf_counter() - started)
        assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    slowest, total = max(DELAYS.values()), sum(DELAYS.values())
    median = statistics.median(rounds)
    return {
        "tools": DELAYS,
        "repeats": repeats,
        "round_s_median": round(median, 4),
        "round_s_max": round(max(rounds), 4),
        "slowest_tool_s": slowest,
        "sum_of_tools_s": total,
        "ratio_to_slowest": round(median / slowest, 3),
        "target_ratio": TARGET,
        "meets_target": median / slowest <= TARGET,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/fanout.json"))
    args = parser.parse_args()
    report = asyncio.run(measure(args.repeats))
    print(
        f"round {report['round_s_median']:.3f}s vs slowest tool {report['slowest_tool_s']}s "
        f"(sum {report['sum_of_tools_s']:.1f}s): {report['ratio_to_slowest']}x "
        f"(target <= {TARGET}x) {'OK' if report['meets_target'] else 'MISSED'}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
