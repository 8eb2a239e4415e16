"""The evaluation index: a Store home of its own, keyed by the corpus content hash.

It lives under ``<home>/eval/<hash>`` (never the user's index) and is reused as long as
the corpus, the embedding model and the engine backends are the same: a second run of
the same evaluation skips ingestion. A home without the completion marker (an ingestion
that was interrupted) is discarded and rebuilt.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval.records import Record
from retrieval.settings import RetrievalSettings

# Bump when the way the harness turns data into records changes: old indexes are stale.
HARNESS_VERSION = "1"
MARKER = "eval-index.json"


# The write path whose output the cached index is: a change to one of these modules may
# change what is stored or embedded, so it invalidates cached eval indexes. The engine
# modules are left out on purpose: they mix query-time knobs (boosts, query building)
# with the schema and are edited often; re-embedding a corpus for a boost change costs
# minutes and changes nothing in the index.
_WRITE_PATH_MODULES = (
    "retrieval.store",
    "retrieval.embedding",
    "retrieval.catalog",
    "retrieval.structure",  # the names and links stored with each document
    "retrieval.engines.record_codec",
)
_WRITE_PATH_PACKAGES: tuple[str, ...] = ()


def write_path_version() -> str:
    h = hashlib.sha256()
    files: list[Path] = []
    for name in _WRITE_PATH_MODULES + _WRITE_PATH_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        files += sorted(origin.parent.glob("*.py")) if origin.name == "__init__.py" else [origin]
    for path in files:
        h.update(path.name.encode("utf-8") + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def corpus_hash(records: Sequence[Record], settings: RetrievalSettings) -> str:
    h = hashlib.sha256()
    for part in (
        HARNESS_VERSION,
        write_path_version(),
        settings.embedding_model,
        settings.lexical_backend,
        settings.dense_backend,
        str(settings.chunk_tokens),
        str(settings.chunk_overlap_tokens),
    ):
        h.update(part.encode("utf-8") + b"\0")
    for rec in sorted(records, key=lambda r: r.id):
        h.update(
            json.dumps(
                [rec.id, rec.source, rec.text, rec.timestamp.isoformat(), rec.metadata],
                sort_keys=True,
                default=str,
            ).encode("utf-8")
        )
        h.update(b"\0")
    return h.hexdigest()[:20]


@dataclass
class EvalIndex:
    store: Any  # retrieval.store.Store
    home: Path
    reused: bool
    digest: str


def eval_settings(base: RetrievalSettings | None, digest: str) -> tuple[RetrievalSettings, Path]:
    base = base or RetrievalSettings()
    home = base.home / "eval" / digest
    # Server backends share one namespace with the user's data: prefix it per corpus.
    settings = base.model_copy(
        update={
            "home": home,
            "es_index_prefix": f"{base.es_index_prefix}-eval-{digest[:12]}",
            "qdrant_collection_prefix": f"{base.qdrant_collection_prefix}-eval-{digest[:12]}",
        }
    )
    return settings, home


def prune_stale(eval_root: Path, dataset: str, keep: Path) -> list[Path]:
    """Remove older complete indexes of ``dataset`` (superseded by ``keep``): every code or
    corpus change builds a new one, and each holds a full copy of the embeddings."""
    removed: list[Path] = []
    for marker in sorted(eval_root.glob(f"*/{MARKER}")):
        home = marker.parent
        if home == keep:
            continue
        try:
            info = json.loads(marker.read_text())
        except (OSError, json.JSONDecodeError):
            continue  # not ours to judge: leave it
        if info.get("dataset") == dataset:
            shutil.rmtree(home, ignore_errors=True)
            removed.append(home)
    return removed


def open_eval_index(
    records: Sequence[Record],
    dataset: str,
    base: RetrievalSettings | None = None,
    progress: Any = None,
) -> EvalIndex:
    """Open (and fill, unless an identical corpus is already indexed) the eval index."""
    from retrieval.store import Store

    base = base or RetrievalSettings()
    digest = corpus_hash(records, base)
    settings, home = eval_settings(base, digest)
    marker = home / MARKER
    reused = marker.is_file()
    if home.exists() and not reused:
        shutil.rmtree(home)  # an interrupted ingestion: start over rather than trust it
    home.mkdir(parents=True, exist_ok=True)
    store = Store.open(settings, home=home)
    if not reused:
        try:
            report = store.ingest(list(records), progress=progress)
        except BaseException:
            store.close()
            raise
        failed = int(getattr(report, "failed", 0) or 0)
        marker.write_text(
            json.dumps(
                {"dataset": dataset, "records": len(records), "failed": failed},
                indent=2,
            )
        )
        prune_stale(home.parent, dataset, keep=home)
    return EvalIndex(store=store, home=home, reused=reused, digest=digest)
