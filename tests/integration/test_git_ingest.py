"""A git repository made by the test (the git command line), ingested into real engines:
code cut at its definitions with its symbols in the identifier index, the last commit of
each file in its records, skips with reasons, and a re-sync from the diff: only the
changed file re-embedded, the deleted one gone from both engines, all in one step."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from retrieval.embedding import Embedder
from retrieval.engines.base import SearchFilter
from retrieval.records import Meta
from retrieval.sync import ingest_path
from tests.integration.git_repo import git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")

ALL = SearchFilter(acl_groups=None)

LEDGER = '''"""Ledger client."""
import os

RETRIES = 3


# Posts a refund to the ledger.
def post_refund(amount, reason):
    """Refund ``amount`` for ``reason``."""
    return {"amount": amount, "reason": reason}


class LedgerClient:
    """Talks to the ledger service."""

    def post_entry(self, entry):
        return entry

    def reconcile_quokka(self, day):
        return day
'''

UTIL = """export function formatMoney(cents) {
  return (cents / 100).toFixed(2);
}

export class CurrencyTable {
  lookup(code) { return code; }
}
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "payments"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "ledger.py").write_text(LEDGER)
    (root / "src" / "util.js").write_text(UTIL)
    (root / "docs" / "README.md").write_text(
        "# Payments\n\nRefunds go through `post_refund` in src/ledger.py. "
        "See [the runbook](runbook.md).\n"
    )
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (root / "fixtures.sql").write_text("insert into t values (1);\n" * 200)
    (root / ".gitignore").write_text("*.log\n")
    (root / "debug.log").write_text("committed before it was ignored\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-f", ".")
    git(root, "commit", "-q", "-m", "first")
    return root


def _ids(store, doc_id: str) -> list[str]:
    return store.catalog.chunk_ids(doc_id)


def test_repository_ingest_then_resync_from_the_diff(store, repo, monkeypatch):
    monkeypatch.setenv("WAYPOINT_GIT_MAX_FILE_BYTES", "2000")
    first = ingest_path(store, repo, source="code")
    head = git(repo, "rev-parse", "HEAD")
    assert first.loaded.kind == "git" and first.loaded.version == head
    skipped = dict(first.loaded.skipped)
    assert skipped[f"{repo}/logo.png"] == "binary file"
    assert skipped[f"{repo}/debug.log"] == "ignored by .gitignore"
    assert skipped[f"{repo}/fixtures.sql"].startswith("too large: 5200 bytes")
    docs = {d.doc_id for d in store.catalog.documents("code")}
    assert docs == {"code:src/ledger.py", "code:src/util.js", "code:docs/README.md"}

    # Code is cut at its top-level definitions; records carry path and last commit.
    ledger = store.catalog.doc_records("code:src/ledger.py")
    by_path = {tuple(r.metadata[Meta.HEADING_PATH]): r for r in ledger}
    assert set(by_path) == {(), ("post_refund",), ("LedgerClient",)}
    refund = by_path[("post_refund",)]
    assert refund.text.startswith("# Posts a refund to the ledger.\ndef post_refund(")
    assert refund.metadata[Meta.SYMBOLS] == ["post_refund"]
    assert by_path[("LedgerClient",)].metadata[Meta.SYMBOLS] == [
        "LedgerClient",
        "LedgerClient.post_entry",
        "post_entry",
        "LedgerClient.reconcile_quokka",
        "reconcile_quokka",
    ]
    for r in ledger:
        assert LEDGER[r.metadata[Meta.CHAR_START] : r.metadata[Meta.CHAR_END]] == r.text
        assert r.metadata["path"] == "src/ledger.py"
        assert r.metadata["commit"] == head
        assert r.metadata["commit_author"] == "Ada Lovelace"
        assert r.metadata["commit_date"] == "2026-03-04T08:00:00+00:00"
        assert r.metadata["kind"] == "code"
    assert store.catalog.source_version("code").version == head
    assert [s.version for s in store.sources()] == [head]

    # Symbol names are in the identifier index: a lookup opens the defining file.
    found = store.lookup("reconcile_quokka", ALL)
    assert [r.doc_id for r in found][:1] == ["code:src/ledger.py"]
    assert [r.doc_id for r in store.lookup("CurrencyTable", ALL)][:1] == ["code:src/util.js"]
    # The README's hyperlink to a page that does not exist is reported.
    assert ("code:docs/README.md", "docs/runbook.md") in first.report.broken_links

    readme_before = store.catalog.stored_chunks(_ids(store, "code:docs/README.md"))

    # A commit that changes one file and deletes another; another file is untouched.
    (repo / "src" / "util.js").write_text(UTIL.replace("toFixed(2)", "toFixed(3)"))
    git(repo, "rm", "-q", "src/ledger.py")
    git(repo, "commit", "-q", "-am", "second", author="Grace Hopper")
    second_head = git(repo, "rev-parse", "HEAD")

    again = ingest_path(store, repo, source="code")
    assert again.loaded.version == second_head
    assert sorted(again.loaded.touched or []) == ["src/ledger.py", "src/util.js"]
    report = again.report
    assert (report.added, report.updated, report.deleted) == (0, 1, 1)
    assert report.embeddings == 1  # only formatMoney's chunk changed text
    util = store.catalog.doc_records("code:src/util.js")
    assert {r.metadata["commit"] for r in util} == {second_head}
    assert {r.metadata["commit_author"] for r in util} == {"Grace Hopper"}
    # The untouched file keeps its records and vectors exactly.
    assert store.catalog.stored_chunks(_ids(store, "code:docs/README.md")) == readme_before
    # The deleted file is gone from the catalog, both engines and the identifier index.
    assert store.catalog.document("code:src/ledger.py") is None
    assert store.lexical.search("reconcile_quokka", 10, ALL) == []
    vector = Embedder(store.settings.embedding_model).encode(["post_refund ledger refund"])[0]
    assert all(h.doc_id != "code:src/ledger.py" for h in store.dense.search(vector, 20, ALL))
    assert all(r.doc_id != "code:src/ledger.py" for r in store.lookup("reconcile_quokka", ALL))
    assert store.catalog.source_version("code").version == second_head

    # Nothing new: nothing read, nothing written.
    idle = ingest_path(store, repo, source="code")
    assert idle.loaded.touched == [] and idle.loaded.records == []
    assert idle.report.embeddings == 0


