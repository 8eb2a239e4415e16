"""The sets over installed documentation (pydocs, sqlitedocs, apachedocs): their questions,
the corpus builder and the corpus.json hook."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import pytest

from evalsets import doc_corpus
from evalsets.apachedocs import build as apachedocs_build
from evalsets.corpus_spec import read_corpus_spec
from evalsets.doc_corpus import DocSubset
from evalsets.loaders import EvalInputError, load_acme_questions, load_questions, question_split
from evalsets.pydocs import build as pydocs_build
from evalsets.sqlitedocs import build as sqlitedocs_build
from retrieval.connectors import load_path

SETS = {
    "apachedocs": (
        apachedocs_build.SUBSET,
        {"single_hop": 8, "multi_hop": 5, "comparison": 3, "identifier": 3, "unanswerable": 4},
        40,
    ),
    "pydocs": (
        pydocs_build.SUBSET,
        {"single_hop": 25, "multi_hop": 15, "comparison": 8, "identifier": 8, "unanswerable": 8},
        80,
    ),
    "sqlitedocs": (
        sqlitedocs_build.SUBSET,
        {"single_hop": 8, "multi_hop": 5, "comparison": 3, "identifier": 3, "unanswerable": 4},
        40,
    ),
}
NAMES = sorted(SETS)


def _questions(name: str) -> Path:
    return doc_corpus.REPO / "evalsets" / name / "questions.jsonl"


@pytest.mark.parametrize("name", NAMES)
def test_questions_parse_and_are_well_formed(name: str) -> None:
    _, minimum, least = SETS[name]
    questions, skipped = load_acme_questions(_questions(name))
    assert not skipped
    assert len(questions) >= least
    rows = doc_corpus.read_rows(_questions(name))
    assert doc_corpus.row_problems(rows, name) == []
    counts = Counter(q.type for q in questions)
    assert all(counts[t] >= n for t, n in minimum.items()), counts
    assert all(q.user == "eval" and q.groups == [] for q in questions)


@pytest.mark.parametrize("name", NAMES)
def test_every_question_file_of_a_set_is_well_formed_and_ids_are_unique_across_them(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    files = sorted(_questions(name).parent.glob("questions*.jsonl"))
    rows = [row for path in files for row in doc_corpus.read_rows(path)]
    assert doc_corpus.row_problems(rows, name) == []
    # the checker reads every file: a row of the fresh file is counted in its own line
    doc_corpus.check_main(_questions(name), name)
    printed = capsys.readouterr().out
    assert all(f"{path.name}: " in printed for path in files)


def test_the_checker_reports_an_id_used_in_two_files(tmp_path: Path) -> None:
    row = doc_corpus.read_rows(_questions("pydocs"))[0]
    for name in ("questions.jsonl", "questions_fresh.jsonl"):
        (tmp_path / name).write_text(json.dumps(row) + "\n")
    assert doc_corpus.check_main(tmp_path / "questions.jsonl", "pydocs") == 1


@pytest.mark.parametrize("name", NAMES)
def test_every_type_is_in_both_halves(name: str) -> None:
    questions = load_acme_questions(_questions(name))[0]
    halves = Counter((q.type, question_split(q.id)) for q in questions)
    for qtype in SETS[name][1]:
        assert halves[(qtype, "tune")] and halves[(qtype, "report")], qtype


def test_row_problems_catch_bad_rows() -> None:
    good = doc_corpus.read_rows(_questions("pydocs"))[0]
    refused = {**good, "id": "x-2", "type": "unanswerable", "expect": "refuse"}
    bad_id = {**good, "id": "x-3", "gold_docs": ["wiki:a.md"]}
    problems = doc_corpus.row_problems([good, good, refused, bad_id], "pydocs")
    assert any("used 2 times" in p for p in problems)
    assert any(p.startswith("x-2: a refused row") for p in problems)
    assert any(p.startswith("x-3: gold id") for p in problems)
    assert doc_corpus.row_problems([good], "sqlitedocs")  # another set's page id


@pytest.mark.parametrize("name", NAMES)
def test_gold_pages_exist_in_the_built_corpus_and_state_the_answer(
    name: str, tmp_path: Path
) -> None:
    spec = read_corpus_spec(_questions(name))
    assert spec is not None and [s.source for s in spec.sources] == [name]
    corpus = spec.sources[0].path
    if not corpus.is_dir():
        pytest.skip(f"{name} corpus not built ({corpus}): make {name}")
    files = sorted(_questions(name).parent.glob("questions*.jsonl"))
    rows = [row for path in files for row in doc_corpus.read_rows(path)]
    gold = sorted({d for r in rows for d in r["gold_docs"]})
    rels = [d.removeprefix(f"{name}:") for d in gold]
    missing = [rel for rel in rels if not (corpus / rel).is_file()]
    assert not missing
    # Only the gold pages, at the same relative paths: the same ids and text as the whole
    # folder gives, read through the same connector, in a fraction of the time.
    for rel in rels:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(corpus / rel, tmp_path / rel)
    result = load_path(tmp_path, source=name)
    assert not result.failures
    pages: dict[str, list[str]] = {}
    for rec in result.records:
        pages.setdefault(str(rec.metadata["doc_id"]), []).append(rec.text)
    assert sorted(pages) == gold
    joined = {d: "\n".join(t) for d, t in pages.items()}
    assert doc_corpus.corpus_problems(rows, joined) == []


def _acme_row(qid: str, gold: list[str]) -> dict[str, object]:
    return {
        "id": qid,
        "question": "what is the answer?",
        "answer": "forty-two",
        "answer_aliases": [],
        "type": "single_hop",
        "gold_docs": gold,
        "as": {"user": "eval", "groups": []},
        "expect": "answer",
        "notes": "",
    }


def _set_folder(tmp_path: Path, spec: Mapping[str, object] | None) -> Path:
    folder = tmp_path / "myset"
    folder.mkdir()
    questions = folder / "questions.jsonl"
    questions.write_text(json.dumps(_acme_row("q-1", ["docs:guide/page.html"])) + "\n")
    if spec is not None:
        (folder / "corpus.json").write_text(json.dumps(spec))
    pages = tmp_path / "outside" / "guide"
    pages.mkdir(parents=True)
    (pages / "page.html").write_text(
        "<html><head><title>Page</title></head><body><h1>Guide</h1>"
        "<p>The answer is forty-two.</p></body></html>"
    )
    return questions


def test_corpus_json_names_a_folder_outside_the_set(tmp_path: Path) -> None:
    spec = {"sources": [{"path": "../outside", "source": "docs"}], "build": "make docs"}
    evalset = load_questions(_set_folder(tmp_path, spec), split="all")
    assert evalset.kind == "acme" and evalset.dataset == "myset"
    assert [q.gold for q in evalset.questions] == [["docs:guide/page.html"]]
    assert {r.metadata["doc_id"] for r in evalset.records} == {"docs:guide/page.html"}
    assert {tuple(r.metadata["acl"]) for r in evalset.records} == {("public",)}


def test_corpus_json_env_override_and_missing_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = {
        "sources": [{"path": "../not-built", "source": "docs", "env": "TEST_PYDOCS_DIR"}],
        "build": "make docs",
    }
    questions = _set_folder(tmp_path, spec)
    with pytest.raises(EvalInputError, match="make docs"):
        load_questions(questions)
    monkeypatch.setenv("TEST_PYDOCS_DIR", str(tmp_path / "outside"))
    evalset = load_questions(questions, split="all")
    assert {r.metadata["doc_id"] for r in evalset.records} == {"docs:guide/page.html"}


def test_without_corpus_json_the_acme_rule_holds(tmp_path: Path) -> None:
    with pytest.raises(EvalInputError, match="no corpus folder"):
        load_questions(_set_folder(tmp_path, None))


def test_build_copies_the_subset_and_prunes(tmp_path: Path) -> None:
    src = tmp_path / "html"
    for rel in (
        "library/functools.html",
        "library/asyncio/sub.html",
        "howto/sorting.html",
        "glossary.html",
        "c-api/abstract.html",
        "genindex.html",
        "whatsnew/3.11.html",
        "library/notes.txt",
    ):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(f"<html><body><p>{rel}</p></body></html>")
    out = tmp_path / "corpus"
    subset = pydocs_build.SUBSET
    assert subset.find_source(src) == src.resolve()
    assert doc_corpus.build(subset, src, out) == (4, 0)
    got = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert got == [
        "glossary.html",
        "howto/sorting.html",
        "library/asyncio/sub.html",
        "library/functools.html",
    ]
    assert doc_corpus.build(subset, src, out) == (0, 0)  # up to date: nothing copied
    (out / "library" / "stale.html").write_text("old")
    assert doc_corpus.build(subset, src, out) == (0, 1)
    assert doc_corpus.build_main(subset, ["--src", str(src), "--out", str(out), "--check"]) == 0
    with pytest.raises(SystemExit, match="make pydocs"):
        subset.find_source(tmp_path / "nowhere")


def test_a_top_level_subset_skips_generated_pages(tmp_path: Path) -> None:
    src = tmp_path / "html"
    for rel in ("pragma.html", "sitemap.html", "c3ref/open.html", "releaselog/3_40_0.html"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(f"<html><body><p>{rel}</p></body></html>")
    subset = DocSubset(
        name="docs",
        package="docs-doc",
        candidates=(src,),
        probe="pragma.html",
        folders=("c3ref",),
        top_level=True,
        skip=("sitemap.html",),
    )
    assert [p.as_posix() for p in subset.selected_pages(subset.find_source())] == [
        "c3ref/open.html",
        "pragma.html",
    ]
    assert sqlitedocs_build.SUBSET.top_level and "sitemap.html" in sqlitedocs_build.SUBSET.skip
