"""Start-up checks of an index home: is each store there, and does it read?

``Store.open`` creates whatever is missing, so a home whose lexical index, vector shard or
catalog was deleted opened as an empty one and served with a leg silently empty. These
checks look at the files *before* anything is opened or created, and say per component
what is wrong, which file, and the command that repairs it:

* fatal (``Finding.fatal``): the home cannot be served as it is (a catalog that is not a
  database, a catalog gone while the engines still hold an index, an index that does not
  open). A command refuses with one line.
* degraded: the home serves, with a component missing (the lexical index or the vector
  shard of a catalog that holds chunks): ``/healthz`` reports it, with HTTP 503.

Only files are read here (SQLite read-only, tantivy's meta file); nothing is written and
no engine lock is taken, so the checks also run beside a process that holds the home.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

# Marker files of an existing Qdrant Edge shard (as retrieval.engines.qdrant_edge).
_SHARD_MARKERS = ("edge_config.json", "segments")


@dataclass(frozen=True)
class Finding:
    component: str  # catalog | lexical | dense | runs | traces | tasks
    path: Path
    problem: str
    repair: str
    fatal: bool

    def line(self) -> str:
        """One line: the file, what is wrong with it, the repair."""
        return f"{self.component} {self.path}: {self.problem}; {self.repair}"


def sqlite_problem(path: Path) -> str | None:
    """None when ``path`` (an existing file) is a readable SQLite database whose
    ``PRAGMA quick_check`` passes; else what is wrong, in a few words."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as exc:
        return f"cannot be opened ({exc})"
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.Error as exc:
        return f"is not a readable SQLite database ({exc})"
    finally:
        conn.close()
    result = " ".join("; ".join(str(r[0]) for r in rows[:3]).split())  # one line
    return None if result == "ok" else f"fails PRAGMA quick_check ({result[:200]})"


def _catalog_facts(path: Path) -> tuple[int, str | None]:
    """(chunks, generation) of a readable catalog; (0, None) for one without tables."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        chunks = (
            int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
            if "chunks" in tables
            else 0
        )
        generation = None
        if "meta" in tables:
            row = conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
            generation = str(row[0]) if row else None
        return chunks, generation
    finally:
        conn.close()


def _leg_chunks(catalog: Path, leg: str) -> int:
    """Chunks of the catalog that belong in ``leg``'s index (no ``legs``: both)."""
    conn = sqlite3.connect(f"file:{catalog}?mode=ro", uri=True, timeout=10)
    try:
        row = conn.execute(
            "SELECT count(*) FROM chunks WHERE json_extract(record, '$.metadata.legs') IS NULL"
            " OR EXISTS (SELECT 1 FROM json_each(record, '$.metadata.legs') WHERE value = ?)",
            (leg,),
        ).fetchone()
        return int(row[0])
    except sqlite3.Error:
        return 0
    finally:
        conn.close()


def _lexical_problem(folder: Path) -> str | None:
    """None when tantivy's meta file is there and lists segments whose files exist."""
    meta = folder / "meta.json"
    if not meta.is_file():
        return "missing"
    try:
        data = json.loads(meta.read_text())
        segments = [s["segment_id"].replace("-", "") for s in data.get("segments", [])]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return f"corrupt meta.json ({type(exc).__name__})"
    names = {p.name.split(".", 1)[0] for p in folder.iterdir()}
    lost = [s for s in segments if s not in names]
    if lost:
        return f"corrupt: {len(lost)} segment(s) listed in meta.json have no files"
    return None if _lexical_docs(data) else "empty"


def _lexical_docs(meta: dict) -> int:
    """Live documents of a tantivy index, from its meta.json."""
    total = 0
    for segment in meta.get("segments", []):
        deletes = segment.get("deletes") or {}
        total += int(segment.get("max_doc", 0)) - int(deletes.get("num_deleted_docs", 0))
    return total


def _dense_points(shard: Path) -> int | None:
    """Points of a Qdrant Edge shard; None when it cannot be told here (held by another
    process: opening it then reports that; or an unreadable shard: opening it fails)."""
    try:
        import qdrant_edge as qe

        handle = qe.EdgeShard.load(str(shard))
    except Exception:  # noqa: BLE001 - the binding raises bare Exception
        return None
    try:
        return int(handle.count(qe.CountRequest(exact=True)))
    except Exception:  # noqa: BLE001
        return None
    finally:
        handle.close()


def _has_index_files(home: Path) -> list[str]:
    held = []
    if (home / "lexical" / "meta.json").exists():
        held.append("lexical/")
    dense = home / "dense"
    if dense.is_dir() and any(
        (g / m).exists() for g in dense.iterdir() if g.is_dir() for m in _SHARD_MARKERS
    ):
        held.append("dense/")
    return held


def check_home(
    home: Path, *, lexical_backend: str = "tantivy", dense_backend: str = "edge"
) -> list[Finding]:
    """What is wrong with the stores of ``home``; empty for a sound or a new home."""
    home = Path(home)
    findings: list[Finding] = []
    catalog = home / "catalog.sqlite"
    if not catalog.exists():
        held = _has_index_files(home)
        if held:
            findings.append(
                Finding(
                    "catalog",
                    catalog,
                    f"missing, while {' and '.join(held)} still hold an index",
                    f"restore it from a backup, or delete {home} and re-ingest "
                    f"(`waypoint ingest PATH --index {home}`)",
                    fatal=True,
                )
            )
        return findings
    problem = sqlite_problem(catalog)
    if problem is not None:
        findings.append(
            Finding(
                "catalog",
                catalog,
                problem,
                f"restore it from a backup, or delete {home} and re-ingest "
                f"(`waypoint ingest PATH --index {home}`)",
                fatal=True,
            )
        )
        return findings
    try:
        chunks, generation = _catalog_facts(catalog)
    except sqlite3.Error as exc:
        findings.append(
            Finding("catalog", catalog, f"unreadable ({exc})", "restore it", fatal=True)
        )
        return findings
    if lexical_backend == "tantivy":
        folder = home / "lexical"
        lexical = _lexical_problem(folder)
        if lexical in ("missing", "empty"):
            wanted = _leg_chunks(catalog, "lexical") if chunks else 0
            if wanted:
                findings.append(
                    Finding(
                        "lexical",
                        folder,
                        f"{lexical} (the catalog holds {wanted} chunks for it): keyword search "
                        "finds nothing",
                        f"run `waypoint reindex --index {home}`",
                        fatal=False,
                    )
                )
        elif lexical is not None:
            findings.append(
                Finding(
                    "lexical",
                    folder,
                    lexical,
                    f"delete the folder and run `waypoint reindex --index {home}`",
                    fatal=True,
                )
            )
    if dense_backend == "edge" and chunks and generation:
        shard = home / "dense" / generation
        state = None
        if not any((shard / m).exists() for m in _SHARD_MARKERS):
            state = "missing"
        elif _dense_points(shard) == 0:
            state = "empty"  # recreated empty by an earlier start after a deletion
        wanted = _leg_chunks(catalog, "dense") if state is not None else 0
        if wanted:
            findings.append(
                Finding(
                    "dense",
                    shard,
                    f"{state} (the catalog holds {wanted} chunks for it): vector search "
                    "finds nothing",
                    f"run `waypoint reindex --index {home}`",
                    fatal=False,
                )
            )
    return findings
