"""Catalog batches: pending marks, one commit for documents, deletions, membership and a
source's version; documents of a file found by path; old catalogs gain the new columns."""

from __future__ import annotations

import sqlite3

from retrieval.catalog import Batch, Catalog, SourceVersion
from tests.conftest import make_record


def test_a_batch_commits_documents_deletions_membership_and_version_at_once(tmp_path):
    catalog = Catalog(tmp_path / "catalog.sqlite")
    old = [make_record("old.py", "x = 1", source="code")]
    catalog.commit_batch(Batch(docs=[old], sources=["code"]))
    new = [make_record("new.py", "y = 2", source="code")]
    catalog.begin_batch(["code:new.py#0", "code:old.py#0"])
    assert sorted(catalog.pending_ids()) == ["code:new.py#0", "code:old.py#0"]
    assert catalog.document("code:new.py") is None  # nothing visible before the commit
    version = catalog.content_version()
    catalog.commit_batch(
        Batch(
            docs=[new],
            delete_docs=["code:old.py"],
            sources=["code"],
            project="core",
            origin="/repo",
            version=SourceVersion("code", "abc123", "cfg"),
        ),
        pending=["code:new.py#0", "code:old.py#0"],
    )
    assert catalog.pending_ids() == []
    assert catalog.content_version() == version + 1
    assert [d.doc_id for d in catalog.documents("code")] == ["code:new.py"]
    assert catalog.project_sources("core") == ["code"]
    assert catalog.source_version("code") == SourceVersion("code", "abc123", "cfg")
    (info,) = catalog.sources()
    assert (info.version, info.origin, info.projects) == ("abc123", "/repo", ["core"])


def test_documents_of_a_file_include_its_sheets_and_nothing_else(tmp_path):
    catalog = Catalog(tmp_path / "catalog.sqlite")
    docs = [
        [make_record(name, "t", source="s")]
        for name in ("book.xlsx/Q1", "book.xlsx/Q2", "book.xlsx.bak", "other.md", "book.xlsx")
    ]
    catalog.commit_batch(Batch(docs=docs, sources=["s"]))
    assert sorted(catalog.document_ids("s", ["book.xlsx"])) == [
        "s:book.xlsx",
        "s:book.xlsx/Q1",
        "s:book.xlsx/Q2",
    ]
    assert len(catalog.document_ids("s")) == 5


def test_a_catalog_from_before_source_versions_gains_the_columns(tmp_path):
    path = tmp_path / "catalog.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sources (name TEXT PRIMARY KEY, last_sync TEXT, origin TEXT)")
    conn.execute("INSERT INTO sources VALUES ('wiki', '2026-01-01', '/wiki')")
    conn.commit()
    conn.close()
    catalog = Catalog(path)
    assert catalog.source_version("wiki") is None
    assert [(s.name, s.version) for s in catalog.sources()] == [("wiki", None)]
