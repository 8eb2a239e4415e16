"""PDF, Office, spreadsheet, HTML and zip documents through the files connector, on files
the tests make themselves (tests/document_files.py): page numbers, slide and sheet
locators, heading paths, exact offsets, links, and what is refused or skipped."""

from __future__ import annotations

import io
import zipfile
from collections import defaultdict
from pathlib import Path

import pytest
from document_files import (
    BOILERPLATE_WORDS,
    CONFLUENCE_PAGE,
    PORTAL_PAGE,
    REPORT_PAGES,
    pdf_bytes,
    write_docx,
    write_pptx,
    write_report_pdf,
    write_xlsx,
    zip_bytes,
)

from retrieval.connectors import ConnectorSettings, default_source, load_path
from retrieval.connectors.archives import unsafe_member
from retrieval.connectors.base import LoadContext
from retrieval.connectors.files import FileItem, FilesConnector, parse_front_matter
from retrieval.connectors.html import html_page, resolve_link
from retrieval.records import Meta, Record, chunk_id
from retrieval.search_models import locator_for
from retrieval.settings import RetrievalSettings


def by_doc(records: list[Record]) -> dict[str, list[Record]]:
    docs: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        docs[r.doc_id].append(r)
    return docs


def parent_texts(folder: Path, source: str) -> dict[str, str]:
    """Each document's parent text, as the connector extracts it."""
    connector = FilesConnector(LoadContext(source=source))
    texts: dict[str, str] = {}
    for item in connector.fetch(folder):
        for doc in connector.documents(item):
            texts[doc.doc_id] = doc.text
    return texts


def assert_slices(records: list[Record], texts: dict[str, str]) -> None:
    """The exact-offset rule: every chunk is a slice of its document's extracted text."""
    for doc_id, chunks in by_doc(records).items():
        assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
        for c in chunks:
            assert c.id == chunk_id(doc_id, c.chunk_index)
            start, end = c.metadata[Meta.CHAR_START], c.metadata[Meta.CHAR_END]
            assert texts[doc_id][start:end] == c.text and c.text.strip(), c.id


# -- PDF --


