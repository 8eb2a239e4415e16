"""Metric functions on hand-made cases (ties, duplicates, missing gold, aliases, yes/no)."""

from __future__ import annotations

import math

import pytest

from evalsets.metrics import (
    METRICS,
    Outcome,
    answer_in_texts,
    citation_precision,
    claim_support,
    exact_match,
    f1_score,
    is_yes_no,
    ndcg_at_k,
    normalize_answer,
    percentile,
    question_scores,
    recall_at_k,
    reciprocal_rank,
    short_answer_f1,
    short_answer_match,
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
    # Every citation counts: two passages of gold d1 and one of d2.
    assert citation_precision(["d1", "d1", "d2"], ["d1"]) == pytest.approx(2 / 3)
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
        _outcome(qid="a", evidence_ids=["d1", "d2"], answer="x [1]", short_answer="Vell"),
        _outcome(
            qid="b", evidence_ids=[], answer="y [1]", short_answer="Danube", type="comparison"
        ),
    ]
    s = summarize_with_types(outcomes)
    assert s["em"] == 0.5
    assert s["by_type"]["bridge"]["em"] == 1.0
    assert s["by_type"]["comparison"]["support_recall_all"] == 0.0


# -- the answer contract: short answer, claims, citations ----------------------------------


def test_short_answer_match_null_aliases_and_normalisation() -> None:
    golds = ["the Vell", "Vell River"]
    assert short_answer_match(None, golds) == 0.0
    assert short_answer_match("  ", golds) == 0.0
    assert short_answer_match("Vell", golds) == 1.0  # article dropped
    assert short_answer_match("vell river.", golds) == 1.0  # alias, case, punctuation
    assert short_answer_match("The Vell, a slow river", golds) == 0.0
    assert short_answer_match("x", []) == 0.0


def test_short_answer_yes_no_by_verdict() -> None:
    assert short_answer_match("Yes", ["yes"]) == 1.0
    assert short_answer_match("yes, both are American", ["yes"]) == 1.0
    assert short_answer_match("No.", ["yes"]) == 0.0
    assert short_answer_match("Nottingham", ["no"]) == 0.0  # a word starting with "no"
    assert short_answer_match("yes", ["Yesterday"]) == 0.0
    assert short_answer_f1("Yes, both", ["yes"]) == 1.0
    assert short_answer_f1("no", ["yes"]) == 0.0


def test_short_answer_f1() -> None:
    assert short_answer_f1(None, ["Vell"]) == 0.0
    assert short_answer_f1("Vell", ["the Vell", "Vell River"]) == 1.0
    assert short_answer_f1("River Vell", ["Vell River"]) == 1.0
    assert short_answer_f1("Vell valley", ["Vell River"]) == pytest.approx(0.5)


def test_claim_support() -> None:
    assert claim_support(None) is None
    assert claim_support([]) is None
    assert claim_support([True, False, True, True]) == 0.75


def _answered(**kw: object) -> Outcome:
    base: dict[str, object] = dict(
        answer="The Vell [1].", claims=[True], cited=["d1"], refused=False
    )
    base.update(kw)
    return _outcome(**base)


def test_question_scores_answer_contract() -> None:
    right = question_scores(_answered(short_answer="Vell"))
    assert right["em"] == right["f1"] == 1.0
    assert right["short_answer_coverage"] == 1.0
    assert right["short_answer_precision"] == 1.0
    assert right["answer_states_gold"] == 1.0
    assert right["claim_support_rate"] == 1.0
    assert right["citation_precision"] == 1.0
    silent = question_scores(_answered(short_answer=None, answer="Nothing found."))
    assert silent["em"] == 0.0 and silent["f1"] == 0.0  # null counts as wrong
    assert silent["short_answer_coverage"] == 0.0
    assert silent["short_answer_precision"] is None  # not answered: not in precision
    assert silent["answer_states_gold"] == 0.0
    wrong = question_scores(_answered(short_answer="Danube", cited=["d1", "d9"]))
    assert wrong["em"] == 0.0 and wrong["short_answer_precision"] == 0.0
    assert wrong["citation_precision"] == 0.5


def test_question_scores_yes_no_contract() -> None:
    s = question_scores(_answered(answers=["yes"], short_answer="Yes, both are Dutch."))
    assert s["em"] == 1.0 and s["short_answer_precision"] == 1.0
    assert s["answer_states_gold"] is None  # "yes" in a paragraph means nothing


def test_question_scores_refusals() -> None:
    must = question_scores(
        _answered(expect="refuse", answers=[], short_answer=None, refused=True, cited=[])
    )
    assert must["refusal_accuracy"] == 1.0 and must["refused_answerable"] is None
    assert must["em"] is None and must["short_answer_coverage"] is None
    over = question_scores(_answered(short_answer=None, refused=True))
    assert over["refused_answerable"] == 1.0 and over["refusal_accuracy"] is None
    assert over["em"] == 0.0


def test_summarize_answer_contract() -> None:
    outcomes = [
        _answered(qid="a", short_answer="Vell", claims=[True, True, True]),
        _answered(qid="b", short_answer="Danube", answer="The Danube [1].", claims=[False]),
        _answered(qid="c", short_answer=None, answer="", claims=[], cited=[], refused=True),
        _answered(qid="d", answers=["yes"], short_answer="no", claims=None),
    ]
    s = summarize(outcomes)
    assert s["em"] == 0.25
    assert s["short_answer_coverage"] == 0.75
    assert s["short_answer_precision"] == pytest.approx(1 / 3, abs=1e-4)
    # Pooled over claims (3 of 4), not the mean of per-answer rates (0.5).
    assert s["claim_support_rate"] == 0.75
    assert s["refused_answerable"] == 0.25
    assert s["answer_states_gold"] == pytest.approx(1 / 3, abs=1e-4)


def test_single_round_outcome_has_no_contract_metrics() -> None:
    s = question_scores(_outcome(evidence_ids=["d1"]))
    for metric in (
        "em",
        "f1",
        "short_answer_coverage",
        "short_answer_precision",
        "answer_states_gold",
        "claim_support_rate",
        "citation_precision",
        "refused_answerable",
    ):
        assert s[metric] is None, metric
