"""Search queries embedded through a TorchScript trace of the sentence-transformers model.

Why: an eager forward pass is a few hundred torch calls from Python, and each call gives
the GIL back and takes it again. Beside a busy event loop (the research loop plans,
checkpoints and fuses while round one's queries embed) every take-back waits for the loop
to let go: a batch of two queries took ~21 ms in the loop for ~15 ms alone, and the loop
waited for the encoder's Python in turn. A traced model is one call that runs the whole
forward pass without the GIL, and skips the modules' Python (measured on this 2-vCPU
machine, one torch thread: one query 14.8 -> 10.8 ms, two 20.3 -> 15.0 ms alone; beside a
Python thread spinning for the GIL, two queries 669 -> 48 ms).

The vectors must be the ones the eager model gives (the index was built with it): the
trace runs the same operators, and :meth:`TracedQueryEncoder.build` checks bitwise
equality with the eager model on probe batches before it is used (padded and unpadded
shapes). Anything else - a model whose forward pass cannot be traced, a different result, an
error on a later query - leaves queries on the eager path (logged by the caller).
Documents (ingestion's large batches) are always embedded eagerly.

``torch.jit.trace`` is deprecated as of torch 2.13 (``torch.export`` is its successor). The
project pins torch 2.13; if a later torch drops it, the build fails and queries are
embedded eagerly, as before this module, with a warning in the log.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

# Probe batches for the equality check: two texts of different lengths (padding inside
# the batch, the shape the trace is recorded with), one short text alone and two of the
# same length (no padding), one that fills the model's maximum length (truncation).
_TRACE_BATCH = ["What is the seat of ?", "county where Van Hook Township is located"]
_PROBES = [
    _TRACE_BATCH,
    ["Who founded it?"],
    ["Who founded it?", "Who built it?"],
    ["word " * 600, "a"],
]


class TraceUnavailable(RuntimeError):
    """The model cannot be traced, or its trace does not give the eager model's vectors."""


class TracedQueryEncoder:
    def __init__(self, model: Any, traced: Any, keys: tuple[str, ...]) -> None:
        self._model = model
        self._traced = traced
        self._keys = keys  # the tokenizer's tensors, in the order the trace takes them

    @classmethod
    def build(
        cls, model: Any, eager: Callable[[list[str]], list[list[float]]]
    ) -> TracedQueryEncoder:
        """Trace ``model`` (a loaded SentenceTransformer) and check it against ``eager``
        (the same model's own encode, what documents are indexed with); raises
        :class:`TraceUnavailable` when it cannot be used."""
        import warnings

        import torch

        try:
            features = _tokenize(model, _TRACE_BATCH)
            keys = tuple(sorted(k for k, v in features.items() if isinstance(v, torch.Tensor)))
            with torch.inference_mode(), warnings.catch_warnings(), _quiet_model_logs():
                # The tracer warns about Python branches on tensor values (masking,
                # attention, pooling), and reading every attribute of the modules wakes
                # their deprecation notices: the checks below decide whether it holds.
                # (Both filters are process-wide for the ~0.2 s of tracing: only these
                # categories and the two libraries' loggers are muted.)
                for category in (torch.jit.TracerWarning, DeprecationWarning, FutureWarning):
                    warnings.filterwarnings("ignore", category=category)
                traced = torch.jit.trace(
                    _forward_module(model, keys).eval(),
                    tuple(features[k] for k in keys),
                    check_trace=False,
                )
        except Exception as exc:  # noqa: BLE001 - any tracing failure keeps the eager path
            raise TraceUnavailable(f"tracing failed: {type(exc).__name__}: {exc}") from exc
        encoder = cls(model, traced, keys)
        for texts in _PROBES:
            try:
                same = encoder.encode(texts) == eager(list(texts))
            except Exception as exc:  # noqa: BLE001 - e.g. a model with other inputs
                raise TraceUnavailable(f"trace failed on a probe: {exc}") from exc
            if not same:
                raise TraceUnavailable("trace gives other vectors than the eager model")
        return encoder

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        """Normalised embeddings of ``texts``, as the eager model's ``encode`` gives them
        in one batch (longest first inside the batch, the same order sentence-transformers
        uses)."""
        import numpy as np
        import torch

        texts = list(texts)
        if not texts:
            return []
        order = np.argsort([-len(t) for t in texts])
        features = _tokenize(self._model, [texts[i] for i in order])
        if tuple(sorted(k for k, v in features.items() if isinstance(v, torch.Tensor))) != (
            self._keys
        ):
            raise TraceUnavailable("the tokenizer gave other inputs than the trace takes")
        # Unoptimised execution: the recorded operators as they are (no fusion pass, no
        # profiling runs that make the first calls slow).
        with torch.inference_mode(), torch.jit.optimized_execution(False):
            out = self._traced(*(features[k] for k in self._keys))
            vectors = torch.nn.functional.normalize(out, p=2, dim=1).numpy()
        result: list[list[float]] = [[] for _ in texts]
        for row, i in enumerate(order):
            result[int(i)] = vectors[row].tolist()
        return result


def _tokenize(model: Any, texts: list[str]) -> dict[str, Any]:
    """The model's own input preparation, as its ``encode`` runs it (sentence-transformers
    6 calls it ``preprocess``; ``tokenize`` before)."""
    prepare = getattr(model, "preprocess", None) or model.tokenize
    return dict(prepare(texts))


@contextlib.contextmanager
def _quiet_model_logs() -> Iterator[None]:
    loggers = [logging.getLogger(name) for name in ("sentence_transformers", "transformers")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _forward_module(model: Any, keys: tuple[str, ...]) -> Any:
    import torch

    class Forward(torch.nn.Module):
        """The model's forward pass on positional tensors, returning the sentence
        embedding (what ``torch.jit.trace`` records)."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: Any) -> Any:
            return self.model(dict(zip(keys, tensors, strict=True)))["sentence_embedding"]

    return Forward()