def test_pdf_pages_outline_headings_and_a_scanned_page(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    write_report_pdf(folder / "q1.pdf")
    result = load_path(folder)
    assert result.failures == []
    assert (f"{folder / 'q1.pdf'} p. 2", "no text layer (a scanned page?)") in result.skipped
    chunks = by_doc(result.records)["reports:q1.pdf"]
    assert_slices(result.records, parent_texts(folder, "reports"))
    assert chunks[0].title == "Quarterly report"  # the PDF's own title
    assert [(c.metadata[Meta.PAGE], c.metadata[Meta.HEADING_PATH]) for c in chunks] == [
        (1, ["Introduction"]),
        (3, ["Introduction", "Scope"]),
        (4, ["Results"]),
    ]
    assert "Settlement latency fell" in chunks[2].text
    assert chunks[0].metadata["pages"] == 4
    locator = locator_for(chunks[2])
    assert (locator.page, locator.label) == (4, "q1.pdf p. 4")
    assert locator.heading_path == ["Results"]


def test_pdf_chunks_never_cross_pages(tmp_path: Path) -> None:
    words = " ".join(f"w{i}" for i in range(40))
    pages = [[f"Page one {words}", words], [f"Page two {words}"], [f"Page three {words}"]]
    path = tmp_path / "long.pdf"
    path.write_bytes(pdf_bytes(pages))
    settings = RetrievalSettings(chunk_tokens=30, chunk_overlap_tokens=5)
    records = load_path(path, settings=settings).records
    assert len(records) > 3
    texts = parent_texts(path, "long")
    assert_slices(records, texts)
    page_text = texts["long:long.pdf"].split("\n\n")
    for r in records:
        assert r.text in page_text[r.metadata[Meta.PAGE] - 1]
    assert {r.metadata[Meta.PAGE] for r in records} == {1, 2, 3}
    assert records[0].title == "long" and records[0].metadata[Meta.HEADING_PATH] == []


def test_pdf_without_outline_takes_headings_from_larger_fonts(tmp_path: Path) -> None:
    pages: list[list[str | tuple[str, int]]] = [
        [("Migration guide", 20), "Read this before the ledger cutover.", ("Preparation", 15)],
        ["Freeze deploys a day before.", ("Cutover", 15), "Switch the EU region first."],
    ]
    path = tmp_path / "guide.pdf"
    path.write_bytes(pdf_bytes(pages))
    records = load_path(path).records
    assert_slices(records, parent_texts(path, "guide"))
    # "Preparation" ends page 1 with no body there: it stays in page 1's last chunk, and
    # its section goes on over page 2.
    assert [(r.metadata[Meta.PAGE], r.metadata[Meta.HEADING_PATH]) for r in records] == [
        (1, ["Migration guide"]),
        (2, ["Migration guide", "Preparation"]),
        (2, ["Migration guide", "Cutover"]),
    ]
    assert records[0].text.endswith("Preparation")
    assert records[0].title == "Migration guide"  # the first h1 when the PDF has no title
    assert records[2].text == "Cutover\nSwitch the EU region first."


def test_corrupt_pdf_fails_alone_and_the_rest_is_loaded(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n<< /Type /Cat")
    (folder / "truncated.pdf").write_bytes(pdf_bytes(REPORT_PAGES)[:300])
    (folder / "fake.docx").write_bytes(b"not a zip at all")
    write_report_pdf(folder / "good.pdf")
    (folder / "notes.md").write_text("# Notes\n\nThe rest is ingested.\n")
    result = load_path(folder)
    failed = {Path(where).name: reason for where, reason in result.failures}
    assert set(failed) >= {"broken.pdf", "fake.docx"}
    assert all(reason.startswith("could not convert") for reason in failed.values())
    assert {"docs:good.pdf", "docs:notes.md"} <= {r.doc_id for r in result.records}


def test_a_pdf_without_any_text_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(pdf_bytes([[], []]))
    result = load_path(path)
    assert result.records == [] and result.failures == []
    reasons = [reason for _, reason in result.skipped]
    assert reasons.count("no text layer (a scanned page?)") == 2
    assert (str(path), "no extractable text") in result.skipped


# -- DOCX / PPTX --


def test_docx_headings_title_tables_and_author(tmp_path: Path) -> None:
    folder = tmp_path / "handbook"
    folder.mkdir()
    write_docx(folder / "payments.docx")
    result = load_path(folder)
    assert result.failures == []
    chunks = by_doc(result.records)["handbook:payments.docx"]
    assert_slices(result.records, parent_texts(folder, "handbook"))
    assert chunks[0].title == "Payments handbook"
    assert chunks[0].metadata[Meta.AUTHOR] == "Dana Ruiz"
    paths = [c.metadata[Meta.HEADING_PATH] for c in chunks]
    assert paths == [["On-call"], ["On-call", "Escalation"]]
    assert "ledger-sync | Payments" in chunks[1].text  # table rows, cells joined
    assert chunks[1].embed_text.startswith("Payments handbook > On-call: Escalation")


def test_pptx_slide_titles_are_the_heading_path(tmp_path: Path) -> None:
    path = write_pptx(tmp_path / "plan.pptx")
    result = load_path(path, source="decks")
    chunks = result.records
    assert_slices(chunks, parent_texts(path, "decks"))
    assert [c.id for c in chunks] == ["decks:plan.pptx#0", "decks:plan.pptx#1"]
    assert [c.metadata[Meta.HEADING_PATH] for c in chunks] == [["Roadmap 2026"], ["Risks"]]
    assert [c.metadata[Meta.SLIDE] for c in chunks] == [1, 2]
    assert chunks[1].text.endswith("Notes: Ask Hana.")
    assert locator_for(chunks[1]).label == "plan.pptx slide 2"


# -- XLSX / CSV --


def test_xlsx_sheets_are_table_documents_chunked_by_whole_rows(tmp_path: Path) -> None:
    folder = tmp_path / "finance"
    folder.mkdir()
    write_xlsx(folder / "book.xlsx", rows=60)
    settings = RetrievalSettings(chunk_tokens=60, chunk_overlap_tokens=10)
    result = load_path(folder, settings=settings)
    assert result.failures == []
    assert (f"{folder / 'book.xlsx'} sheet Empty", "empty sheet") in result.skipped
    docs = by_doc(result.records)
    assert set(docs) == {"finance:book.xlsx/Invoices", "finance:book.xlsx/Owners"}
    texts = parent_texts(folder, "finance")
    assert_slices(result.records, texts)
    invoices = docs["finance:book.xlsx/Invoices"]
    lines = texts["finance:book.xlsx/Invoices"].split("\n")
    assert lines[0] == "Invoice | Customer | Amount"
    assert len(invoices) > 2
    covered: list[str] = []
    for c in invoices:
        rows = c.text.split("\n")
        assert all(row in lines for row in rows)  # a row is never split
        assert c.metadata[Meta.KIND] == "table" and c.metadata[Meta.SHEET] == "Invoices"
        assert c.metadata["columns"] == ["Invoice", "Customer", "Amount"]
        assert c.metadata[Meta.HEADING_PATH] == ["Invoices"]
        # Every chunk embeds the header: the first holds it, the others are given it.
        assert "Invoice | Customer | Amount\n" in c.embed_text
        data_rows = rows[1:] if c.chunk_index == 0 else rows
        first, last = c.metadata[Meta.ROW_START], c.metadata[Meta.ROW_END]
        assert data_rows[0].startswith(f"INV-{first - 1:04d} ")
        assert data_rows[-1].startswith(f"INV-{last - 1:04d} ")
        covered += data_rows
    assert covered == lines[1:]  # every row once, in order (no overlap between chunks)
    assert "INV-0060 | customer number 60 of the northern region | 630" in lines
    assert locator_for(invoices[1]).label == (
        f"book.xlsx, sheet Invoices, rows {invoices[1].metadata[Meta.ROW_START]}-"
        f"{invoices[1].metadata[Meta.ROW_END]}"
    )
    owners = docs["finance:book.xlsx/Owners"]
    assert [c.text for c in owners] == ["Service | Team\nledger-sync | Payments"]


def test_csv_and_tsv_are_tables(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "owners.csv").write_text('service,team\nledger-sync,"Payments, EU"\n\n')
    (folder / "hosts.tsv").write_text("host\trole\ndb-3\tprimary\n")
    result = load_path(folder)
    assert result.failures == []
    docs = by_doc(result.records)
    assert [c.text for c in docs["data:owners.csv"]] == [
        "service | team\nledger-sync | Payments, EU"
    ]
    assert [c.text for c in docs["data:hosts.tsv"]] == ["host | role\ndb-3 | primary"]
    assert locator_for(docs["data:owners.csv"][0]).label == "owners.csv, row 2"


# -- HTML --


def test_html_main_content_only_with_headings_and_links(tmp_path: Path) -> None:
    page = html_page(PORTAL_PAGE, "teams/portal.html")
    for word in BOILERPLATE_WORDS:
        assert word not in page.text
    assert page.text.startswith("Incident review\n\nThe ledger outage began at 09:12")
    assert "Phase | Minutes\nDetect | 4" in page.text
    assert [(h.level, h.title) for h in page.headings] == [(1, "Incident review")]
    assert [target for _, target in page.links] == ["reports/outage.html"]
    assert page.title == "Team portal"

    confluence = html_page(CONFLUENCE_PAGE, "space/Deploy_42.html")
    assert "zanzibarfooter" not in confluence.text and "Created by" not in confluence.text
    assert confluence.text.startswith("Steps\n\nRun the canary for ledger-sync")
    assert [target for _, target in confluence.links] == [
        "space/On-call_123.html",
        "https://status.example.com/ledger",
    ]
    for offset, _ in confluence.links:
        assert confluence.text[offset:].startswith("the ")  # the anchor text starts there


def test_html_records_carry_their_links_and_no_boilerplate(tmp_path: Path) -> None:
    folder = tmp_path / "intranet"
    (folder / "teams").mkdir(parents=True)
    (folder / "teams" / "portal.html").write_text(PORTAL_PAGE)
    (folder / "deploy.html").write_text(CONFLUENCE_PAGE)
    records = load_path(folder).records
    assert_slices(records, parent_texts(folder, "intranet"))
    docs = by_doc(records)
    for r in records:
        for word in BOILERPLATE_WORDS + ("zanzibarfooter",):
            assert word not in r.text and word not in r.embed_text
    deploy = docs["intranet:deploy.html"]
    assert deploy[0].title == "Payments : Deploy runbook"
    assert deploy[0].metadata[Meta.HEADING_PATH] == ["Steps"]
    assert deploy[0].metadata[Meta.LINKS] == [
        "On-call_123.html",
        "https://status.example.com/ledger",
    ]
    assert deploy[1].metadata[Meta.LINKS] == []  # links are per chunk: where the anchor is
    assert docs["intranet:teams/portal.html"][0].metadata[Meta.LINKS] == ["reports/outage.html"]


def test_resolve_link() -> None:
    assert resolve_link("../ops/deploy.html#x", "teams/payments.html") == "ops/deploy.html"
    assert resolve_link("runbook.md?v=2", "teams/payments.md") == "teams/runbook.md"
    assert resolve_link("/wiki/home.html", "a/b.html") == "wiki/home.html"
    assert resolve_link("https://x.org/a?b#c", "a.html") == "https://x.org/a?b#c"
    for ignored in ("#top", "javascript:void(0)", "", "   "):
        assert resolve_link(ignored, "a.html") is None


def test_markdown_links_are_kept_too(tmp_path: Path) -> None:
    folder = tmp_path / "notion"
    (folder / "Team").mkdir(parents=True)
    (folder / "Team" / "Home.md").write_text(
        "# Home\n\nSee [Deploy](Deploy%20runbook.md) and [site](https://example.com).\n"
    )
    (record,) = load_path(folder).records
    assert record.metadata[Meta.LINKS] == ["Team/Deploy runbook.md", "https://example.com"]


# -- front matter (PyYAML) --


def test_front_matter_is_yaml_with_scalars_kept_as_written() -> None:
    text = (
        "---\n"
        "title: 'Quoted: title'\n"
        "version: 1.10\n"
        "draft: no\n"
        "updated: 2024-03-04\n"
        "acl:\n  - eng\n  - sre\n"
        "entities: a, b\n"
        "owner:\n  team: payments\n  lead: Dana\n"
        "# a comment\n"
        "---\n"
        "Body.\n"
    )
    front = parse_front_matter(text)
    assert front.fields["title"] == "Quoted: title"
    assert front.fields["version"] == "1.10" and front.fields["draft"] == "no"
    assert front.fields["updated"] == "2024-03-04"
    assert front.fields["acl"] == ["eng", "sre"] and front.fields["entities"] == ["a", "b"]
    assert front.fields["owner"] == {"team": "payments", "lead": "Dana"}
    assert text[front.end :] == "Body.\n"
    # Not a mapping, or never closed: no front matter, the text is all body.
    for body in ("---\n- a\n- b\n---\nx\n", "---\ntitle: x\n", "---\nJust prose.\n---\nx\n"):
        assert parse_front_matter(body).fields == {} and parse_front_matter(body).end == 0
    # Not valid YAML: read as the plain key: value lines it is, its ACL kept.
    lenient = parse_front_matter("---\ntitle: Deploy: EU\nacl: [hr]\n---\nBody.\n")
    assert lenient.fields == {"title": "Deploy: EU", "acl": ["hr"]}
    assert lenient.end == len("---\ntitle: Deploy: EU\nacl: [hr]\n---\n")


# -- archives --


def _export_zip(tmp_path: Path) -> Path:
    docx_path = write_docx(tmp_path / "handbook.docx")
    members = {
        "Payments/Deploy_42.html": CONFLUENCE_PAGE.encode(),
        "Payments/images/diagram.png": b"\x89PNG\r\n\x1a\n\x00\x00binary",
        "Notion/Team Home.md": (
            b"---\nacl: [eng]\n---\n# Team home\n\nThe zeppelin team owns ledger-sync.\n"
        ),
        "Notion/handbook.docx": docx_path.read_bytes(),
        "Notion/q1.pdf": pdf_bytes(REPORT_PAGES),
        "__MACOSX/._Team Home.md": b"resource fork",
        "Payments/export.json": b"{}",
        "inner.zip": zip_bytes({"x.md": b"# X\n\nnested\n"}),
    }
    path = tmp_path / "space-export.zip"
    path.write_bytes(zip_bytes(members))
    return path


def test_zip_export_ingests_like_the_folder_it_holds(tmp_path: Path) -> None:
    archive = _export_zip(tmp_path)
    assert default_source(archive) == "space-export"
    result = load_path(archive, source="space")
    assert result.failures == []
    docs = by_doc(result.records)
    assert set(docs) == {
        "space:Payments/Deploy_42.html",
        "space:Notion/Team Home.md",
        "space:Notion/handbook.docx",
        "space:Notion/q1.pdf",
    }
    assert docs["space:Notion/Team Home.md"][0].acl == ["eng"]  # front matter inside a zip
    assert docs["space:Notion/q1.pdf"][-1].metadata[Meta.PAGE] == 4
    assert docs["space:Payments/Deploy_42.html"][0].metadata[Meta.LINKS][0] == (
        "Payments/On-call_123.html"
    )
    assert docs["space:Payments/Deploy_42.html"][0].metadata[Meta.PATH] == (
        "Payments/Deploy_42.html"
    )
    skipped = {where.split(".zip/", 1)[1]: reason for where, reason in result.skipped}
    assert skipped["Payments/images/diagram.png"] == "unsupported file type .png"
    assert skipped["inner.zip"] == "nested archive: not read"
    assert skipped["Payments/export.json"].startswith("JSON export inside an archive")
    assert skipped["Notion/q1.pdf p. 2"] == "no text layer (a scanned page?)"
    assert not any("__MACOSX" in where for where in skipped)
    # Member times come from the archive, so a re-load is identical (same hashes, ids).
    again = load_path(archive, source="space").records
    assert [(r.id, r.metadata[Meta.CONTENT_HASH]) for r in again] == [
        (r.id, r.metadata[Meta.CONTENT_HASH]) for r in result.records
    ]


def test_zip_in_a_folder_keeps_its_path_in_the_ids(tmp_path: Path) -> None:
    folder = tmp_path / "wiki"
    (folder / "exports").mkdir(parents=True)
    (folder / "exports" / "space.zip").write_bytes(zip_bytes({"a/b.md": b"# B\n\nbee\n"}))
    (folder / "top.md").write_text("# Top\n\ntop\n")
    ids = {r.doc_id for r in load_path(folder).records}
    assert ids == {"wiki:exports/space.zip/a/b.md", "wiki:top.md"}


def test_zip_slip_bombs_and_corrupt_members_fail_alone(tmp_path: Path) -> None:
    good = b"# Good\n\nThis member is fine and loads.\n"
    corrupt = b"# Corrupt\n\nUNIQUE-PAYLOAD-TO-DAMAGE with enough text.\n"
    members = {
        "good.md": good,
        "../escape.md": b"# Escape\n\nzip slip\n",
        "/etc/abs.md": b"# Abs\n\nabsolute\n",
        "bomb.txt": b"0" * (4 * 1024 * 1024),
        "big.md": b"# Big\n\n" + " ".join(f"w{i * 7919 % 100_003}" for i in range(40_000)).encode(),
        "corrupt.md": corrupt,
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, content in members.items():
            info = zipfile.ZipInfo(name, date_time=(2024, 3, 4, 12, 0, 0))
            deflate = name in {"bomb.txt", "big.md"}
            info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
            zf.writestr(info, content)
    data = bytearray(buffer.getvalue())
    at = data.find(b"UNIQUE-PAYLOAD")
    data[at] ^= 0xFF  # a stored member whose CRC no longer matches
    archive = tmp_path / "mixed.zip"
    archive.write_bytes(bytes(data))
    settings = RetrievalSettings(max_file_bytes=8 * 1024 * 1024)
    result = load_path(archive, settings=settings)
    failed = {where.split(".zip/", 1)[1]: reason for where, reason in result.failures}
    assert failed["../escape.md"].startswith("refused: unsafe member path")
    assert failed["/etc/abs.md"].startswith("refused: unsafe member path")
    assert failed["bomb.txt"].startswith("refused: compression ratio")
    assert failed["corrupt.md"].startswith("corrupt archive member")
    assert "big.md" not in failed
    assert {r.doc_id for r in result.records} == {"mixed:good.md", "mixed:big.md"}
    # Over the member size cap: skipped with the reason, not decompressed.
    small = load_path(archive, settings=RetrievalSettings(max_file_bytes=100_000))
    skipped = {where.split(".zip/", 1)[1]: reason for where, reason in small.skipped}
    assert skipped["bomb.txt"].startswith("too large") and skipped["big.md"].startswith("too large")


def test_zip_windows_separators_and_duplicate_members(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("Team\\Home.md", "# Home\n\nfirst\n")
        zf.writestr("Team/Home.md", "# Home\n\nsecond\n")
    archive = tmp_path / "win.zip"
    archive.write_bytes(buffer.getvalue())
    result = load_path(archive)
    assert [(r.id, r.text) for r in result.records] == [("win:Team/Home.md#0", "# Home\n\nfirst")]
    assert result.skipped == [
        (f"{archive}/Team/Home.md", "duplicate member path: the first one was read")
    ]


def test_zip_limits_refuse_the_whole_archive(tmp_path: Path) -> None:
    archive = tmp_path / "many.zip"
    archive.write_bytes(zip_bytes({f"p{i}.md": b"# P\n\nx\n" for i in range(5)}))
    result = load_path(archive, connector_settings=ConnectorSettings(zip_max_members=4))
    assert result.records == []
    assert result.failures == [(str(archive), "refused: 5 members > zip_max_members 4")]
    total = load_path(archive, connector_settings=ConnectorSettings(zip_max_total_bytes=20))
    assert total.records == [] and "zip_max_total_bytes" in total.failures[0][1]
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 not really")
    broken = load_path(tmp_path / "broken.zip")
    assert broken.failures[0][1].startswith("unreadable archive")


@pytest.mark.parametrize(
    ("name", "unsafe"),
    [
        ("a/b.md", False),
        ("a/../b.md", True),
        ("../b.md", True),
        ("/b.md", True),
        ("C:/b.md", True),
        ("a\\..\\b.md", True),
        ("a\\b.md", False),
        ("a/..b.md", False),
    ],
)
def test_unsafe_member(name: str, unsafe: bool) -> None:
    assert unsafe_member(name) is unsafe


# -- skipped with a reason --


def test_binary_and_oversized_files_are_skipped_with_a_reason(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    (folder / "tool").write_bytes(b"\x7fELF\x00\x00")
    (folder / "huge.pdf").write_bytes(pdf_bytes([["x " * 4000]]))
    (folder / "ok.md").write_text("# Ok\n\nfine\n")
    result = load_path(folder, settings=RetrievalSettings(max_file_bytes=4000))
    skipped = {Path(where).name: reason for where, reason in result.skipped}
    assert skipped["photo.png"] == "unsupported file type .png"
    assert skipped["tool"] == "unsupported file type (none)"
    assert (
        skipped["huge.pdf"].startswith("too large:")
        and "max_file_bytes 4000" in (skipped["huge.pdf"])
    )
    assert result.failures == []
    assert [r.doc_id for r in result.records] == ["mixed:ok.md"]


def test_document_of_one_file_item(tmp_path: Path) -> None:
    path = write_report_pdf(tmp_path / "r.pdf")
    doc = FilesConnector(LoadContext(source="s")).document(FileItem(path, tmp_path))
    assert doc is not None and doc.doc_id == "s:r.pdf"
    assert [r.meta for r in doc.regions] == [{"page": 1}, {"page": 3}, {"page": 4}]
