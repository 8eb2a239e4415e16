"""Search queries are embedded on one core per worker thread, with the same vectors;
torch's thread count elsewhere in the process is left as it was."""

from __future__ import annotations

import os
import threading

import torch

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
