"""Code cut at its top-level definitions (tree-sitter), chunks as exact slices, a class
over the cap cut at its members, symbols in the chunks' metadata and names."""

from __future__ import annotations

from datetime import UTC, datetime

from retrieval.connectors.base import SourceDocument, document_records
from retrieval.connectors.code import code_sections, language_for
from retrieval.records import Meta
from retrieval.settings import RetrievalSettings
from retrieval.structure import IDENT, document_structure

PY = """import os

LIMIT = 3


@retry(3)
def post_refund(amount):
    return amount


class LedgerClient:
    timeout = 5

    def post(self, entry):
        return entry
"""


def _slices(text: str, language: str) -> list[tuple[tuple[str, ...], str]]:
    sections = code_sections(text, language)
    assert sections is not None
    return [(s.heading_path, text[s.start : s.end]) for s in sections]


def test_python_definitions_with_their_decorators_and_the_module_code_between():
    slices = _slices(PY, "python")
    assert [path for path, _ in slices] == [(), ("post_refund",), ("LedgerClient",)]
    assert slices[0][1] == "import os\n\nLIMIT = 3\n\n\n"
    assert slices[1][1] == "@retry(3)\ndef post_refund(amount):\n    return amount"
    assert slices[2][1].startswith("class LedgerClient:") and slices[2][1].endswith("entry")


def test_other_languages_name_their_definitions():
    js = 'import x from "y";\nfunction f(a) { return a }\nconst g = (x) => x;\nconst k = 3;\n'
    assert [p for p, _ in _slices(js, "javascript")] == [(), ("f",), ("g",), ()]
    go = "package main\n\ntype Ledger struct{}\n\nfunc (l *Ledger) Post() {}\n"
    assert [p for p, _ in _slices(go, "go")] == [(), ("Ledger",), ("Post",)]
    rust = "use std::io;\n\nimpl Ledger {\n    fn post(&self) {}\n}\n"
    sections = code_sections(rust, "rust")
    assert sections is not None and sections[1].symbols == ("Ledger", "Ledger.post", "post")
    c = "#include <stdio.h>\n\nstatic int refund(int a) { return a; }\n"
    assert [p for p, _ in _slices(c, "c")] == [(), ("refund",)]


def test_language_by_extension_and_none_without_grammar():
    assert language_for("src/a.py") == "python" and language_for("web/App.tsx") == "tsx"
    assert language_for("Makefile") is None
    assert code_sections("key: value\n", None) is None


def test_non_ascii_code_keeps_character_offsets():
    text = 'NAME = "Zürich"\n\ndef größe():\n    return "ü"\n'
    slices = _slices(text, "python")
    assert slices[-1] == (("größe",), 'def größe():\n    return "ü"')


def _doc(text: str, sections) -> SourceDocument:
    return SourceDocument(
        doc_id="code:src/ledger.py",
        source="code",
        text=text,
        title="src/ledger.py",
        kind="code",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        source_version="abc",
        acl=["public"],
        sections=sections,
    )


def test_a_class_over_the_cap_is_cut_at_its_members_and_symbols_reach_the_names():
    methods = "".join(
        f"    def step_{i}(self, value):\n        return value + {i} * LIMIT_{i}\n\n"
        for i in range(12)
    )
    text = f"class Pipeline:\n    name = 'p'\n\n{methods}"
    settings = RetrievalSettings(chunk_tokens=60, chunk_overlap_tokens=0)
    records = document_records(_doc(text, code_sections(text, "python")), settings)
    assert len(records) > 1
    paths = [tuple(r.metadata[Meta.HEADING_PATH]) for r in records]
    assert paths[0] == ("Pipeline",)
    assert ("Pipeline", "step_3") in paths
    for r in records:
        assert text[r.metadata[Meta.CHAR_START] : r.metadata[Meta.CHAR_END]] == r.text
    step = next(r for r in records if r.metadata[Meta.HEADING_PATH] == ["Pipeline", "step_3"])
    assert step.metadata[Meta.SYMBOLS] == ["Pipeline.step_3", "step_3"]
    assert step.text.startswith("def step_3(")
    names = set(document_structure(records).names)
    assert ("pipeline.step_3", IDENT) in names and ("pipeline", IDENT) in names


def test_a_small_class_stays_one_chunk():
    records = document_records(_doc(PY, code_sections(PY, "python")), RetrievalSettings())
    assert [r.metadata[Meta.HEADING_PATH] for r in records] == [
        [],
        ["post_refund"],
        ["LedgerClient"],
    ]
    assert records[2].metadata[Meta.SYMBOLS] == ["LedgerClient", "LedgerClient.post", "post"]
