"""Words that mean nearly the same thing, by the embedding model the index already uses.

The support check asks whether a passage states what the question asks about. A person
who asks about a "team" accepts a page about a "group"; "woman" is met by "actress",
"company" by "firm". Exact stems miss those; the bundled sentence-transformers model,
asked about single words, scores such pairs well above unrelated ones, so a word counts
as met when some word of the passage is that close to it. The same model weighs whole
sentences against the question when quotes are chosen (:func:`closeness`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import numpy as np

from retrieval.embedding import Embedder, EmbeddingModelError
from retrieval.settings import RetrievalSettings

log = logging.getLogger(__name__)

# Cosine of two single words' vectors above which one may stand for the other.
RELATED = 0.58
_MAX_WORDS = 50_000  # vectors kept per process (a corpus's vocabulary, not its text)
_lock = threading.Lock()
_vectors: dict[str, Any] = {}


@lru_cache(maxsize=1)
def _embedder() -> Embedder | None:
    try:
        embedder = Embedder(RetrievalSettings().embedding_model)
        embedder.dim  # noqa: B018 - load now, so a missing model is found here, once
        return embedder
    except EmbeddingModelError as exc:
        log.warning("paraphrase matching is off (exact words only): %s", exc)
        return None


def _vectors_for(words: list[str]) -> Any:
    embedder = _embedder()
    if embedder is None:
        return None
    with _lock:
        missing = [w for w in dict.fromkeys(words) if w not in _vectors]
    if missing:
        encoded = embedder.encode(missing)
        with _lock:
            if len(_vectors) + len(missing) > _MAX_WORDS:
                _vectors.clear()
            _vectors.update(
                zip(missing, (np.asarray(v, dtype=np.float32) for v in encoded), strict=True)
            )
    with _lock:
        return np.stack([_vectors[w] for w in words])


def prefetch(words: Iterable[str]) -> None:
    """Embed these words now, in one batch (a passage's words, before many look-ups)."""
    todo = [w for w in dict.fromkeys(words) if len(w) > 2 and w.isalpha()]
    if todo:
        _vectors_for(todo)


def related(word: str, candidates: Iterable[str]) -> bool:
    """Does some candidate word mean nearly what ``word`` means?"""
    pool = [c for c in dict.fromkeys(candidates) if c != word and len(c) > 2 and c.isalpha()]
    if not pool or not word.isalpha():
        return False
    vecs = _vectors_for([word, *pool])
    if vecs is None:
        return False
    return bool((vecs[1:] @ vecs[0]).max() >= RELATED)


def closeness(question: str, texts: list[str]) -> list[float] | None:
    """How near in meaning each text is to the question (cosine of the embedding model's
    vectors; the model was trained to place a question near the passages that answer it).
    None when no model is installed."""
    embedder = _embedder()
    if embedder is None or not texts:
        return None
    q = np.asarray(embedder.encode_queries([question])[0], dtype=np.float32)
    vecs = np.asarray(embedder.encode(texts), dtype=np.float32)
    return [float(x) for x in vecs @ q]
