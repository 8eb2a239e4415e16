"""Search queries are embedded on one core per worker thread, with the same vectors;
torch's thread count elsewhere in the process is left as it was. Through the traced model
they are bitwise the eager model's vectors, or the eager model embeds them."""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

import pytest
import torch

from retrieval import embedding
from retrieval import traced as traced_module
from retrieval.embedding import Embedder
from retrieval.pipeline import query_encoder
from retrieval.settings import RetrievalSettings

QUERIES = [
    "What is the seat of the county where Van Hook Township is located?",
    "Who mentors the engineer who wrote the Ledger runbook?",
    "When did the performer of Green Grass and High Tides die?",
]


def _threads_of_a_new_thread() -> int:
    seen: list[int] = []
    t = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    t.start()
    t.join()
    return seen[0]


def test_queries_are_embedded_on_one_core_with_the_same_vectors() -> None:
    embedder = Embedder(RetrievalSettings().embedding_model)
    default, default_new = torch.get_num_threads(), _threads_of_a_new_thread()
    for n in (1, 2, len(QUERIES)):
        alone = query_encoder().submit(embedder.encode, QUERIES[:n]).result()
        assert alone == embedder.encode(QUERIES[:n])  # bitwise, with torch's default threads
    assert query_encoder().submit(torch.get_num_threads).result() == 1
    assert torch.get_num_threads() == default
    assert _threads_of_a_new_thread() == default_new


def test_a_forked_child_starts_its_own_query_encoder() -> None:
    query_encoder()
    pid = os.fork()
    if pid == 0:  # the child: the parent's workers are not here; a new pool answers
        ok = query_encoder().submit(torch.get_num_threads).result() == 1
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


MIXED = [
    "Who?",
    "What is the seat of ?",
    "county where Van Hook Township is located",
    "word " * 600,  # past the model's maximum length: truncated
]


def test_traced_queries_give_the_eager_vectors_bitwise() -> None:
    embedder = Embedder(RetrievalSettings().embedding_model)
    assert embedder.query_backend == "torchscript"
    batches = [QUERIES[:1], QUERIES[:2], QUERIES, MIXED, MIXED[:2], [MIXED[0]], [*MIXED, *QUERIES]]
    for texts in batches:
        traced = query_encoder().submit(embedder.encode_queries, texts).result()
        eager = query_encoder().submit(embedder.encode, texts).result()
        assert traced == eager
    assert embedding._TRACED[embedder.model_path] is not None  # the trace was used


def test_a_trace_that_disagrees_with_the_model_leaves_queries_eager(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = Embedder(RetrievalSettings().embedding_model)
    real = traced_module.TracedQueryEncoder.encode

    def off_by_a_bit(self: traced_module.TracedQueryEncoder, texts: list[str]) -> Any:
        return [[x + 1e-7 for x in v] for v in real(self, texts)]

    monkeypatch.setattr(traced_module.TracedQueryEncoder, "encode", off_by_a_bit)
    monkeypatch.setattr(embedding, "_TRACED", {})
    with caplog.at_level(logging.WARNING, logger="retrieval.embedding"):
        vectors = embedder.encode_queries(QUERIES[:2])
    assert vectors == embedder.encode(QUERIES[:2])
    assert embedding._TRACED[embedder.model_path] is None
    assert "embedded eagerly" in caplog.text and "other vectors" in caplog.text


def test_the_eager_backend_never_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_trace(path: str, model: Any, eager: Any) -> Any:
        raise AssertionError("traced with query_backend='eager'")

    monkeypatch.setattr(embedding, "_traced_for", no_trace)
    embedder = Embedder(RetrievalSettings().embedding_model, query_backend="eager")
    assert embedder.encode_queries(QUERIES[:2]) == embedder.encode(QUERIES[:2])


def test_a_trace_that_fails_on_a_query_hands_over_to_the_eager_model(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = Embedder(RetrievalSettings().embedding_model)
    embedder.encode_queries(QUERIES[:1])  # the trace is built and in use
    assert embedding._TRACED[embedder.model_path] is not None

    def broken(self: traced_module.TracedQueryEncoder, texts: list[str]) -> Any:
        raise RuntimeError("the interpreter gave up")

    monkeypatch.setattr(traced_module.TracedQueryEncoder, "encode", broken)
    monkeypatch.setattr(embedding, "_TRACED", dict(embedding._TRACED))
    with caplog.at_level(logging.WARNING, logger="retrieval.embedding"):
        vectors = embedder.encode_queries(QUERIES[:2])
    assert vectors == embedder.encode(QUERIES[:2])
    assert embedding._TRACED[embedder.model_path] is None  # not tried again
    assert "eagerly from now on" in caplog.text and "gave up" in caplog.text
