"""Cross-encoder rerank of the fused candidates, from a local model path only.

No PyPI package carries a cross-encoder, so the model is a setting
(``WAYPOINT_RERANK_MODEL``, a sentence-transformers CrossEncoder folder). When it is not
configured or not there, the stage is skipped *visibly* (a warning in the search result),
never replaced by a fake score. Weights are never fetched from a hub: ``local_files_only``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

NO_MODEL_WARNING = "rerank skipped: no cross-encoder configured"
# Pairs scored per forward pass; a bound on memory, not on the number of candidates.
BATCH_SIZE = 16

_MODELS: dict[str, Any] = {}
_MODELS_LOCK = threading.Lock()


class RerankUnavailable(RuntimeError):
    """No usable cross-encoder: the message is the warning the search result carries."""


def resolve_model_path(configured: str | os.PathLike[str] | None) -> Path:
    """The configured model folder, or :class:`RerankUnavailable` saying why there is none."""
    if not configured:
        raise RerankUnavailable(NO_MODEL_WARNING)
    path = Path(configured).expanduser()
    if not path.is_dir():
        raise RerankUnavailable(f"{NO_MODEL_WARNING} ({str(path)!r} is not a model folder)")
    return path


def load_cross_encoder(path: Path) -> Any:
    """One CrossEncoder per resolved path per process (loading costs seconds)."""
    key = str(path.resolve())
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            from sentence_transformers import CrossEncoder

            model = CrossEncoder(key, device="cpu", local_files_only=True)
            _MODELS[key] = model
        return model


def cached_models() -> list[str]:
    with _MODELS_LOCK:
        return sorted(_MODELS)


def score_pairs(path: Path, query: str, passages: Sequence[str]) -> list[float]:
    """Cross-encoder relevance of each passage to the query (higher = more relevant)."""
    if not passages:
        return []
    model = load_cross_encoder(path)
    scores = model.predict(
        [(query, passage) for passage in passages],
        batch_size=BATCH_SIZE,
        show_progress_bar=False,
        convert_to_numpy=True,
    )
    return [float(s) for s in scores]
