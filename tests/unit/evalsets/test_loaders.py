"""Loaders on tiny fixture files in each format."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsets.loaders import (
    EvalInputError,
    dataset_name,
    is_acme_file,
    load_acme_questions,
    load_beir,
    load_multihop,
    load_questions,
    paragraph_id,
)

FIX = Path(__file__).parent / "fixtures"


def test_multihop_dedups_paragraphs_and_sets_gold() -> None:
    es = load_multihop(FIX / "multihop.jsonl")
    assert es.dataset == "multihop"
    assert [q.id for q in es.questions] == ["q1", "q2", "q5"]
    # Kesterby and Ostmark repeat across rows: 3 distinct (title, text) pairs.
    assert len(es.records) == 3
    assert len({r.id for r in es.records}) == 3
    q1 = es.questions[0]
    assert q1.gold == [
        paragraph_id(
            "multihop", "Norvania", "Norvania is a small country whose capital is Kesterby."
        ),
        paragraph_id(
            "multihop", "Kesterby", "Kesterby lies on both banks of the Vell, a slow river."
        ),
    ]
    assert q1.answers == ["the Vell", "Vell River"]
    assert {r.doc_id for r in es.records} >= set(q1.gold)
    rec = next(r for r in es.records if r.doc_id == q1.gold[0])
    assert rec.source == "multihop"
    assert rec.title == "Norvania"
    assert rec.id == f"{q1.gold[0]}#0"
    assert len(q1.gold[0].split(":", 1)[1]) == 16


def test_multihop_reports_bad_rows_with_line_numbers() -> None:
    es = load_multihop(FIX / "multihop.jsonl")
    lines = {(Path(s.path).name, s.line) for s in es.skipped}
    assert lines == {("multihop.jsonl", 3), ("multihop.jsonl", 4), ("multihop.jsonl", 5)}
    reasons = {s.line: s.reason for s in es.skipped}
    assert "question" in reasons[3]
    assert "paragraphs" in reasons[4]
    assert "JSON" in reasons[5]


def test_multihop_unanswerable_row_expects_refusal() -> None:
    es = load_multihop(FIX / "multihop.jsonl")
    q5 = es.questions[-1]
    assert q5.expect == "refuse"
    assert q5.gold == []


def test_multihop_corpus_files_replace_the_default_corpus() -> None:
    es = load_multihop(FIX / "multihop.jsonl", [FIX / "extra_corpus.jsonl"])
    titles = sorted(r.title for r in es.records)
    assert titles == ["Kesterby", "Vell"]
    # The corpus file's bad row is reported too (questions file rows: 3 bad).
    assert ("extra_corpus.jsonl", 2) in {(Path(s.path).name, s.line) for s in es.skipped}
    assert len(es.skipped) == 4


def test_multihop_ids_are_stable_across_loads() -> None:
    a = load_multihop(FIX / "multihop.jsonl")
    b = load_multihop(FIX / "multihop.jsonl")
    assert [r.model_dump() for r in a.records] == [r.model_dump() for r in b.records]


def test_dataset_name_uses_folder_for_generic_files(tmp_path: Path) -> None:
    assert dataset_name(Path("/x/hotpotqa/dev.jsonl")) == "hotpotqa"
    assert dataset_name(Path("/x/2wikimultihopqa/dev.jsonl")) == "2wikimultihopqa"
    assert dataset_name(Path("/x/y/My Set.jsonl")) == "my-set"


def test_acme_questions() -> None:
    assert is_acme_file(FIX / "acme_questions.jsonl")
    assert not is_acme_file(FIX / "multihop.jsonl")
    qs, skipped = load_acme_questions(FIX / "acme_questions.jsonl")
    assert [q.id for q in qs] == ["a1", "a2"]
    assert qs[0].gold == ["wiki:teams/payments.md"]
    assert (qs[0].user, qs[0].groups) == ("ann", ["eng"])
    assert qs[1].expect == "refuse"
    assert [s.line for s in skipped] == [3]


def test_load_questions_missing_file_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(EvalInputError, match="no such file"):
        load_questions(tmp_path / "nope.jsonl")
    with pytest.raises(EvalInputError, match="no such file"):
        load_questions(FIX / "multihop.jsonl", [tmp_path / "missing.jsonl"])


def test_beir_loader() -> None:
    beir = load_beir(FIX / "beir")
    assert beir.dataset == "beir"
    assert [r.doc_id for r in beir.records] == ["beir:d1", "beir:d2", "beir:d3"]
    assert beir.records[0].title == "Aspirin and headaches"
    assert beir.queries == {"1": "Does aspirin help headaches?", "2": "Coffee and sleep"}
    assert beir.qrels["2"] == {"beir:d2": 2, "beir:d3": 1}
    assert [s.line for s in beir.skipped] == [4]


def test_beir_missing_pieces(tmp_path: Path) -> None:
    with pytest.raises(EvalInputError, match="no such directory"):
        load_beir(tmp_path / "absent")
    with pytest.raises(EvalInputError, match="corpus"):
        load_beir(tmp_path)
