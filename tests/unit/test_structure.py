"""A document's names and links (retrieval.structure): extraction from the records a
connector emits, and their resolution to document ids."""

from __future__ import annotations

from pathlib import Path

from retrieval.connectors import load_path
from retrieval.records import Meta, Record
from retrieval.structure import (
    DOC,
    ENTITY,
    HEADING,
    IDENT,
    IDENT_IN,
    MENTION,
    PATH,
    TITLE,
    URL,
    StructureIndex,
    code_names,
    document_structure,
    identifiers,
)
from tests.conftest import make_record


def _docs(records: list[Record]) -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {}
    for r in sorted(records, key=lambda r: r.chunk_index):
        out.setdefault(r.doc_id, []).append(r)
    return out


def _index(docs: dict[str, list[Record]]) -> StructureIndex:
    names, links = [], []
    for doc_id, recs in docs.items():
        s = document_structure(recs)
        names += [(doc_id, n, k) for n, k in s.names]
        links += [(doc_id, t, k) for t, k in s.links]
    return StructureIndex(docs, names, links)


def test_identifiers_are_keys_snake_dotted_and_backticked_code() -> None:
    text = (
        "OPS-142 saw ERR-4012 after shared_buffers and LEDGER_STRICT_IDEMPOTENCY changed; "
        "json.dumps() and `ledger-pg` too. Not e.g. this, nor 3.14 or well-known words."
    )
    found = identifiers(text)
    assert found[:6] == [
        "OPS-142",
        "ERR-4012",
        "shared_buffers",
        "LEDGER_STRICT_IDEMPOTENCY",
        "json.dumps",
        "ledger-pg",
    ]
    assert "well-known" not in found and "e.g" not in found


def test_markdown_and_html_links_resolve_to_document_ids(tmp_path: Path) -> None:
    root = tmp_path / "wiki"
    (root / "teams").mkdir(parents=True)
    (root / "services").mkdir()
    (root / "services" / "ledger.md").write_text(
        "# ledger\n\nOwned by the [payments team](../teams/payments.md#lead). "
        "See [the runbook](runbook.md) and [docs](https://example.com/ledger).\n"
    )
    (root / "teams" / "payments.md").write_text("# Payments team\n\nLead: Ana Ruiz.\n")
    (root / "teams" / "index.html").write_text(
        "<html><body><main><h1>Teams</h1><p><a href='payments.md?x=1#top'>payments</a> "
        "and <a href='#self'>this page</a> and <a href='../services/ledger.md'>ledger</a>"
        "</p></main></body></html>"
    )
    result = load_path(root, source="wiki")
    docs = _docs(result.records)
    ledger = document_structure(docs["wiki:services/ledger.md"])
    # Relative paths resolved against the page, fragments dropped, URLs kept as written.
    assert ("wiki:teams/payments.md", DOC) in ledger.links
    assert ("wiki:services/runbook.md", DOC) in ledger.links
    assert ("https://example.com/ledger", URL) in ledger.links
    index = _index(docs)
    assert [x.doc_id for x in index.outgoing("wiki:services/ledger.md")] == [
        "wiki:teams/payments.md"
    ]
    assert [x.doc_id for x in index.outgoing("wiki:teams/index.html")] == [
        "wiki:teams/payments.md",
        "wiki:services/ledger.md",
    ]
    assert {x.doc_id for x in index.incoming("wiki:teams/payments.md")} == {
        "wiki:services/ledger.md",
        "wiki:teams/index.html",
    }
    # The runbook was never written: reported, not fatal.
    assert index.broken(docs) == [("wiki:services/ledger.md", "services/runbook.md")]


def test_names_defined_by_a_document_and_identifiers_it_only_mentions() -> None:
    page = [
        make_record(
            "services/ledger.md",
            "# ledger-service\n\n## Error codes\n\n- ERR-4012: idempotency key reused\n"
            "| pg_dump | nightly |\n\nThe OPS-142 spike; see config/ledger.yaml.",
            source="wiki",
            title="ledger-service",
            entities=["Payments team"],
            author="Luis Ferreira",
            heading_path=["ledger-service", "Error codes"],
        )
    ]
    ticket = [
        make_record(
            "OPS-142",
            "ledger-service returned a burst of ERR-4012 errors.",
            source="tickets",
            title="Duplicate payouts with ERR-4012 spike",
            assignee="Luis Ferreira",
        )
    ]
    s = document_structure(page)
    assert {("ledger-service", TITLE), ("error codes", HEADING)} <= set(s.names)
    assert {("payments team", ENTITY), ("luis ferreira", ENTITY)} <= set(s.names)
    assert {("err-4012", IDENT), ("pg_dump", IDENT)} <= set(s.names)
    assert ("ops-142", MENTION) in s.links and ("config/ledger.yaml", PATH) in s.links
    t = document_structure(ticket)
    assert ("ops-142", IDENT) in t.names  # its own key (the native id)
    assert ("err-4012", IDENT_IN) in t.names  # named in its title: what it is about
    assert ("err-4012", MENTION) in t.links
    index = _index({"wiki:services/ledger.md": page, "tickets:OPS-142": ticket})
    # The definer first, then a page that is about it.
    assert index.named("ERR-4012") == ["wiki:services/ledger.md", "tickets:OPS-142"]
    assert [x.doc_id for x in index.outgoing("tickets:OPS-142")] == ["wiki:services/ledger.md"]
    assert [x.doc_id for x in index.outgoing("wiki:services/ledger.md")] == ["tickets:OPS-142"]


