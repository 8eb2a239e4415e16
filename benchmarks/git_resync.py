"""Re-sync of a git repository after a small commit (issue 23 target: a commit touching 5
of 2,000 files re-embeds only those files and takes at most 10 s).

Builds a repository of ``--files`` generated Python modules (a docstring, a class with
two methods, a function: one to three chunks each) with the git command line, ingests it
with real MiniLM embeddings, commits a change to ``--changed`` files and one deletion, and
re-syncs. Reports the full ingest, the re-sync (the diff read, the changed files parsed
and embedded, one catalog commit) and the embeddings each computed. The store is opened
before the clock starts (model load is not part of a sync). ``--fast-initial``: the first,
full ingest embeds with deterministic random vectors (it only sets the stage; ~6,000
real embeddings take minutes on 2 cores), the re-sync with the real model.

Prints a table and writes JSON (``--out``). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.ingest_search import RandomEmbedder  # noqa: E402
from retrieval.store import Store  # noqa: E402
from retrieval.sync import ingest_path  # noqa: E402

MODULE = '''"""Settlement module {i}: posts ledger entries for batch {i}."""

RATE_{i} = {i}


class Settlement{i}:
    """Settles batch {i} against the ledger."""

    def post(self, entry):
        return entry.amount * RATE_{i}

    def reverse(self, entry):
        return -entry.amount * RATE_{i}


def reconcile_{i}(entries, version={v}):
    return sum(e.amount for e in entries) + version
'''


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
        "HOME": str(repo),
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def _module_path(repo: Path, i: int) -> Path:
    return repo / "src" / f"pkg{i % 40}" / f"settlement_{i}.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--changed", type=int, default=5)
    ap.add_argument("--fast-initial", action="store_true", help="random vectors for the setup")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "git_resync.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="waypoint-git-bench-") as tmp:
        repo = Path(tmp) / "repo"
        for i in range(args.files):
            path = _module_path(repo, i)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(MODULE.format(i=i, v=0))
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "add", ".")
        _git(repo, "commit", "-q", "-m", "generated")
        store = Store.open(home=Path(tmp) / "home")
        try:
            model = store.embedder
            if args.fast_initial:
                store.embedder = RandomEmbedder()  # type: ignore[assignment]
            started = time.perf_counter()
            full = ingest_path(store, repo, source="code")
            full_s = time.perf_counter() - started
            store.embedder = model
            for i in range(args.changed):
                _module_path(repo, i).write_text(MODULE.format(i=i, v=1))
            _git(repo, "rm", "-q", str(_module_path(repo, args.files - 1).relative_to(repo)))
            _git(repo, "commit", "-q", "-am", "change")
            started = time.perf_counter()
            again = ingest_path(store, repo, source="code")
            resync_s = time.perf_counter() - started
        finally:
            store.close()
    result = {
        "files": args.files,
        "changed": args.changed,
        "deleted": again.report.deleted,
        "full_ingest_s": round(full_s, 2),
        "full_embeddings_real": not args.fast_initial,
        "full_records": len(full.loaded.records),
        "full_embeddings": full.report.embeddings,
        "resync_s": round(resync_s, 2),
        "resync_paths_read": len(again.loaded.touched or []),
        "resync_updated": again.report.updated,
        "resync_embeddings": again.report.embeddings,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
    }
    print(f"{'measure':<28}{'value':>12}")
    for key, value in result.items():
        print(f"{key:<28}{value!s:>12}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
