"""Names and links kept with each document in the catalog: replaced with the document,
deleted with it, rebuilt for a catalog from before them, and read through the caller's ACL
(lookup_entity and get_links)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from retrieval.records import Meta
from tests.conftest import make_record
from tools.catalog import LinksArgs, LookupArgs, get_links, lookup_entity
from tools.context import ToolContext

pytestmark = pytest.mark.integration


def _page(doc: str, text: str, acl: list[str] | None = None, **md: Any) -> Any:
    return make_record(doc, text, source="wiki", title=doc.split("/")[-1], acl=acl, **md)


def _ids(records: list[Any]) -> list[str]:
    return [r.doc_id for r in records]


def test_identifier_index_is_added_replaced_and_deleted_with_the_document(
    store_factory: Callable[..., Any],
) -> None:
    store = store_factory()
    flt = store.filter_for(None)
    store.ingest([_page("errors.md", "- ERR-4012: key reused\n")])
    assert _ids(store.lookup("err-4012", flt, 3)) == ["wiki:errors.md"]
    # Replaced: the new text defines another code; the old one is gone with the old text.
    store.ingest([_page("errors.md", "- ERR-5000: disk full\n")])
    assert _ids(store.lookup("ERR-4012", flt, 3)) == []
    assert _ids(store.lookup("ERR-5000", flt, 3)) == ["wiki:errors.md"]
    store.delete_document("wiki:errors.md")
    assert store.lookup("ERR-5000", flt, 3) == []
    assert store.catalog.structure() == ([], [], [])


def test_of_several_pages_defining_a_name_its_own_entry_comes_first(
    store_factory: Callable[..., Any],
) -> None:
    # A function index defines every name it lists; the interface's own page one.
    listing = "\n".join(f"sqlite3_fn{i}() | interface {i}" for i in range(40))
    store = store_factory()
    flt = store.filter_for(None)
    store.ingest(
        [
            _page("funclist.md", listing + "\nsqlite3_snapshot_get() | snapshots\n"),
            _page(
                "snapshot_get.md",
                "int sqlite3_snapshot_get(\n  sqlite3 *db\n);\n\n"
                "Only available when compiled with SQLITE_ENABLE_SNAPSHOT.",
            ),
        ]
    )
    assert _ids(store.lookup("sqlite3_snapshot_get", flt, 3)) == [
        "wiki:snapshot_get.md",
        "wiki:funclist.md",
    ]


def test_a_definition_comes_before_a_title_naming_it_and_mentions(
    store_factory: Callable[..., Any],
) -> None:
    store = store_factory()
    flt = store.filter_for(None)
    store.ingest(
        [
            _page("ticket.md", "We saw ERR-4012 again."),
            make_record("review.md", "What went wrong.", source="wiki", title="Review of ERR-4012"),
            _page("codes.md", "| ERR-4012 | key reused |"),
        ]
    )
    assert _ids(store.lookup("ERR-4012", flt, 3)) == [
        "wiki:codes.md",  # defines it
        "wiki:review.md",  # about it (in its title)
        "wiki:ticket.md",  # mentions it
    ]


def test_a_class_is_found_by_its_unqualified_name_within_the_callers_acl(
    store_factory: Callable[..., Any],
) -> None:
    store = store_factory()
    store.ingest(
        [
            # three sections: an opening, the definition, and one sharing more words
            # with the question than the definition does
            _page("asyncio-task.md", "Coroutines and tasks."),
            make_record(
                "asyncio-task.md",
                "class asyncio.TaskGroup\nHolds a group of tasks.\nNew in version 3.11.",
                source="wiki",
                index=1,
                title="asyncio-task.md",
            ),
            make_record(
                "asyncio-task.md",
                "When asyncio runs tasks, you get groups of them done with gather().",
                source="wiki",
                index=2,
                title="asyncio-task.md",
            ),
            _page("internal.md", "class ledger.PayoutBatch\nInternal.\n", acl=["finance"]),
        ]
    )
    eng = store.filter_for(["eng"])
    assert _ids(store.lookup("TaskGroup", eng, 3)) == ["wiki:asyncio-task.md"]
    # the lookup tool brings the section that defines it, not one that matches the words
    got = asyncio.run(
        lookup_entity(
            ToolContext(store=store, flt=eng),
            LookupArgs(name="TaskGroup", limit=1, query="when did asyncio get task groups?"),
        )
    )
    assert "class asyncio.TaskGroup" in got.evidence[0].text
    assert _ids(store.lookup("PayoutBatch", eng, 3)) == []
    finance = store.filter_for(["finance"])
    assert _ids(store.lookup("PayoutBatch", finance, 3)) == ["wiki:internal.md"]


def test_broken_links_are_reported_not_fatal(store_factory: Callable[..., Any]) -> None:
    store = store_factory()
    report = store.ingest(
        [
            _page("a.md", "see b and gone", **{Meta.LINKS: ["b.md", "gone.md"]}),
            _page("b.md", "the b page"),
        ]
    )
    assert report.added == 2
    assert report.broken_links == [("wiki:a.md", "gone.md")]


def test_lookups_and_links_are_acl_filtered(store_factory: Callable[..., Any]) -> None:
    store = store_factory()
    store.ingest(
        [
            _page("public.md", "Caused by ERR-77; see the secret page.", **{Meta.LINKS: ["hr.md"]}),
            _page("hr.md", "- ERR-77: payroll export failed\n", acl=["hr"]),
        ]
    )
    eng = ToolContext(store=store, flt=store.filter_for(["eng"]))
    hr = ToolContext(store=store, flt=store.filter_for(["hr"]))

    async def links(ctx: ToolContext, doc: str) -> Any:
        return await get_links(ctx, LinksArgs(doc=doc))

    async def lookup(ctx: ToolContext, name: str) -> Any:
        return await lookup_entity(ctx, LookupArgs(name=name))

    out = asyncio.run(links(eng, "wiki:public.md"))
    # A link to a page the caller cannot read says nothing about that page.
    assert out.evidence == [] and out.detail == {"out": [], "in": []}
    # The definer is hidden: only the visible page that mentions the code is found.
    assert {e.doc_id for e in asyncio.run(lookup(eng, "ERR-77")).evidence} == {"wiki:public.md"}
    # Nor the other way: a hidden page's links are not listed.
    assert asyncio.run(links(eng, "wiki:hr.md")).detail == {"out": [], "in": []}
    seen = asyncio.run(links(hr, "wiki:public.md"))
    assert [e.doc_id for e in seen.evidence] == ["wiki:hr.md"]
    assert {d["doc_id"] for d in seen.detail["out"]} == {"wiki:hr.md"}
    back = asyncio.run(links(hr, "wiki:hr.md"))
    assert {d["doc_id"] for d in back.detail["in"]} == {"wiki:public.md"}
    assert _ids(store.lookup("ERR-77", hr.flt, 1)) == ["wiki:hr.md"]
    # What the policy reads to skip pages that link nowhere the caller can read.
    assert store.linking_documents(eng.flt) == frozenset()
    assert store.linking_documents(hr.flt) == {"wiki:public.md"}


def test_a_catalog_from_before_the_index_is_rebuilt_on_open(
    store_factory: Callable[..., Any],
) -> None:
    store = store_factory("old")
    store.ingest([_page("codes.md", "- ERR-1: boom\n")])
    path = store.catalog.path
    store.close()
    with sqlite3.connect(path) as conn:  # as a catalog written before the tables existed
        conn.execute("DROP TABLE doc_names")
        conn.execute("DROP TABLE doc_links")
        conn.execute("DELETE FROM meta WHERE key='structure_version'")
    reopened = store_factory("old")
    assert _ids(reopened.lookup("ERR-1", reopened.filter_for(None), 1)) == ["wiki:codes.md"]
