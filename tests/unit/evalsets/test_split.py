"""The tune / report halves: stable, disjoint, covering, about half each; corpus whole."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from evalsets.loaders import (
    SPLITS,
    EvalInputError,
    check_split,
    in_split,
    load_beir,
    load_multihop,
    load_questions,
    question_split,
)

FIX = Path(__file__).parent / "fixtures"
IDS = [f"q{i}" for i in range(2000)] + [f"5a8b57f25542995d1e6f1371-{i}" for i in range(500)]


def test_rule_is_the_documented_one() -> None:
    for qid in ("q1", "q2", "2hop__1234_5678", "é-ü", ""):
        even = hashlib.sha256(qid.encode("utf-8")).digest()[0] % 2 == 0
        assert question_split(qid) == ("tune" if even else "report")


def test_stable_across_calls_and_order() -> None:
    first = {qid: question_split(qid) for qid in IDS}
    assert {qid: question_split(qid) for qid in reversed(IDS)} == first
    # Fixed values: a change of rule would silently move questions between halves.
    assert [question_split(q) for q in ("q1", "q2", "q5", "1", "2")] == [
        "report",
        "tune",
        "tune",
        "report",
        "tune",
    ]


def test_halves_are_disjoint_cover_all_and_about_half() -> None:
    tune = {q for q in IDS if in_split(q, "tune")}
    report = {q for q in IDS if in_split(q, "report")}
    assert not tune & report
    assert tune | report == set(IDS)
    assert {q for q in IDS if in_split(q, "all")} == set(IDS)
    assert 0.45 < len(tune) / len(IDS) < 0.55


def test_check_split() -> None:
    assert check_split(" Report ") == "report"
    assert set(SPLITS) == {"tune", "report", "all"}
    with pytest.raises(EvalInputError, match="tune, report, all"):
        check_split("test")


def test_multihop_split_keeps_the_whole_corpus() -> None:
    whole = load_multihop(FIX / "multihop.jsonl")
    tune = load_questions(FIX / "multihop.jsonl", split="tune")
    report = load_questions(FIX / "multihop.jsonl", split="report")
    assert [q.id for q in tune.questions] == ["q2", "q5"]
    assert [q.id for q in report.questions] == ["q1"]
    assert (tune.split, report.split) == ("tune", "report")
    assert load_questions(FIX / "multihop.jsonl").split == "all"
    for half in (tune, report):
        assert [r.id for r in half.records] == [r.id for r in whole.records]
    # q1's gold paragraphs are in the corpus of the half that does not ask q1.
    assert set(whole.questions[0].gold) <= {r.doc_id for r in tune.records}


def test_acme_split(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus" / "wiki"
    corpus.mkdir(parents=True)
    (corpus / "a.md").write_text("# A\n\nAlpha team owns refunds.\n", encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    rows = [
        f'{{"id": "{qid}", "question": "q {qid}?", "answer": "x", "gold_docs": []}}'
        for qid in ("q1", "q2", "q5")
    ]
    questions.write_text("\n".join(rows) + "\n", encoding="utf-8")
    report = load_questions(questions, split="report")
    assert report.kind == "acme"
    assert [q.id for q in report.questions] == ["q1"]
    assert report.records and report.records == load_questions(questions, split="tune").records


def test_beir_split() -> None:
    assert load_beir(FIX / "beir", half="report").queries == {"1": "Does aspirin help headaches?"}
    tune = load_beir(FIX / "beir", half="tune")
    assert tune.queries == {"2": "Coffee and sleep"} and tune.split == "tune"
    assert len(tune.records) == len(load_beir(FIX / "beir").records)
    assert load_beir(FIX / "beir").split == "all"
