"""Metric functions on hand-made cases (ties, duplicates, missing gold, aliases, yes/no)."""

from __future__ import annotations

import math

import pytest

from evalsets.metrics import (
    METRICS,
    Outcome,
    answer_in_texts,
    citation_precision,
    exact_match,
    f1_score,
    is_yes_no,
    ndcg_at_k,
    normalize_answer,
    percentile,
    question_scores,
    recall_at_k,
    reciprocal_rank,
    summarize,
    summarize_with_types,
    support_recall,
    support_recall_all,
)


def test_normalize_answer_is_squad_style() -> None:
    assert normalize_answer("The  Vell, River!") == "vell river"
    assert normalize_answer("An apple a day") == "apple day"


def test_exact_match_takes_best_alias() -> None:
    assert exact_match("vell river", ["the Vell", "Vell River"]) == 1.0
    assert exact_match("Vell", ["Vell River"]) == 0.0
    assert exact_match("anything", []) == 0.0


def test_f1_partial_overlap_and_alias() -> None:
    # pred "vell river flows" vs gold "vell river": p=2/3, r=1 -> 0.8
    assert f1_score("Vell river flows", ["Vell River"]) == pytest.approx(0.8)
    assert f1_score("Vell river flows", ["nothing", "Vell River"]) == pytest.approx(0.8)
    assert f1_score("", ["Vell"]) == 0.0


def test_f1_yes_no_is_all_or_nothing() -> None:
    assert f1_score("yes it is", ["yes"]) == 0.0
    assert f1_score("Yes.", ["yes"]) == 1.0
    assert f1_score("no", ["yes"]) == 0.0


def test_yes_no_detection() -> None:
    assert is_yes_no("Yes")
    assert is_yes_no("no.")
    assert not is_yes_no("Norway")


def test_answer_in_texts_respects_word_boundaries_and_aliases() -> None:
    texts = ["Kesterby lies on the Vell River.", "Founded in 1994."]
    assert answer_in_texts(texts, ["vell river"])
    assert answer_in_texts(texts, ["Danube", "the Vell River"])
    assert not answer_in_texts(texts, ["1"])  # "1" must not match inside "1994"
    assert not answer_in_texts(texts, ["Kester"])
    assert not answer_in_texts(texts, [""])


def test_support_recall_with_duplicates_and_missing_gold() -> None:
    ranked = ["d3", "d1", "d1", "d9"]
    assert support_recall(ranked, ["d1", "d2"]) == 0.5
    assert support_recall_all(ranked, ["d1", "d2"]) == 0.0
    assert support_recall_all(ranked, ["d1", "d3"]) == 1.0
    assert support_recall(ranked, []) is None  # no gold: not applicable, not zero
    assert support_recall_all([], ["d1"]) == 0.0


def test_reciprocal_rank_counts_distinct_documents() -> None:
    # Two chunks of d3 (tie on the same document) occupy one rank, not two.
    assert reciprocal_rank(["d3", "d3", "d1"], ["d1"]) == pytest.approx(0.5)
    assert reciprocal_rank(["d1", "d2"], ["d2", "d1"]) == 1.0
    assert reciprocal_rank(["d5"], ["d1"]) == 0.0
    assert reciprocal_rank(["d5"], []) is None


def test_citation_precision() -> None:
    assert citation_precision(None, ["d1"]) is None
    assert citation_precision([], ["d1"]) is None
    assert citation_precision(["d1", "d1", "d2"], ["d1"]) == 0.5
    assert citation_precision(["d1"], []) == 0.0


def test_ndcg_and_recall_at_k() -> None:
    qrels = {"a": 2, "b": 1}
    assert ndcg_at_k(["a", "b"], qrels, 10) == pytest.approx(1.0)
    swapped = (1 / 1 + 2 / math.log2(3)) / (2 / 1 + 1 / math.log2(3))
    assert ndcg_at_k(["b", "a"], qrels, 10) == pytest.approx(swapped)
    assert ndcg_at_k(["x", "y"], qrels, 10) == 0.0
    assert ndcg_at_k(["x", "a"], qrels, 1) == 0.0  # cut at k
    assert recall_at_k(["a", "x"], qrels, 100) == 0.5
    assert recall_at_k(["x", "a"], qrels, 1) == 0.0


def test_percentile_interpolates_and_handles_ties() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0], 95) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([2.0, 2.0, 2.0, 10.0], 50) == 2.0
    assert percentile([0.0, 10.0], 95) == pytest.approx(9.5)


def _outcome(**kw: object) -> Outcome:
    base: dict[str, object] = dict(
        qid="q", type="bridge", expect="answer", gold=["d1", "d2"], answers=["Vell"]
    )
    base.update(kw)
    return Outcome(**base)  # type: ignore[arg-type]


def test_question_scores_single_round_has_no_answer_metrics() -> None:
    s = question_scores(_outcome(evidence_ids=["d1", "d2"], evidence_texts=["the Vell"]))
    assert s["support_recall_all"] == 1.0
    assert s["answer_in_evidence"] == 1.0
    assert s["em"] is None and s["f1"] is None
    assert s["citation_precision"] is None
    assert s["refusal_accuracy"] is None


def test_question_scores_yes_no_excluded_from_answer_in_evidence() -> None:
    s = question_scores(_outcome(answers=["yes"], evidence_texts=["yes"]))
    assert s["answer_in_evidence"] is None


def test_question_scores_refuse_row() -> None:
    refused = question_scores(
        _outcome(expect="refuse", gold=["d1"], answer="", cited=[], refused=True)
    )
    assert refused["refusal_accuracy"] == 1.0
    assert refused["support_recall"] is None  # recall is for answerable questions
    assert refused["em"] is None
    leaked = question_scores(_outcome(expect="refuse", answer="x", cited=["d1"], refused=False))
    assert leaked["refusal_accuracy"] == 0.0
    assert leaked["citation_precision"] == 0.0  # any citation on a refusal is wrong


def test_summarize_means_over_applicable_questions_only() -> None:
    outcomes = [
        _outcome(qid="a", evidence_ids=["d1", "d2"], seconds=1.0),
        _outcome(qid="b", evidence_ids=["d1"], seconds=3.0, type="comparison"),
        _outcome(qid="c", expect="refuse", gold=[], seconds=2.0, type="unanswerable"),
    ]
    s = summarize(outcomes)
    assert set(s) == set(METRICS)
    assert s["support_recall_all"] == 0.5
    assert s["support_recall"] == 0.75
    assert s["em"] is None and s["refusal_accuracy"] is None
    assert s["p50_s"] == 2.0
    assert s["mean_rounds"] == 1.0


def test_summarize_counts_errors_as_misses() -> None:
    ok = _outcome(qid="a", evidence_ids=["d1", "d2"])
    broken = _outcome(qid="b", error="RuntimeError: boom")
    s = summarize_with_types([ok, broken])
    assert s["support_recall_all"] == 0.5
    assert s["errors"] == 1
    assert s["by_type"]["bridge"]["questions"] == 2


def test_summarize_with_types_breaks_down() -> None:
    outcomes = [
        _outcome(qid="a", evidence_ids=["d1", "d2"], answer="Vell"),
        _outcome(qid="b", evidence_ids=[], answer="Danube", type="comparison"),
    ]
    s = summarize_with_types(outcomes)
    assert s["em"] == 0.5
    assert s["by_type"]["bridge"]["em"] == 1.0
    assert s["by_type"]["comparison"]["support_recall_all"] == 0.0
