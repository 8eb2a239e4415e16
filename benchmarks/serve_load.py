"""Load benchmark of the HTTP service: N concurrent streaming answers for D seconds.

Starts `waypoint serve` on 127.0.0.1 (embedded engines, rule policy) over an index, keeps
``--concurrency`` clients each posting ``/v1/answers`` with ``Accept: text/event-stream``
back to back, and reports: requests completed, p50/p95 time to the first event and to
``done``, errors, and the server's RSS at start and end. Prints a table and writes JSON.

    .venv/bin/python benchmarks/serve_load.py                 # fixture corpus, 20 x 60 s
    .venv/bin/python benchmarks/serve_load.py --home .waypoint --duration 60 --out r.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
WAYPOINT = str(Path(sys.executable).parent / "waypoint")
FIXTURE = REPO / "tests" / "e2e" / "fixtures" / "corpus"
QUESTIONS = [
    "Who leads the team that owns the Payments Service?",
    "Who owns Fraud Gate?",
    "What caused the Payments Service outage in March?",
    "How fast must pages be acknowledged?",
    "Which team renews the Fraud Gate certificates?",
]
KEY = "bench-key"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 4)
    return round(statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1], 4)


def _build_index(home: Path) -> None:
    env = {**os.environ, "WAYPOINT_HOME": str(home)}
    for args in (
        ["--source", "wiki", str(FIXTURE / "wiki")],
        ["--source", "hr", "--acl", "hr", str(FIXTURE / "hr")],
    ):
        subprocess.run(
            [WAYPOINT, "ingest", *args],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


async def _client_loop(base: str, stop_at: float, idx: int, stats: dict[str, Any]) -> None:
    headers = {"Authorization": f"Bearer {KEY}", "Accept": "text/event-stream"}
    n = idx
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        while time.monotonic() < stop_at:
            question = QUESTIONS[n % len(QUESTIONS)]
            n += 1
            start = time.perf_counter()
            first: float | None = None
            outcome = "no_done"
            try:
                async with client.stream(
                    "POST", "/v1/answers", json={"question": question}, headers=headers
                ) as r:
                    if r.status_code != 200:
                        outcome = f"http_{r.status_code}"
                    else:
                        kind = ""
                        async for line in r.aiter_lines():
                            if line.startswith("data:") and kind == "error":
                                stats["error_samples"].append(line[5:].strip()[:300])
                            if line.startswith("event:"):
                                if first is None:
                                    first = time.perf_counter() - start
                                kind = line.split(":", 1)[1].strip()
                                if kind == "done":
                                    outcome = "done"
                                elif kind == "error":
                                    outcome = "error_event"
            except httpx.HTTPError as exc:
                outcome = f"transport_{type(exc).__name__}"
            total = time.perf_counter() - start
            if first is not None:
                stats["first"].append(first)
            if outcome == "done":
                stats["done"].append(total)
            else:
                stats["errors"][outcome] = stats["errors"].get(outcome, 0) + 1


async def _load(base: str, concurrency: int, duration: float) -> dict[str, Any]:
    stats: dict[str, Any] = {"first": [], "done": [], "errors": {}, "error_samples": []}
    stop_at = time.monotonic() + duration
    await asyncio.gather(*(_client_loop(base, stop_at, i, stats) for i in range(concurrency)))
    return stats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, help="existing index (default: fixture corpus)")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / "results" / "serve_load.json"
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="waypoint-bench-"))
    try:
        home = work / "home"
        if args.home:
            shutil.copytree(args.home, home)
        else:
            print("building the fixture index ...", file=sys.stderr)
            _build_index(home)
        auth = work / "keys.json"
        auth.write_text(json.dumps({"keys": {KEY: {"user": "bench", "groups": ["eng"]}}}))
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        env = {
            **os.environ,
            "WAYPOINT_HOME": str(home),
            "WAYPOINT_AUTH_FILE": str(auth),
            "WAYPOINT_POLICY": "rule",
            "WAYPOINT_RATE_LIMIT_BURST": "100000",
            "WAYPOINT_RATE_LIMIT_PER_MINUTE": "1000000",
            "WAYPOINT_LOG_LEVEL": "WARNING",
        }
        log = (work / "serve.log").open("wb")
        server = subprocess.Popen(
            [WAYPOINT, "serve", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("server did not start; see " + str(work / "serve.log"))
                time.sleep(0.2)
            # one warm-up request so model loading is not measured
            httpx.post(
                f"{base}/v1/answers",
                json={"question": QUESTIONS[0]},
                headers={"Authorization": f"Bearer {KEY}"},
                timeout=120,
            )
            rss_start = _rss_mb(server.pid)
            stats = asyncio.run(_load(base, args.concurrency, args.duration))
            rss_end = _rss_mb(server.pid)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
            log.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    report = {
        "benchmark": "serve_load",
        "concurrency": args.concurrency,
        "duration_s": args.duration,
        "policy": "rule",
        "completed": len(stats["done"]),
        "throughput_per_s": round(len(stats["done"]) / args.duration, 2),
        "first_event_s": {"p50": _pct(stats["first"], 50), "p95": _pct(stats["first"], 95)},
        "done_s": {
            "p50": _pct(stats["done"], 50),
            "p95": _pct(stats["done"], 95),
            "p99": _pct(stats["done"], 99),
            "max": round(max(stats["done"]), 3) if stats["done"] else None,
        },
        "errors": sum(stats["errors"].values()),
        "error_kinds": stats["errors"],
        "error_samples": stats["error_samples"][:5],
        "server_rss_mb": {"start": rss_start, "end": rss_end},
        "cpus": os.cpu_count(),
    }
    print(f"completed           {report['completed']} ({report['throughput_per_s']}/s)")
    print(
        f"first event p50/p95 {report['first_event_s']['p50']} / {report['first_event_s']['p95']} s"
    )
    done = report["done_s"]
    print(f"done p50/p95/p99    {done['p50']} / {done['p95']} / {done['p99']} s", end="")
    print(f" (max {done['max']})")
    print(f"errors              {report['errors']} {report['error_kinds'] or ''}")
    for sample in report["error_samples"]:
        print(f"  error: {sample}")
    print(f"server RSS          {rss_start} MB -> {rss_end} MB")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")
    return 0 if report["errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
