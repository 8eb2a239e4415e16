"""An ingest killed with SIGKILL inside a batch leaves no half-visible batch: reopened, the
home holds exactly what the catalog committed, in both engines, with the ACL the catalog
has, and the batches committed before the kill are visible to their project."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from retrieval.catalog import Catalog
from retrieval.engines.base import SearchFilter
from retrieval.store import Store

REPO = Path(__file__).resolve().parents[3]
ALL = SearchFilter(acl_groups=None)

# Opens the home, arranges for the process to kill itself (SIGKILL: no cleanup runs) at
# one point of the ``kill_at``-th batch, and ingests ``docs`` one-chunk documents.
SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from datetime import UTC, datetime
    from pathlib import Path
    from retrieval.records import Meta, Record, content_hash
    from retrieval.store import Store

    home, point, kill_at, docs, acl, word = sys.argv[1:]
    store = Store.open(home=Path(home))
    calls = {"n": 0}

    def killing(method):
        def call(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == int(kill_at):
                os.kill(os.getpid(), signal.SIGKILL)
            return method(*args, **kwargs)
        return call

    target = {"lexical": store.lexical, "dense": store.dense, "catalog": store.catalog}[point]
    name = "commit_batch" if point == "catalog" else "upsert"
    setattr(target, name, killing(getattr(target, name)))
    records = []
    for i in range(int(docs)):
        doc_id = f"wiki:page-{i}.md"
        text = f"{word} page {i} about the {word} service and its runbook number {i}"
        records.append(Record(
            id=f"{doc_id}#0", source="wiki", text=text,
            timestamp=datetime(2026, 1, 1, tzinfo=UTC),
            metadata={Meta.DOC_ID: doc_id, Meta.CHUNK_INDEX: 0, Meta.TITLE: f"page {i}",
                      Meta.CONTENT_HASH: content_hash(text + acl), Meta.ACL: acl.split(",")},
        ))
    store.ingest(records, project="core", batch_records=20)
    print("not killed")
    """
)


def _ingest(home: Path, point: str, kill_at: int, docs: int, acl: str, word: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(home), point, str(kill_at), str(docs), acl, word],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode


def _term_hits(store: Store, word: str, flt: SearchFilter) -> tuple[set[str], set[str]]:
    vector = store.embedder.encode([f"{word} service runbook"])[0]
    lexical = {h.doc_id for h in store.lexical.search(word, 100, flt)}
    dense = {h.doc_id for h in store.dense.search(vector, 100, flt) if word in h.record.text}
    return lexical, dense


@pytest.mark.parametrize("point", ["lexical", "dense", "catalog"])
def test_killed_in_the_second_batch_only_the_first_is_visible(tmp_path, point):
    home = tmp_path / "home"
    # The second batch: killed before its lexical commit, after it, or after both engines.
    assert _ingest(home, point, 2, 50, "eng", "zebrafish") == -9
    catalog = Catalog(home / "catalog.sqlite")
    assert len(catalog.pending_ids()) == 20  # the kill landed inside the second batch
    catalog.close()
    store = Store.open(home=home)
    try:
        assert store.catalog.pending_ids() == []
        committed = {d.doc_id for d in store.catalog.documents()}
        assert committed == {f"wiki:page-{i}.md" for i in range(20)}
        assert store.lexical.count() == store.dense.count() == 20
        lexical, dense = _term_hits(store, "zebrafish", ALL)
        assert lexical == committed and dense <= committed
        # Membership is written with each batch: the project sees the committed one.
        scoped = store.filter_for(["eng"], project="core")
        assert _term_hits(store, "zebrafish", scoped)[0] == committed
    finally:
        store.close()


def test_killed_during_an_acl_change_both_engines_keep_the_committed_acl(tmp_path):
    home = tmp_path / "home"
    assert _ingest(home, "catalog", 0, 20, "eng", "quokka") == 0  # never killed
    # The same documents moved to hr: killed once both engines hold the new ACL.
    assert _ingest(home, "catalog", 1, 20, "hr", "quokka") == -9
    store = Store.open(home=home)
    try:
        every = {f"wiki:page-{i}.md" for i in range(20)}
        assert {d.doc_id for d in store.catalog.documents() if d.acl == ["eng"]} == every
        for groups, expected in ((["eng"], every), (["hr"], set())):
            lexical, dense = _term_hits(store, "quokka", SearchFilter.for_groups(groups))
            assert lexical == expected
            assert dense <= expected and (dense or not expected)
    finally:
        store.close()
