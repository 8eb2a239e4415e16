"""While a batch is between its first engine write and its catalog commit, a search in
the same process sees it as the catalog has it: a new chunk not at all, a replaced one in
its committed version, never one the committed ACL does not admit."""

from __future__ import annotations

from retrieval.engines.base import SearchFilter
from tests.conftest import make_record

ALL = SearchFilter(acl_groups=None)


def test_a_batch_being_written_is_seen_as_the_catalog_has_it(store, monkeypatch):
    store.ingest([make_record("kept.md", "pelican runbook version one", acl=["eng"])])
    seen: dict[str, object] = {}
    upsert = store.dense.upsert

    def between(records, vectors):  # the lexical engine already holds the batch
        lexical = store.lexical.search("pelican", 10, ALL)
        seen["ids"] = sorted(h.id for h in lexical)
        seen["texts"] = sorted(h.record.text for h in lexical)
        seen["hr"] = store.lexical.search("pelican", 10, SearchFilter.for_groups(["hr"]))
        seen["eng"] = store.lexical.search("pelican", 10, SearchFilter.for_groups(["eng"]))
        return upsert(records, vectors)

    monkeypatch.setattr(store.dense, "upsert", between)
    store.ingest(
        [
            make_record("kept.md", "pelican runbook version two", acl=["hr"]),
            make_record("new.md", "pelican migration notes"),
        ]
    )
    assert seen["ids"] == ["test:kept.md#0"]  # the new chunk is not visible yet
    assert seen["texts"] == ["pelican runbook version one"]  # the committed version
    assert seen["hr"] == []  # the ACL still in force is the committed one
    # The engine already filters on the new ACL: a reader of the old one may miss the
    # chunk for the moment, but what it sees is the committed version.
    assert all(h.record.text == "pelican runbook version one" for h in seen["eng"])
    after = sorted(h.record.text for h in store.lexical.search("pelican", 10, ALL))
    assert after == ["pelican migration notes", "pelican runbook version two"]
