"""The real CrossEncoder code path, with a tiny cross-encoder built and trained in the test.

No PyPI package carries a cross-encoder and nothing may come from a hub, so the test makes
one: a 2-layer BERT (hidden size 32) over a small word-level vocabulary, trained for a few
dozen steps to score passages that mention "alpha" as relevant. It is saved through
sentence-transformers' CrossEncoder and loaded back by the pipeline from its local path,
so the scores and the order in the search result come from a real forward pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from retrieval import rerank
from retrieval.engines.base import SearchFilter
from retrieval.pipeline import hybrid_search
from retrieval.search_models import SearchOptions
from retrieval.settings import RetrievalSettings
from retrieval.store import Store
from tests.conftest import make_record

pytestmark = pytest.mark.integration

WORDS = (
    "what is the retry policy for payments service alpha beta gamma delta runbook owner "
    "team checkout token card ledger refund queue worker backoff seconds"
).split()
PUBLIC = SearchFilter.for_groups([])
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def build_tiny_cross_encoder(folder: Path) -> Path:
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    raw = folder / "raw"
    raw.mkdir(parents=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(WORDS))]
    (raw / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab=str(raw / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = BertForSequenceClassification(config)
    queries = ["retry policy", "payments service", "checkout token", "refund queue worker"]
    passages = [
        ("alpha runbook for the team", 1.0),
        ("beta runbook for the team", 0.0),
        ("the gamma ledger owner alpha", 1.0),
        ("the gamma ledger owner delta", 0.0),
        ("card refund backoff seconds", 0.0),
        ("alpha card refund backoff seconds", 1.0),
    ]
    pairs = [(q, p, y) for q in queries for p, y in passages]
    batch = tokenizer(
        [q for q, _, _ in pairs], [p for _, p, _ in pairs], padding=True, return_tensors="pt"
    )
    labels = torch.tensor([y for _, _, y in pairs])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(80):
        logits = model(**batch).logits.squeeze(-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    tokenizer.save_pretrained(raw)
    model.save_pretrained(raw)
    out = folder / "cross-encoder"
    CrossEncoder(str(raw), device="cpu", local_files_only=True).save_pretrained(str(out))
    return out


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, model_path: Path) -> Iterator[Store]:
    home = tmp_path_factory.mktemp("rerank-home")
    settings = RetrievalSettings(home=home, rerank_model=str(model_path))
    s = Store.open(settings)
    texts = {
        # Many query words, no "alpha": fusion ranks these first.
        "r1": "retry policy for the payments service: backoff seconds for the checkout token",
        "r2": "payments service retry policy owner team and the checkout retry queue",
        "r3": "the retry policy of the refund queue worker",
        # Few query words but "alpha": the trained cross-encoder prefers it.
        "a1": "alpha runbook for the team",
        "x1": "gamma ledger owner delta",
    }
    s.ingest(make_record(doc, text, timestamp=T0) for doc, text in texts.items())
    yield s
    s.close()


async def test_rerank_scores_decide_the_final_order(store: Store, model_path: Path) -> None:
    result = await hybrid_search(store, "what is the retry policy for payments?", PUBLIC)
    assert result.reranked is not None
    assert result.rerank_model == str(model_path)
    assert not any(w.startswith("rerank") for w in result.warnings)
    # Every capped candidate was scored; the rerank list is sorted by its own scores.
    assert {i.id for i in result.reranked} == {i.id for i in result.capped}
    scores = [i.score for i in result.reranked]
    assert scores == sorted(scores, reverse=True)
    # The final hits follow the rerank order and carry the scores.
    assert [h.id for h in result.hits] == [i.id for i in result.reranked][: len(result.hits)]
    by_id = {i.id: i.score for i in result.reranked}
    assert all(h.rerank_score == pytest.approx(by_id[h.id]) for h in result.hits)
    # It really reorders: fusion put a many-word match first, the cross-encoder the
    # "alpha" passage it was trained to prefer.
    assert result.capped[0].id != "test:a1#0"
    assert result.hits[0].id == "test:a1#0"
    # The scores are the CrossEncoder's own for (question, "title: text") pairs.
    hit = result.hits[0]
    direct = rerank.score_pairs(model_path, result.original_query, [f"{hit.title}: {hit.text}"])
    assert hit.rerank_score == pytest.approx(direct[0], abs=1e-5)


async def test_rerank_depth_bounds_the_scored_candidates(store: Store) -> None:
    opts = SearchOptions(rerank_depth=2)
    result = await hybrid_search(store, "what is the retry policy for payments?", PUBLIC, opts)
    assert result.reranked is not None and len(result.reranked) == 2
    assert {i.id for i in result.reranked} == {i.id for i in result.capped[:2]}
    unscored = [h for h in result.hits if h.rerank_score is None]
    assert [h.id for h in unscored] == [i.id for i in result.capped[2 : len(result.hits)]]


def test_model_is_loaded_once_per_path(model_path: Path) -> None:
    first = rerank.load_cross_encoder(model_path)
    assert rerank.load_cross_encoder(model_path) is first
    assert str(model_path.resolve()) in rerank.cached_models()


def test_missing_or_unset_model_is_reported() -> None:
    with pytest.raises(rerank.RerankUnavailable, match=rerank.NO_MODEL_WARNING):
        rerank.resolve_model_path(None)
    with pytest.raises(rerank.RerankUnavailable, match="not a model folder"):
        rerank.resolve_model_path("/nonexistent/cross-encoder")


async def test_broken_model_folder_degrades(tmp_path: Path) -> None:
    broken = tmp_path / "broken-ce"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    settings = RetrievalSettings(home=tmp_path / "home", rerank_model=str(broken))
    store = Store.open(settings)
    try:
        store.ingest([make_record("doc", "retry policy for payments", timestamp=T0)])
        result = await hybrid_search(store, "retry policy", PUBLIC)
    finally:
        store.close()
    assert result.reranked is None
    assert any(w.startswith("rerank failed:") for w in result.warnings)
    assert [h.id for h in result.hits] == ["test:doc#0"]
