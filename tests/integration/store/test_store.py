"""The Store on real engines: change detection, in-place replace, deletes, ACL, generations."""

from __future__ import annotations

import threading

from retrieval.catalog import Catalog
from retrieval.engines.base import SearchFilter
from tests.conftest import held_by_another_thread, make_record

ALL = SearchFilter(acl_groups=None)


def _doc(name: str, texts: list[str], **kw):
    return [make_record(name, t, index=i, **kw) for i, t in enumerate(texts)]


def test_reingest_unchanged_content_does_no_embedding_work(store):
    recs = _doc("a.md", ["alpha ledger service runbook", "beta paging policy"])
    first = store.ingest(recs)
    assert (first.added, first.updated, first.unchanged) == (1, 0, 0)
    assert first.embeddings == 2
    again = store.ingest(_doc("a.md", ["alpha ledger service runbook", "beta paging policy"]))
    assert (again.added, again.updated, again.unchanged) == (0, 0, 1)
    assert again.embeddings == 0
    assert store.lexical.count() == 2 and store.dense.count() == 2


def test_changed_document_replaces_old_chunks_in_both_engines(store):
    store.ingest(_doc("p.md", ["zebra quokka original text", "second section", "third section"]))
    report = store.ingest(_doc("p.md", ["wombat platypus new text", "second section"]))
    assert report.updated == 1
    # only the changed chunk is re-embedded; the untouched section keeps its vector
    assert report.embeddings == 1
    assert store.lexical.search("zebra quokka", 5, ALL) == []
    hits = store.lexical.search("wombat platypus", 5, ALL)
    assert [h.id for h in hits] == ["test:p.md#0"]
    assert sorted(store.catalog.chunk_ids("test:p.md")) == ["test:p.md#0", "test:p.md#1"]
    assert store.dense.count() == 2 and store.lexical.count() == 2


def test_delete_document_and_source_remove_from_both_engines(store):
    store.ingest(_doc("x.md", ["xylophone"]) + _doc("y.md", ["yodel"]))
    store.ingest(_doc("z.md", ["zither"], source="other"))
    assert store.delete_document("test:x.md")
    assert store.lexical.search("xylophone", 5, ALL) == []
    vec = store.embedder.encode(["xylophone"])[0]
    assert all(h.record.doc_id != "test:x.md" for h in store.dense.search(vec, 5, ALL))
    assert store.delete_source("other") == 1
    assert store.lexical.search("zither", 5, ALL) == []
    assert store.dense.count() == 1
    assert [s.name for s in store.sources()] == ["test"]


def test_sources_seen_through_a_filter_name_and_count_only_what_it_admits(store):
    store.ingest(
        _doc("pay.md", ["salary bands", "bonus rules"], source="hr", acl=["hr"])
        + _doc("leave.md", ["parental leave"], source="hr")  # public
        + _doc("board.md", ["board minutes"], source="exec", acl=["exec"])
    )
    everything = {s.name: (s.documents, s.records) for s in store.sources()}
    assert everything == {"hr": (2, 3), "exec": (1, 1)}
    eng = {s.name: (s.documents, s.records) for s in store.sources(store.filter_for(["eng"]))}
    assert eng == {"hr": (1, 1)}  # the public page only; "exec" is not even named
    hr = {s.name: (s.documents, s.records) for s in store.sources(store.filter_for(["hr"]))}
    assert hr == {"hr": (2, 3)}


def test_acl_enforced_on_by_id_reads_and_lookup(store):
    store.ingest(
        _doc("salaries.md", ["salary bands for 2026"], acl=["hr"], title="Salary bands")
        + _doc("handbook.md", ["the employee handbook"], title="Employee handbook")
    )
    eng = store.filter_for(["eng"])
    hr = store.filter_for(["hr"])
    assert store.get_records(["test:salaries.md#0"], eng) == []
    assert [r.id for r in store.get_records(["test:salaries.md#0"], hr)] == ["test:salaries.md#0"]
    assert store.lookup("Salary bands", eng) == []
    assert [r.doc_id for r in store.lookup("salary bands", hr)] == ["test:salaries.md"]
    # fuzzy title match, still ACL-checked
    assert [r.doc_id for r in store.lookup("Employee handbok", eng)] == ["test:handbook.md"]
    assert ("Salary bands", "test:salaries.md") not in store.titles(eng)


