"""Connectors on small fixture exports: ids, offsets, heading paths, legs, gates, ACL,
failures. Fixtures live in tests/fixtures/connectors/."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import zipfile
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest

from retrieval.connectors import ConnectorSettings, detect_kind, load_path
from retrieval.connectors.base import LoadContext
from retrieval.connectors.files import FileItem, FilesConnector, html_to_text
from retrieval.connectors.found import FoundFiles
from retrieval.connectors.slack import (
    Distilled,
    SlackConnector,
    SlackThread,
    extract_systems,
)
from retrieval.connectors.tickets import TicketItem, TicketsConnector
from retrieval.records import Meta, Record, chunk_id
from retrieval.settings import RetrievalSettings
from retrieval.textstats import DocFreq, count_words

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "connectors"
WIKI = FIXTURES / "wiki"
SLACK = FIXTURES / "slack"
TICKETS = FIXTURES / "tickets.json"
PASSAGES = FIXTURES / "passages.jsonl"

REQUIRED_META = [
    Meta.KIND,
    Meta.TITLE,
    Meta.HEADING_PATH,
    Meta.CHAR_START,
    Meta.CHAR_END,
    Meta.CONTENT_HASH,
    Meta.SOURCE_VERSION,
    Meta.ACL,
    Meta.DOC_ID,
    Meta.CHUNK_INDEX,
    Meta.LEGS,
    Meta.ENTITIES,
    Meta.EMBED_TEXT,
]


def by_id(records: list[Record]) -> dict[str, Record]:
    return {r.id: r for r in records}


def by_doc(records: list[Record]) -> dict[str, list[Record]]:
    docs: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        docs[r.doc_id].append(r)
    return docs


def assert_waist(records: list[Record]) -> None:
    """Every record carries the well-known keys; chunk ids and indexes line up; all chunks
    of a document agree on hash/acl; offsets of one document never contradict each other."""
    assert records
    for doc_id, chunks in by_doc(records).items():
        assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
        assert {c.metadata[Meta.CONTENT_HASH] for c in chunks} == {
            chunks[0].metadata[Meta.CONTENT_HASH]
        }
        assert len({tuple(c.acl) for c in chunks}) == 1
        buffer: dict[int, str] = {}
        for c in chunks:
            assert c.id == chunk_id(doc_id, c.chunk_index)
            for key in REQUIRED_META:
                assert key in c.metadata, (c.id, key)
            start, end = c.metadata[Meta.CHAR_START], c.metadata[Meta.CHAR_END]
            assert end - start == len(c.text) and c.text.strip()
            for i, ch in enumerate(c.text):
                assert buffer.setdefault(start + i, ch) == ch, c.id
            assert c.timestamp.tzinfo is not None


def assert_offsets(records: list[Record], parent: str) -> None:
    for r in records:
        assert parent[r.metadata[Meta.CHAR_START] : r.metadata[Meta.CHAR_END]] == r.text


# -- files --


def test_wiki_folder_ids_titles_headings_and_offsets() -> None:
    result = load_path(WIKI)
    assert result.kind == "files" and result.source == "wiki"
    assert result.failures == []
    assert (str(WIKI / "diagram.svg"), "unsupported file type .svg") in result.skipped
    records = result.records
    assert_waist(records)
    docs = by_doc(records)
    assert set(docs) == {
        "wiki:teams/payments.md",
        "wiki:runbooks/deploy.md",
        "wiki:notes.txt",
        "wiki:guide.html",
    }  # the hidden .drafts folder is never read

    payments = docs["wiki:teams/payments.md"]
    assert_offsets(payments, (WIKI / "teams/payments.md").read_text())
    assert [c.metadata[Meta.HEADING_PATH] for c in payments] == [
        ["Payments service"],
        ["Payments service", "On-call"],
        ["Payments service", "On-call", "Escalation"],
        ["Payments service", "Dependencies"],
    ]
    first = payments[0]
    assert first.id == "wiki:teams/payments.md#0"
    assert first.text.startswith("# Payments service")  # front matter is never chunked
    assert first.title == "Payments service"
    assert first.acl == ["payments-team", "sre"]
    assert first.metadata[Meta.AUTHOR] == "Dana Ruiz"
    assert first.metadata[Meta.ENTITIES] == ["payments-api", "ledger-sync"]
    assert first.metadata["project"] == "checkout"
    assert first.metadata["owner_team"] == "payments"  # unknown front matter keys kept
    assert first.timestamp == datetime(2024, 3, 4, tzinfo=UTC)
    assert payments[2].embed_text.startswith("Payments service > On-call: ### Escalation")

    deploy = docs["wiki:runbooks/deploy.md"]
    assert_offsets(deploy, (WIKI / "runbooks/deploy.md").read_text())
    assert deploy[0].title == "Deploy runbook"  # setext h1
    assert deploy[0].acl == ["public"]
    assert all(
        "shell comment, not a heading" not in p
        for c in deploy
        for p in c.metadata[Meta.HEADING_PATH]
    )

    notes = docs["wiki:notes.txt"]
    assert notes[0].title == "notes" and notes[0].metadata[Meta.HEADING_PATH] == []
    mtime = datetime.fromtimestamp((WIKI / "notes.txt").stat().st_mtime, tz=UTC)
    assert notes[0].timestamp == mtime


def test_html_keeps_headings_and_drops_scripts() -> None:
    html = (WIKI / "guide.html").read_text()
    text, headings, title = html_to_text(html)
    assert title == "Search guide"
    assert [(h.level, h.title) for h in headings] == [
        (1, "Search guide"),
        (2, "Filters & scope"),
        (2, "Citations"),
    ]
    assert "secret" not in text and "color" not in text
    assert "Waypoint answers questions over the wiki, chat and tickets." in text
    records = by_doc(load_path(WIKI).records)["wiki:guide.html"]
    assert_offsets(records, text)
    assert records[1].metadata[Meta.HEADING_PATH] == ["Search guide", "Filters & scope"]
    assert "Projects are references, not copies." in records[1].text


def test_html_drops_navigation_however_a_generator_names_it() -> None:
    # DocBook's navheader/navfooter, a header div with no heading, a breadcrumb trail and a
    # menu that are nearly all links; a paragraph with a few links and a section's header
    # with its heading stay
    html = (
        "<html><body>"
        '<div class="navheader"><table><tr><th>19.4. Resource Consumption</th></tr>'
        '<tr><td><a href="a.html">Prev</a></td><td><a href="b.html">Up</a></td>'
        '<td>Chapter 19. Server Configuration</td><td><a href="c.html">Next</a></td></tr>'
        "</table></div>"
        '<div id="page-header"><p class="menu"><a href="m.html">Modules</a> | '
        '<a href="d.html">Directives</a> | <a href="f.html">FAQ</a></p>'
        "<p>Apache HTTP Server Version 2.4</p></div>"
        '<div id="path"><a href="/">Apache</a> &gt; <a href="/s">HTTP Server</a> &gt; '
        '<a href="/d">Documentation</a> &gt; <a href="/v">Version 2.4</a></div>'
        '<div class="section-header"><h2>Memory</h2></div>'
        '<p>The default is <a href="units.html">128 megabytes</a>, see '
        '<a href="kernel.html">kernel resources</a> and <a href="x.html">limits</a> '
        "for how to raise the limits of the operating system first.</p>"
        '<div class="navfooter"><a href="a.html">Prev</a> <a href="c.html">Next</a></div>'
        "</body></html>"
    )
    text, headings, _ = html_to_text(html)
    for furniture in ("Prev", "Resource Consumption", "Directives", "Version 2.4", "Apache >"):
        assert furniture not in text
    assert [h.title for h in headings] == ["Memory"]
    assert "The default is 128 megabytes, see kernel resources and limits" in text


def test_html_table_rows_stay_one_line_when_cells_hold_paragraphs() -> None:
    # Sphinx and DocBook wrap cell text in <p>: a row must still read as one line.
    html = (
        "<html><body><main><table><thead><tr><th><p>Level</p></th><th><p>Numeric value</p>"
        "</th></tr></thead><tbody><tr><td><p>WARNING</p></td><td><p>30</p></td></tr>"
        "<tr><td><p>INFO</p><p>(informational)</p></td><td><p>20</p></td></tr></tbody>"
        "</table><p>After the table.</p></main></body></html>"
    )
    text, _, _ = html_to_text(html)
    assert text.splitlines()[:3] == [
        "Level | Numeric value",
        "WARNING | 30",
        "INFO (informational) | 20",
    ]
    assert "\n\nAfter the table." in text


def test_load_path_acl_project_and_source_arguments(tmp_path: Path) -> None:
    result = load_path(WIKI / "notes.txt", source="office", acl=["staff"], project="ops")
    (record,) = result.records
    assert record.id == "office:notes.txt#0" and record.source == "office"
    assert record.acl == ["staff"] and record.metadata["project"] == "ops"
    # Front matter ACL wins over the load-time default.
    payments = load_path(WIKI, acl=["staff"]).records
    assert by_id(payments)["wiki:teams/payments.md#0"].acl == ["payments-team", "sre"]


def test_token_cap_splits_long_sections_and_keeps_paths() -> None:
    settings = RetrievalSettings(chunk_tokens=12, chunk_overlap_tokens=3)
    records = by_doc(load_path(WIKI, settings=settings).records)["wiki:teams/payments.md"]
    assert len(records) > 4
    assert all(count_words(r.text) <= 12 for r in records)
    assert_offsets(records, (WIKI / "teams/payments.md").read_text())
    on_call = [r for r in records if r.metadata[Meta.HEADING_PATH][-1] == "On-call"]
    assert len(on_call) >= 2


def test_bad_files_are_reported_and_the_rest_loaded(tmp_path: Path) -> None:
    root = tmp_path / "wiki"
    shutil.copytree(WIKI, root)
    (root / "binary.md").write_bytes(b"# Title\x00\x01\x02")
    (root / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (root / "big.md").write_text("# Big\n\n" + "word " * 3000)
    (root / "dangling.md").symlink_to(root / "does-not-exist.md")
    settings = RetrievalSettings(max_file_bytes=5000)
    result = load_path(root, settings=settings)
    reasons = {Path(where).name: reason for where, reason in result.failures}
    skipped = {Path(where).name: reason for where, reason in result.skipped}
    # An oversized file is deliberately left out (skipped, with the reason); a file that
    # should be text but holds binary content or is not UTF-8, or cannot be read, failed.
    assert skipped["big.md"].startswith("too large") and "big.md" not in reasons
    assert reasons["binary.md"] == "binary content (NUL bytes)"
    assert reasons["latin1.txt"].startswith("undecodable")
    assert reasons["dangling.md"].startswith("unreadable")
    assert {r.doc_id for r in result.records} >= {"wiki:teams/payments.md", "wiki:guide.html"}


def test_content_hash_is_stable_and_follows_text_and_acl(tmp_path: Path) -> None:
    doc = tmp_path / "docs"
    doc.mkdir()
    (doc / "a.md").write_text("# A\n\nOne.\n")
    first = load_path(doc).records[0].metadata[Meta.CONTENT_HASH]
    assert load_path(doc).records[0].metadata[Meta.CONTENT_HASH] == first
    assert load_path(doc, acl=["x"]).records[0].metadata[Meta.CONTENT_HASH] != first
    (doc / "a.md").write_text("# A\n\nTwo.\n")
    assert load_path(doc).records[0].metadata[Meta.CONTENT_HASH] != first


def test_front_matter_lists_and_yaml_items(tmp_path: Path) -> None:
    path = tmp_path / "x.md"
    path.write_text(
        "---\ntitle: 'Quoted: title'\nacl:\n  - eng\n  - sre\nentities: a, b\n---\nBody.\n"
    )
    connector = FilesConnector(LoadContext(source="s"))
    doc = connector.document(FileItem(path, tmp_path))
    assert doc is not None
    assert doc.title == "Quoted: title" and doc.acl == ["eng", "sre"]
    assert doc.entities == ["a", "b"]


# -- jsonl --


def test_jsonl_bad_line_reported_rest_loaded() -> None:
    result = load_path(PASSAGES)
    assert result.kind == "jsonl" and result.source == "passages"
    assert_waist(result.records)
    where = {w.rsplit(":", 1)[1]: reason for w, reason in result.failures}
    assert where["3"].startswith("line 3: invalid JSON")
    assert where["7"] == 'line 7: missing or empty "text"'
    assert result.skipped == [(f"{PASSAGES}:6", "duplicate id passages:p1")]
    records = by_id(result.records)
    p1 = records["passages:p1#0"]
    assert p1.title == "Ledger sync" and p1.metadata[Meta.AUTHOR] == "Dana Ruiz"
    assert p1.timestamp == datetime(2024, 2, 10, tzinfo=UTC)
    assert p1.embed_text == "Ledger sync: " + p1.text
    p2 = records["passages:p2#0"]
    assert p2.acl == ["hr"] and p2.metadata["team"] == "people"
    digest = hashlib.sha256(
        b"No id here\nA passage without an id gets a stable hash of its title and text."
    ).hexdigest()[:16]
    assert f"passages:{digest}#0" in records
    for r in result.records:
        assert r.metadata[Meta.CHAR_START] == 0 and r.legs == ["lexical", "dense"]


def test_jsonl_gz_and_beir_ids(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(json.dumps({"_id": "42", "title": "T", "text": "Body text."}) + "\n")
    result = load_path(path)
    assert result.source == "corpus"
    assert [r.id for r in result.records] == ["corpus:42#0"]


# -- slack --


@pytest.fixture(scope="module")
def slack_records() -> list[Record]:
    return load_path(SLACK).records


def test_slack_thread_records_legs_and_ids(slack_records: list[Record]) -> None:
    assert_waist(slack_records)
    thread = by_doc(slack_records)["slack:general/1709280000.000100"]
    kinds = [(r.metadata[Meta.KIND], r.legs) for r in thread]
    assert kinds == [
        ("thread", ["lexical", "dense"]),
        ("thread_raw", ["lexical"]),
        ("burst", ["lexical", "dense"]),
    ]
    distilled, raw, burst = thread
    assert distilled.id == "slack:general/1709280000.000100#0"
    lines = distilled.text.split("\n")
    assert [line.split(":", 1)[0] for line in lines] == [
        "Question",
        "Summary",
        "Resolution",
        "Systems",
    ]
    assert lines[0] == (
        "Question: Why is checkout returning 502s since this morning? @Bob Okafor any idea"
    )
    assert (
        lines[2] == "Resolution: Confirmed fixed: no 502s since the pool change, closing INC-2041."
    )
    assert distilled.embed_text == distilled.text
    # The raw thread: every message, mentions resolved, the later-day reply included.
    assert raw.text.splitlines()[0] == (
        "Alice Chen: Why is checkout returning 502s since this morning? @Bob Okafor any idea"
    )
    assert "Carol Diaz: +1" in raw.text and raw.text.endswith("closing INC-2041.")
    assert raw.metadata[Meta.CHAR_START] == len(distilled.text) + 2
    # The thread's time is its last message (the next day's confirmation).
    assert distilled.timestamp == datetime.fromtimestamp(1709366400.0001, tz=UTC)
    assert distilled.metadata[Meta.AUTHOR] == "Alice Chen"
    assert distilled.metadata["participants"] == ["Alice Chen", "Bob Okafor", "Carol Diaz"]


def test_slack_dense_burst_accepted_filler_rejected(slack_records: list[Record]) -> None:
    bursts = [r for r in slack_records if r.metadata[Meta.KIND] == "burst"]
    assert len(bursts) == 1
    (burst,) = bursts
    assert burst.metadata[Meta.AUTHOR] == "Bob Okafor"
    assert burst.text.startswith("Bob Okafor: Looking.") and "Bob Okafor: Mitigation" in burst.text
    assert burst.metadata["mean_idf"] >= burst.metadata["idf_threshold"]
    assert burst.embed_text.startswith("Why is checkout returning 502s since this morning? @Bob")
    # Nothing made of filler reaches the dense leg.
    dense_texts = " ".join(r.text for r in slack_records if "dense" in r.legs)
    for filler in ("thanks!", "+1", "lol ok", "sounds good to me"):
        assert filler not in dense_texts


def test_slack_filler_threads_are_lexical_only(slack_records: list[Record]) -> None:
    docs = by_doc(slack_records)
    for doc_id in ("slack:general/1709283600.000100", "slack:general/1709290000.000100"):
        assert [r.metadata[Meta.KIND] for r in docs[doc_id]] == ["thread_raw"]
        assert docs[doc_id][0].legs == ["lexical"]
    # The long chatty burst (> 200 chars) fails on IDF, not on length.
    connector = SlackConnector(LoadContext(source="slack"))
    threads = {t.thread_ts: t for t in connector.fetch(SLACK)}
    chatty = threads["1709290000.000100"].messages[:2]
    passed, info = connector.burst_gate([m.text for m in chatty], 0)
    assert not passed and sum(len(m.text) for m in chatty) >= 200
    assert info["mean_idf"] < info["idf_threshold"]


def test_reactions_lower_the_idf_threshold() -> None:
    connector = SlackConnector(LoadContext(source="slack"))
    threads = {t.thread_ts: t for t in connector.fetch(SLACK)}
    texts = [m.text for m in threads["1709280000.000100"].messages[1:3]]
    mean = connector.stats.mean_idf("\n".join(texts))
    strict = ConnectorSettings(burst_min_mean_idf=mean + 0.2, burst_reaction_bonus=0.1)
    connector.ctx.connector_settings = strict
    assert not connector.burst_gate(texts, reactions=0)[0]
    assert not connector.burst_gate(texts, reactions=1)[0]
    assert connector.burst_gate(texts, reactions=3)[0]
    # The bonus is capped: reactions cannot buy a way past a large gap.
    connector.ctx.connector_settings = ConnectorSettings(burst_min_mean_idf=mean + 1.0)
    assert not connector.burst_gate(texts, reactions=100)[0]


def test_slack_acl_private_channels_and_skips(slack_records: list[Record]) -> None:
    acl = {r.metadata["channel"]: r.acl for r in slack_records}
    assert acl == {
        "general": ["public"],
        "incidents": ["slack-incidents"],  # is_private: true
        "sre-private": ["sre"],  # groups.json entry with an explicit acl
    }
    result = load_path(SLACK)
    assert result.kind == "slack"
    assert [Path(w).name for w, _ in result.failures] == ["2024-03-03.json"]
    assert [Path(w).name for w, _ in result.skipped] == ["D0DIRECT"]


def test_slack_member_list_means_private_and_load_acl_for_public(tmp_path: Path) -> None:
    root = tmp_path / "export"
    shutil.copytree(SLACK, root)
    channels = json.loads((root / "channels.json").read_text())
    del channels[0]["is_private"]  # general: only a member list left -> private
    (root / "channels.json").write_text(json.dumps(channels))
    records = load_path(root, acl=["staff"]).records
    acl = {r.metadata["channel"]: r.acl for r in records}
    assert acl["general"] == ["slack-general"]
    channels[0]["is_private"] = False
    (root / "channels.json").write_text(json.dumps(channels))
    acl = {r.metadata["channel"]: r.acl for r in load_path(root, acl=["staff"]).records}
    assert acl["general"] == ["staff"] and acl["incidents"] == ["slack-incidents"]


def test_systems_extraction() -> None:
    systems = extract_systems(
        "pgbouncer on db-3.prod.internal hits `max_client_conn=100`, ERR-5023 from "
        "payments-api; see https://grafana.example.com/d/x and PaymentGateway follow-up"
    )
    assert systems == [
        "db-3.prod.internal",
        "max_client_conn=100",
        "ERR-5023",
        "payments-api",
        "grafana.example.com",
        "PaymentGateway",
    ]


def test_distiller_is_pluggable() -> None:
    class Fixed:
        def distill(self, thread: SlackThread, stats: DocFreq) -> Distilled:
            return Distilled(f"Q{len(thread.messages)}", "S", "R", ["sys-a"])

    records = load_path(SLACK, distiller=Fixed()).records
    distilled = by_id(records)["slack:general/1709280000.000100#0"]
    assert distilled.text == "Question: Q7\nSummary: S\nResolution: R\nSystems: sys-a"
    assert distilled.metadata[Meta.ENTITIES] == ["sys-a"]


# -- tickets --


def test_tickets_records_entities_and_failures() -> None:
    result = load_path(TICKETS)
    assert result.kind == "tickets" and result.source == "tickets"
    assert result.failures == [(f"{TICKETS}[2]", 'issue without a "key"')]
    assert_waist(result.records)
    docs = by_doc(result.records)
    assert set(docs) == {"tickets:PAY-101", "tickets:OPS-7", "tickets:PAY-102"}
    (pay,) = docs["tickets:PAY-101"]
    assert pay.id == "tickets:PAY-101#0"
    assert pay.title == "PAY-101: Checkout returns 502 during ledger reconcile"
    assert pay.metadata[Meta.ENTITIES] == [
        "payments-api",
        "ledger-sync",
        "incident",
        "INC-2041",
        "Bob Okafor",
    ]
    assert pay.metadata[Meta.URL] == "https://jira.example.com/browse/PAY-101"
    assert pay.metadata[Meta.AUTHOR] == "Alice Chen"
    assert pay.metadata["status"] == "Done"
    assert pay.timestamp == datetime(2024, 3, 2, 9, tzinfo=UTC)
    assert "Bob Okafor (2024-03-01): Raised default_pool_size to 40" in pay.text
    (ops,) = docs["tickets:OPS-7"]
    assert ops.metadata["status"] == "In Progress"  # plain string status
    assert ops.timestamp == datetime(2024, 2, 20, 10, tzinfo=UTC)  # created when no updated


def test_long_ticket_is_chunked_with_offsets() -> None:
    issues = json.loads(TICKETS.read_text())
    connector = TicketsConnector(LoadContext(source="tickets"))
    doc = connector.document(TicketItem(TICKETS, 3, issues[3]))
    records = by_doc(load_path(TICKETS).records)["tickets:PAY-102"]
    assert len(records) >= 2
    assert_offsets(records, doc.text)
    assert all(count_words(r.text) <= 256 for r in records)
    assert records[-1].metadata[Meta.HEADING_PATH][-1] == "Comments"


# -- detection and arguments --


def test_detect_kind_and_bad_arguments(tmp_path: Path) -> None:
    assert detect_kind(SLACK) == "slack"
    assert detect_kind(TICKETS) == "tickets"
    assert detect_kind(PASSAGES) == "jsonl"
    assert detect_kind(WIKI) == "files"
    other = tmp_path / "config.json"
    other.write_text('{"not": "tickets"}')
    result = load_path(other)
    assert result.records == [] and "not a ticket export" in result.failures[0][1]
    with pytest.raises(FileNotFoundError):
        load_path(tmp_path / "missing")
    with pytest.raises(ValueError, match="invalid source"):
        load_path(WIKI, source="bad:name")
    with pytest.raises(ValueError, match="acl"):
        load_path(WIKI, acl=[])


def test_ids_are_stable_across_loads() -> None:
    for path in (WIKI, PASSAGES, SLACK, TICKETS):
        assert [r.id for r in load_path(path).records] == [r.id for r in load_path(path).records]


def test_folder_dispatches_export_files_to_their_connectors(tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    (root / "exports").mkdir(parents=True)
    shutil.copy(TICKETS, root / "exports" / "tickets.json")
    shutil.copy(PASSAGES, root / "passages.jsonl")
    (root / "settings.json").write_text('{"theme": "dark"}')
    (root / "page.md").write_text("# Page\n\nText.\n")
    result = load_path(root, source="mixed")
    docs = set(by_doc(result.records))
    assert {"mixed:page.md", "mixed:PAY-101", "mixed:p1"} <= docs
    assert (
        str(root / "settings.json"),
        "unsupported JSON: not a ticket export (list of {key, fields})",
    ) in result.skipped
    assert any(w.endswith("passages.jsonl:3") for w, _ in result.failures)


def test_deterministic_question_and_resolution_rules() -> None:
    from retrieval.connectors.slack import Channel, DeterministicDistiller, SlackMessage

    channel = Channel("eng-help", False, ["public"])
    long_intro = "We migrated the reconcile job to the new scheduler last week. " * 4
    thread = SlackThread(
        channel,
        "1.0",
        [
            SlackMessage("1.0", "Ann", long_intro + "Why does it now start twice? Logs attached."),
            SlackMessage("2.0", "Ben", "The cron entry in cronhound is still enabled."),
            SlackMessage("3.0", "Ann", "thanks!"),
        ],
    )
    distilled = DeterministicDistiller().distill(thread, DocFreq())
    assert distilled.question == "Why does it now start twice?"
    # No fix-like wording: the last substantive reply by someone else than the asker.
    assert distilled.resolution == "The cron entry in cronhound is still enabled."
    short = SlackThread(channel, "1.0", [SlackMessage("1.0", "Ann", "Build is red. Anyone?")])
    assert DeterministicDistiller().distill(short, DocFreq()).question == "Build is red. Anyone?"


def test_a_folder_load_tells_removed_files_from_unread_ones(tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    root.mkdir()
    (root / "page.md").write_text("# Page\n\nText.\n")
    (root / "big.md").write_text("# Big\n\n" + "word " * 400)  # over the size cap: skipped
    (root / "bad.md").write_bytes(b"\x00binary")  # fails
    (root / "broken.zip").write_bytes(b"not a zip")  # refused as a whole
    with zipfile.ZipFile(root / "pack.zip", "w") as zf:
        zf.writestr("x.md", "# X\n\nText.\n")
    shutil.copy(PASSAGES, root / "passages.jsonl")  # has bad lines: exports incomplete
    result = load_path(root, source="s", settings=RetrievalSettings(max_file_bytes=1000))
    assert result.found is not None and not result.found.exports_complete
    emitted = {r.doc_id for r in result.records}
    kept = ["s:page.md", "s:big.md", "s:bad.md", "s:pack.zip/x.md", "s:broken.zip/z.md"]
    gone = ["s:gone.md", "s:book.xlsx/Q3", "s:pack.zip/y.md"]
    known = [*kept, *gone, "s:p1", "s:p-old"]
    assert result.found.removed(known, emitted) == gone
    assert result.found.removed(["s:page.md/Old sheet"], emitted) == ["s:page.md/Old sheet"]
    # Exports that loaded whole stand for their documents too.
    assert FoundFiles(set()).removed(["s:a.md", "s:p-old"], {"s:a.md"}) == ["s:p-old"]
    # A zip loaded itself: its members; unreadable, every document stays.
    packed = load_path(root / "pack.zip", source="s")
    assert packed.found is not None and packed.found.removed(["s:y.md"], set()) == ["s:y.md"]
    broken = load_path(root / "broken.zip", source="s")
    assert broken.found is not None and broken.found.removed(["s:z.md"], set()) == []
    # One file stands for itself only.
    assert load_path(root / "page.md", source="s").found is None


def test_an_html_page_is_named_by_its_title_when_its_h1s_are_sections(tmp_path: Path) -> None:
    pages = {
        # numbered level-1 headings are the page's sections: its <title> names it
        "rowvalue.html": "<title>Row Values</title><h1>1. Definitions</h1><p>A row value.</p>"
        "<h1>2. Syntax</h1><p>Two or more.</p>",
        # one h1, and a <title> that adds the site's name: the h1 names it
        "reprlib.html": "<title>reprlib — Alternate repr() — Python 3.11 docs</title>"
        "<h1>reprlib — Alternate repr()</h1><p>Limits.</p>",
        # a numbered h1 the <title> opens with names the page
        "datamodel.html": "<title>3. Data model — Python 3.11 docs</title>"
        "<h1>3. Data model</h1><p>Objects.</p><h1>4. Other</h1><p>More.</p>",
    }
    for name, body in pages.items():
        (tmp_path / name).write_text(
            f"<html><head>{body.split('</title>')[0]}</title></head>"
            f"<body>{body.split('</title>')[1]}</body></html>"
        )
    titles = {r.metadata["doc_id"]: r.title for r in load_path(tmp_path, source="d").records}
    assert titles == {
        "d:rowvalue.html": "Row Values",
        "d:reprlib.html": "reprlib — Alternate repr()",
        "d:datamodel.html": "3. Data model",
    }
