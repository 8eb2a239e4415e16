"""IDF gate and age decay arithmetic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from retrieval.signals import age_days, age_decay_factor, idf_gate, mean_idf_many
from retrieval.textstats import DocFreq

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def test_age_decay_halves_per_half_life() -> None:
    assert age_decay_factor(NOW, 30, now=NOW) == pytest.approx(1.0)
    assert age_decay_factor(NOW - timedelta(days=30), 30, now=NOW) == pytest.approx(0.5)
    assert age_decay_factor(NOW - timedelta(days=90), 30, now=NOW) == pytest.approx(0.125)
    assert age_decay_factor(NOW - timedelta(days=15), 30, now=NOW) == pytest.approx(2**-0.5)


def test_future_and_naive_timestamps() -> None:
    assert age_days(NOW + timedelta(days=3), now=NOW) == 0.0
    naive = datetime(2025, 5, 31)
    assert age_days(naive, now=NOW) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        age_decay_factor(NOW, 0, now=NOW)


class _Corpus:
    """doc_freq over a tiny in-memory corpus (the lexical engine's method, minus the engine)."""

    def __init__(self, texts: list[str]) -> None:
        self.stats = DocFreq.from_texts(texts)
        self.calls = 0

    def doc_freq(self, terms: Sequence[str]) -> tuple[Mapping[str, int], int]:
        self.calls += 1
        return {t: self.stats.df[t] for t in terms}, self.stats.n_docs


CORPUS = [
    "ok thanks",
    "thanks, will check",
    "ok sounds good thanks",
    "the checkout-api returns ERR-4012 when the payment token expired",
    "rotate the kafka broker certificates before the quarterly audit",
] * 4


def test_mean_idf_matches_textstats_and_batches_lookups() -> None:
    corpus = _Corpus(CORPUS)
    texts = ["ok thanks", "kafka broker certificates rotate", ""]
    means = mean_idf_many(texts, corpus.doc_freq)
    assert corpus.calls == 1
    assert means[0] == pytest.approx(corpus.stats.mean_idf(texts[0]))
    assert means[1] == pytest.approx(corpus.stats.mean_idf(texts[1]))
    assert means[2] == 0.0
    assert means[1] > means[0]


def test_idf_gate_drops_filler_keeps_dense_text() -> None:
    corpus = _Corpus(CORPUS)
    items = [
        ("c1", "ok thanks"),
        ("c2", "the checkout-api returns ERR-4012 when the payment token expired"),
        ("c3", "rotate the kafka broker certificates before the quarterly audit"),
    ]
    dropped, means = idf_gate(items, corpus.doc_freq, threshold=2.5)
    assert dropped == {"c1"}
    assert means["c1"] < 2.5 <= min(means["c2"], means["c3"])


def test_engine_analyser_keys_the_lookup() -> None:
    # An engine that stems answers doc_freq with stemmed keys; the gate must ask with the
    # same analyser or every stemmed word would look unseen (maximally rare).
    def stem(text: str) -> list[str]:
        return [w.lower().rstrip("s") for w in text.split()]

    asked: list[list[str]] = []

    def doc_freq(terms: Sequence[str]) -> tuple[Mapping[str, int], int]:
        asked.append(list(terms))
        return {t: 50 for t in terms}, 100

    means = mean_idf_many(["Brokers rotate certificates"], doc_freq, analyse=stem)
    assert asked == [["broker", "certificate", "rotate"]]
    stats = DocFreq(n_docs=100)
    stats.df.update({"broker": 50, "certificate": 50, "rotate": 50})
    assert means[0] == pytest.approx(stats.idf("broker"))