def test_projects_scope_searches_to_their_sources(store):
    store.ingest(_doc("a.md", ["shared words"], source="wiki"), project="acme")
    store.ingest(_doc("b.md", ["shared words"], source="tickets"))
    flt = store.filter_for(["eng"], project="acme")
    assert flt.sources == ("wiki",)
    hits = store.lexical.search("shared words", 5, flt)
    assert [h.record.source for h in hits] == ["wiki"]


def test_neighbors_and_document_order(store):
    store.ingest(_doc("n.md", ["zero", "one", "two", "three"]))
    flt = store.filter_for([])
    assert [r.id for r in store.neighbors("test:n.md#2", flt)] == ["test:n.md#1", "test:n.md#3"]
    assert [r.chunk_index for r in store.get_document("test:n.md", flt)] == [0, 1, 2, 3]
    assert [r.id for r in store.neighbors("test:n.md#0", flt, window=2)] == [
        "test:n.md#1",
        "test:n.md#2",
    ]
    assert store.neighbors("test:n.md#9", flt) == []


def test_a_document_read_again_is_its_current_content_seen_by_each_caller(store):
    """Whole documents are kept between reads; a change of content, its ACL or its
    deletion is what the next read returns, and every read is filtered for its caller."""
    store.ingest(_doc("k.md", ["kept original text", "second"], acl=["hr"]))
    hr, eng = store.filter_for(["hr"]), store.filter_for(["eng"])
    assert [r.text for r in store.get_document("test:k.md", hr)] == ["kept original text", "second"]
    assert store.get_document("test:k.md", eng) == []  # the kept copy is filtered too
    store.ingest(_doc("k.md", ["kept changed text"], acl=["hr"]))
    assert [r.text for r in store.get_document("test:k.md", hr)] == ["kept changed text"]
    store.ingest(_doc("k.md", ["kept changed text"]))  # made public
    assert [r.text for r in store.get_document("test:k.md", eng)] == ["kept changed text"]
    assert store.delete_document("test:k.md")
    assert store.get_document("test:k.md", hr) == []


def test_version_changes_with_content_and_is_shared_through_the_catalog(store):
    v0 = store.version()
    store.ingest(_doc("v.md", ["versioned text"]))
    v1 = store.version()
    assert v1 != v0
    store.ingest(_doc("v.md", ["versioned text"]))  # unchanged: nothing to invalidate
    assert store.version() == v1
    store.ingest(_doc("v.md", ["versioned text"], acl=["hr"]))  # an ACL change
    v2 = store.version()
    assert v2 != v1
    # another process reads the same counter from the catalog file
    other = Catalog(store.home / "catalog.sqlite")
    try:
        assert other.content_version() == v2
    finally:
        other.close()
    assert store.delete_document("test:v.md")
    assert store.version() not in (v0, v1, v2)


def test_lexical_only_records_are_not_embedded(store):
    recs = [
        make_record("t", "distilled thread summary", index=0),
        make_record("t", "raw chatty thread text lol", index=1, legs=["lexical"]),
    ]
    report = store.ingest(recs)
    assert report.embeddings == 1
    assert store.dense.count() == 1 and store.lexical.count() == 2


def test_reindex_builds_new_generation_and_switches(store):
    store.ingest(_doc("g.md", ["generation test document about ferrets"]))
    old = store.generation
    new = store.reindex()
    assert new != old and store.catalog.get_meta("generation") == new
    assert not (store.home / "dense" / old).exists()
    vec = store.embedder.encode(["ferrets"])[0]
    assert [h.record.doc_id for h in store.dense.search(vec, 1, ALL)] == ["test:g.md"]