def test_a_definition_line_needs_a_separator() -> None:
    recs = [make_record("p", "ERR-9, which paged us.\nERR-10 \u2014 disk full\n", title="P")]
    names = set(document_structure(recs).names)
    assert ("err-10", IDENT) in names
    assert ("err-9", IDENT) not in names


def test_an_api_reference_defines_classes_named_in_camel_case() -> None:
    text = (
        "class asyncio.TaskGroup\nAn asynchronous context manager holding a group of tasks.\n"
        "exception asyncio.CancelledError\nThe operation has been cancelled.\n"
        "A class is a template; the class of things.\n"
    )
    names = set(document_structure([make_record("asyncio-task", text, title="Tasks")]).names)
    assert {("asyncio.taskgroup", IDENT), ("asyncio.cancellederror", IDENT)} <= names
    assert not {n for n, kind in names if kind == IDENT and n.startswith(("is", "of"))}
    # two sentences run together are no code; a CamelCase part is
    assert identifiers("The tour ended.The album sold. See http.HTTPStatus.") == ["http.HTTPStatus"]


def test_a_c_declaration_defines_its_function_and_a_repl_call_defines_nothing() -> None:
    text = (
        "int sqlite3_snapshot_get(\n  sqlite3 *db,\n);\n"
        "const char *sqlite3_libversion(void);\n"
        "sqlite3_int64 sqlite3_last_insert_rowid(sqlite3*);\n"
        "Call sqlite3_open_v2( first, then the_other_fn(x).\n"
        ">>> json.dumps([1, 2])\n"
        "... json.loads(text)\n"
    )
    names = {n for n, kind in document_structure([make_record("c", text)]).names if kind == IDENT}
    assert {"sqlite3_snapshot_get", "sqlite3_libversion", "sqlite3_last_insert_rowid"} <= names
    assert not names & {"sqlite3_open_v2", "the_other_fn", "json.dumps", "json.loads"}


def test_a_class_member_written_without_its_module_is_code() -> None:
    text = "Repr.maxstring\n\nLimits the characters of a string's representation.\n"
    names = set(document_structure([make_record("reprlib", text, title="reprlib")]).names)
    assert ("repr.maxstring", IDENT) in names
    assert identifiers("Call Lock.acquire(blocking=True) first.") == ["Lock.acquire"]
    assert code_names("which python version added pathlib's Path.walk()?") == ["Path.walk"]
    # a sentence run into a capitalised word, or an abbreviation, is no member
    assert identifiers("The tour ended.The U.S. Navy in St. Louis") == []
    # a contents page listing the chapter's entries defines them too; the entry's own page
    # is the more specific
    contents = "Repr Objects\nRepr.maxlevel\nRepr.maxdict\nRepr.maxlist\nRepr.maxstring\n"
    index = _index(
        {
            "docs:datatypes": [make_record("datatypes", contents, title="Data Types")],
            "docs:reprlib": [make_record("reprlib", text, title="reprlib")],
        }
    )
    assert index.qualified("maxstring") == ["docs:reprlib", "docs:datatypes"]


def test_a_code_name_is_found_by_its_unqualified_name() -> None:
    page = [make_record("asyncio-task", "class asyncio.TaskGroup\nHolds tasks.", title="Tasks")]
    other = [make_record("glossary", "A task group holds tasks.", title="Glossary")]
    index = _index({"docs:asyncio-task": page, "docs:glossary": other})
    assert index.qualified("TaskGroup") == ["docs:asyncio-task"]
    assert index.qualified("Holds") == []
    # a document's own file name is no qualified code name: "html" finds no page
    files = _index({"site:intro.html": [make_record("intro.html", "Hello.", source="site")]})
    assert files.qualified("html") == []


def test_a_question_names_code_in_camel_case_or_upper_case() -> None:
    assert code_names("when did asyncio get TaskGroup?") == ["TaskGroup"]
    assert code_names("since which version does HTTPStatus have 418?") == ["HTTPStatus"]
    assert code_names("what does PYTHONSAFEPATH do?") == ["PYTHONSAFEPATH"]
    assert code_names("default of dirs_exist_ok in shutil.copytree") == [
        "dirs_exist_ok",
        "shutil.copytree",
    ]
    # a capitalised word or a short acronym is no code name
    assert code_names("Which film came out first, Tron or Up?") == []
    assert code_names("Was the NASA probe launched first?") == []


def test_links_in_chunk_metadata_only() -> None:
    assert Meta.LINKS == "links"  # what the keyword below sets
    rec = make_record("a.md", "text", source="w", links=["b.md", "mailto:x@y.z"])
    s = document_structure([rec])
    assert ("w:b.md", DOC) in s.links and ("mailto:x@y.z", URL) in s.links
