"""Sentence embeddings from a local model path (never a hub download at run time)."""

from __future__ import annotations

import hashlib
import logging
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

QueryBackend = Literal["torchscript", "eager"]

# Hub access fails here and is fragile everywhere: weights come from a local path only.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class EmbeddingModelError(RuntimeError):
    """The configured embedding model cannot be loaded from its local path."""


def model_version(model: str) -> str:
    """A short fingerprint of the model files, so a changed model means a new index."""
    path = Path(model)
    if not path.exists():
        return hashlib.sha1(model.encode()).hexdigest()[:12]
    h = hashlib.sha1()
    for f in sorted(path.rglob("*")):
        if f.is_file() and f.suffix in {".json", ".safetensors", ".bin", ".txt"}:
            h.update(f.name.encode())
            h.update(str(f.stat().st_size).encode())
    return h.hexdigest()[:12]


_MODELS: dict[str, Any] = {}  # one loaded model per path per process (loading takes seconds)
_MODELS_LOCK = threading.Lock()


def _load_model(path: str) -> Any:
    with _MODELS_LOCK:
        if path not in _MODELS:
            if not Path(path).exists():
                raise EmbeddingModelError(
                    f"embedding model not found at {path!r}; set "
                    "WAYPOINT_EMBEDDING_MODEL to a local sentence-transformers folder"
                )
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # no "Loading weights" bar on a CLI's stderr
            _MODELS[path] = SentenceTransformer(path, device="cpu", local_files_only=True)
        return _MODELS[path]


_TRACED: dict[str, Any] = {}  # model path -> TracedQueryEncoder, or None: eager queries
_TRACED_LOCK = threading.Lock()


def _traced_for(path: str, model: Any, eager: Any) -> Any:
    """The checked trace of the model at ``path`` (built once per process, checked against
    ``eager``, its own encode), or None."""
    with _TRACED_LOCK:
        if path not in _TRACED:
            from retrieval.traced import TracedQueryEncoder, TraceUnavailable

            try:
                _TRACED[path] = TracedQueryEncoder.build(model, eager)
            except Exception as exc:  # noqa: BLE001 - any failure keeps queries eager, logged
                reason = str(exc) if isinstance(exc, TraceUnavailable) else repr(exc)
                log.warning("search queries are embedded eagerly (%s): %s", path, reason)
                _TRACED[path] = None
        return _TRACED[path]


def _drop_trace(path: str, exc: Exception) -> None:
    """A trace that failed on a query is not used again in this process (logged once)."""
    with _TRACED_LOCK:
        if _TRACED.get(path) is not None:
            log.warning("search queries are embedded eagerly from now on (%s): %r", path, exc)
            _TRACED[path] = None


_ONNX: dict[tuple[Any, ...], Any] = {}  # (model path, settings) -> OnnxEncoder, or None
_ONNX_LOCK = threading.Lock()


def _onnx_for(
    path: str, version: str, model: Any, settings: Any, probe: list[str] | None = None
) -> Any:
    """The checked ONNX encoder of the model at ``path`` (built once per process), or
    None: the torch model embeds documents (the reason logged once)."""
    key = (
        path,
        settings.embedding_backend,
        str(settings.embedding_onnx_dir),
        settings.embedding_onnx_min_cosine,
    )
    with _ONNX_LOCK:
        if key not in _ONNX:
            from retrieval.onnx_encoder import OnnxEncoder, OnnxUnavailable

            try:
                _ONNX[key] = OnnxEncoder.build(
                    model, version, settings.embedding_backend, settings, probe
                )
            except OnnxUnavailable as exc:
                log.warning("documents are embedded by the torch model (%s): %s", path, exc)
                _ONNX[key] = None
        return _ONNX[key]


class Embedder:
    """Lazily loaded SentenceTransformer; thread-safe encode of normalised vectors.

    ``encode`` embeds documents (and anything else) with the eager model, or with its
    ONNX export when ``WAYPOINT_EMBEDDING_BACKEND`` says so and the export's vectors agree
    with the model's (:mod:`retrieval.onnx_encoder`); ``encode_queries``
    embeds a search's few queries through its TorchScript trace (``query_backend``
    "torchscript", the default: the same vectors, without holding the GIL through the
    forward pass - see :mod:`retrieval.traced`), or eagerly ("eager").
    """

    def __init__(
        self, model: str, batch_size: int = 64, query_backend: QueryBackend = "torchscript"
    ) -> None:
        self.model_path = model
        self.query_backend = query_backend
        # A bundled model lives in ".../<package>/model": name it by the package folder.
        p = Path(model)
        self.name = (p.parent.name if p.name in {"model", "models"} else p.name) or model
        self.version = model_version(model)
        self.batch_size = batch_size
        self._model: Any = None
        self._dim: int | None = None
        from retrieval.onnx_encoder import EmbeddingSettings

        self.settings = EmbeddingSettings()

    def _load(self) -> Any:
        if self._model is None:
            self._model = _load_model(self.model_path)
        return self._model

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._load().get_embedding_dimension())
        return self._dim

    @property
    def backend(self) -> str:
        """What embeds documents: ``torch``, or the ONNX backend once it passed its check."""
        if self.settings.embedding_backend == "torch":
            return "torch"
        onnx = _onnx_for(self.model_path, self.version, self._load(), self.settings)
        return self.settings.embedding_backend if onnx is not None else "torch"

    def encode(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        if self.settings.embedding_backend != "torch":
            onnx = _onnx_for(self.model_path, self.version, self._load(), self.settings, texts)
            if onnx is not None:
                return [v.tolist() for v in onnx.encode_array(texts, self.batch_size)]
        return self._encode_torch(texts)

    def _encode_torch(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        vectors = model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [v.tolist() for v in vectors]

    def encode_queries(self, texts: list[str]) -> list[list[float]]:
        """Embed search queries: one batch, through the traced model when it is in use
        (bitwise the vectors the torch model gives for the same batch); always the torch
        model's, whatever embeds documents."""
        if not texts:
            return []
        if self.query_backend == "torchscript" and len(texts) <= self.batch_size:
            traced = _traced_for(self.model_path, self._load(), self._encode_torch)
            if traced is not None:
                try:
                    return list(traced.encode(texts))
                except Exception as exc:  # noqa: BLE001 - the eager model answers instead
                    _drop_trace(self.model_path, exc)
        return self._encode_torch(texts)


def moved_toward(
    query: Sequence[float], passages: Sequence[Sequence[float]], weight: float = 1.0
) -> list[float]:
    """Rocchio's pseudo-relevance feedback in embedding space: the query's vector plus
    ``weight`` times each passage's, normalised. A search that already found passages on
    the way to an answer looks near them and near the question at once, and no new text
    is embedded."""
    moved = [float(x) for x in query]
    for vector in passages:
        if len(vector) != len(moved):
            raise ValueError(f"vector of {len(vector)} dims, query of {len(moved)}")
        moved = [m + weight * float(v) for m, v in zip(moved, vector, strict=True)]
    norm = math.sqrt(sum(x * x for x in moved))
    return [x / norm for x in moved] if norm else moved