def test_a_failed_resync_changes_nothing(store, repo, monkeypatch):
    ingest_path(store, repo, source="code")
    first_head = git(repo, "rev-parse", "HEAD")
    git(repo, "rm", "-q", "src/ledger.py")
    (repo / "src" / "util.js").write_text(UTIL + "\nexport const unicornRate = () => 7;\n")
    git(repo, "commit", "-q", "-am", "second")

    upsert = store.dense.upsert

    def broken(*args, **kwargs):
        monkeypatch.setattr(store.dense, "upsert", upsert)  # fails once
        raise OSError("disk full")

    # The lexical engine has taken the diff when the dense write fails.
    monkeypatch.setattr(store.dense, "upsert", broken)
    with pytest.raises(OSError):
        ingest_path(store, repo, source="code")
    monkeypatch.undo()
    assert store.catalog.source_version("code").version == first_head
    assert store.catalog.document("code:src/ledger.py") is not None
    assert [h.doc_id for h in store.lexical.search("reconcile_quokka", 5, ALL)] == [
        "code:src/ledger.py"
    ]
    assert store.lexical.search("unicornRate", 5, ALL) == []
    assert store.catalog.pending_ids() == []

    retried = ingest_path(store, repo, source="code")
    assert retried.report.deleted == 1 and retried.report.updated == 1
    assert [h.doc_id for h in store.lexical.search("unicornRate", 5, ALL)] == ["code:src/util.js"]


def test_a_new_acl_reads_every_file_again(store, repo):
    ingest_path(store, repo, source="code")
    again = ingest_path(store, repo, source="code", acl=["eng"])
    assert again.loaded.touched is None  # other settings: the whole tree, not the diff
    documents = store.catalog.documents("code")
    assert again.report.updated == len(documents) == 4  # fixtures.sql under the default cap
    assert again.report.embeddings == 0  # an ACL change keeps every vector
    assert all(d.acl == ["eng"] for d in store.catalog.documents("code"))


def test_long_code_fits_what_the_model_reads(tmp_path):
    from retrieval.chunking import model_tokenizer
    from retrieval.connectors import load_path
    from retrieval.settings import RetrievalSettings
    from retrieval.store import embedding_text

    root = tmp_path / "big"
    root.mkdir()
    body = "".join(
        f"    total += ledger_entry_{i}.amount * rate_{i}  # row {i}\n" for i in range(400)
    )
    (root / "reconcile.py").write_text(f"def reconcile(entries):\n    total = 0\n{body}")
    (root / "schema.sql").write_text("".join(f"create table t{i} (id int);\n" for i in range(300)))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "big")
    tokenizer = model_tokenizer(RetrievalSettings().embedding_model)
    assert tokenizer is not None
    loaded = load_path(root, source="code")
    by_doc: dict[str, int] = {}
    for r in loaded.records:
        by_doc[r.doc_id] = by_doc.get(r.doc_id, 0) + 1
        assert tokenizer.count(embedding_text(r)) <= tokenizer.max_length
        text = (root / r.metadata["path"]).read_text()
        assert text[r.metadata[Meta.CHAR_START] : r.metadata[Meta.CHAR_END]] == r.text
    assert by_doc["code:reconcile.py"] > 3 and by_doc["code:schema.sql"] > 3
    assert all(
        r.metadata[Meta.HEADING_PATH] == ["reconcile"]
        for r in loaded.records
        if r.doc_id == "code:reconcile.py"
    )