def test_changed_model_files_are_detected_and_reindex_records_the_new_version(
    store_factory, caplog
):
    store = store_factory("models")
    built_with = store.catalog.get_meta("embedding_version")
    assert built_with == store.embedder.version
    store.catalog.set_meta("embedding_version", "files-of-another-model")
    store.close()
    with caplog.at_level("WARNING", logger="retrieval.store"):
        reopened = store_factory("models")
    assert "run `waypoint reindex`" in caplog.text
    reopened.reindex()
    assert reopened.catalog.get_meta("embedding_version") == built_with


def test_reader_never_sees_zero_or_duplicate_chunks_during_replace(store):
    store.ingest(_doc("live.md", ["version zero alpha", "version zero beta"]))
    flt = SearchFilter(acl_groups=None, doc_ids=("test:live.md",))
    seen: list[int] = []
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            hits = store.lexical.search("version", 10, flt)
            seen.append(len({h.id for h in hits}) if len(hits) == len({h.id for h in hits}) else -1)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for n in range(1, 8):
            store.ingest(_doc("live.md", [f"version {n} alpha", f"version {n} beta"]))
    finally:
        stop.set()
        t.join()
    assert seen and set(seen) == {2}


def test_fuzzy_lookup_matches_difflib_over_every_admitted_title(store):
    import difflib

    titles = ["Ledger service", "Ledger services", "Ledger", "Ledger Service Runbook", "Payouts"]
    docs = [_doc(f"d{i}.md", [f"page about {t}"], title=t) for i, t in enumerate(titles)]
    docs.append(_doc("twin.md", ["another page titled Ledger"], title="Ledger"))
    docs.append(_doc("hidden.md", ["hr only"], title="Ledger servic", acl=["hr"]))
    store.ingest([r for d in docs for r in d])
    eng = store.filter_for(["eng"])
    visible = sorted({t.casefold() for t, _ in store.titles(eng)})
    assert "ledger servic" not in visible  # the hidden near-miss is not a candidate
    for name in ["ledger servce", "Ledger", "ledger service", "Ledgr", "payout", "zzz"]:
        exact = {d for t, d in store.titles(eng) if t.casefold() == name.casefold()}
        want = difflib.get_close_matches(name.casefold(), visible, n=5, cutoff=0.8)
        got = [r.doc_id for r in store.lookup(name, eng, limit=5)]
        # exact titles first, then the fuzzy titles in difflib's order (an exact title
        # whose every document is already in the answer is not repeated)
        assert set(got[: len(exact)]) == exact
        fuzzy_titles = [
            next(t.casefold() for t, d in store.titles(eng) if d == doc)
            for doc in got[len(exact) :]
        ]
        assert list(dict.fromkeys(fuzzy_titles)) == [t for t in want if t != name.casefold()]
    # A new document changes the catalog: the next lookup sees its title.
    store.ingest(_doc("new.md", ["new page"], title="Ledger servicez"))
    assert "test:new.md" in [r.doc_id for r in store.lookup("ledger servicez", eng, limit=5)]


def test_reads_stay_off_the_event_loop_while_the_catalog_is_busy_or_stale(store):
    # retrieval.placement asks the store before running a read on the loop.
    store.ingest(_doc("a.md", ["alpha ledger"], title="Alpha"))
    assert store.inline_ok("corpus_size")
    assert not store.inline_ok("lookup")  # the documents view is built by the first lookup
    store.lookup("Alpha", ALL)
    assert store.inline_ok("lookup")
    store.ingest(_doc("b.md", ["beta ledger"], title="Beta"))
    assert not store.inline_ok("lookup")  # changed content: the next lookup rebuilds it
    with held_by_another_thread(store.catalog._lock):
        assert not store.inline_ok("corpus_size")  # a read would wait for the writer
    assert store.inline_ok("corpus_size")
