"""PDF, Office, spreadsheet, HTML and zip files made by the test, ingested end to end with
`waypoint ingest` (real engines, the bundled embedding model) and found with
`waypoint search`: page numbers and headings in the locator, boilerplate not searchable,
a corrupt PDF failing alone, binary and oversized files skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from document_files import (
    CONFLUENCE_PAGE,
    PORTAL_PAGE,
    pdf_bytes,
    write_docx,
    write_pptx,
    write_report_pdf,
    write_xlsx,
    zip_bytes,
)
from typer.testing import CliRunner

from api.cli.main import _register_all, app

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, dict[str, Any]]:
    if not app.registered_commands:
        _register_all()
    runner = CliRunner()
    tmp = tmp_path_factory.mktemp("documents")
    root = tmp / "docs"
    root.mkdir()
    write_report_pdf(root / "report.pdf")
    write_docx(root / "handbook.docx")
    write_pptx(root / "plan.pptx")
    write_xlsx(root / "invoices.xlsx", rows=80)
    (root / "portal.html").write_text(PORTAL_PAGE)
    (root / "corrupt.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 9 0 R")
    (root / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (root / "huge.pdf").write_bytes(pdf_bytes([["filler " * 12_000]]))
    (root / "space.zip").write_bytes(
        zip_bytes(
            {
                "Payments/Deploy_42.html": CONFLUENCE_PAGE.encode(),
                "Notion/Team Home.md": b"# Team home\n\nThe okapi team owns ledger-sync.\n",
                "../escape.md": b"# Escape\n\nzip slip\n",
            }
        )
    )
    index = tmp / "idx"

    def run(*args: str) -> Any:
        result = runner.invoke(
            app, list(args), env={"WAYPOINT_MAX_FILE_BYTES": "60000"}, catch_exceptions=False
        )
        assert result.exit_code == 0, result.output
        return result

    def ingest() -> dict[str, Any]:
        out = run("ingest", str(root), "--index", str(index), "--json").stdout
        return dict(json.loads(out.strip().splitlines()[-1]))

    summary = ingest()
    summary["again"] = ingest()

    def search(query: str, *extra: str) -> dict[str, Any]:
        out = run("search", query, "--index", str(index), "--json", *extra).stdout
        return dict(json.loads(out))

    return search, root, summary


def test_every_format_is_ingested_and_the_bad_ones_reported(ingested: Any) -> None:
    _, root, summary = ingested
    failed = {Path(f["path"]).name: f["reason"] for f in summary["failed"]}
    assert set(failed) == {"corrupt.pdf", "escape.md"}, failed
    assert failed["corrupt.pdf"].startswith("could not convert")
    assert failed["escape.md"].startswith("refused: unsafe member path")
    # report, handbook, plan, portal, 2 invoice sheets, 2 zip members (huge.pdf and
    # photo.png are skipped: too large, unsupported type).
    assert summary["added"] == 8
    # Left out on purpose, each with its reason in the ingest report.
    skipped = {Path(f["path"]).name: f["reason"] for f in summary["skipped"]}
    assert skipped["photo.png"] == "unsupported file type .png"
    assert skipped["huge.pdf"].startswith("too large:")
    assert skipped["report.pdf p. 2"] == "no text layer (a scanned page?)"
    assert skipped["invoices.xlsx sheet Empty"] == "empty sheet"
    # Unchanged files (zip members by their archive times) cost nothing the second time.
    again = summary["again"]
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 8)
    assert again["embeddings"] == 0


def test_pdf_hits_carry_their_page_and_heading(ingested: Any) -> None:
    search, _, _ = ingested
    hit = search("settlement latency after cutover")["hits"][0]
    assert hit["doc_id"] == "docs:report.pdf"
    locator = hit["locator"]
    assert locator["page"] == 4 and locator["label"] == "report.pdf p. 4"
    assert locator["heading_path"] == ["Results"]
    assert hit["metadata"]["page"] == 4


def test_office_hits_carry_headings_slides_and_rows(ingested: Any) -> None:
    search, _, _ = ingested
    docx_hit = search("escalate ledger incidents to the database team")["hits"][0]
    assert docx_hit["doc_id"] == "docs:handbook.docx"
    assert docx_hit["locator"]["heading_path"] == ["On-call", "Escalation"]
    slide = search("APAC cutover zeppelin freeze")["hits"][0]
    assert slide["doc_id"] == "docs:plan.pptx"
    assert slide["locator"]["slide"] == 2 and slide["locator"]["heading_path"] == ["Risks"]
    row = search("INV-0042", "--legs", "lexical")["hits"][0]
    assert row["doc_id"] == "docs:invoices.xlsx/Invoices"
    loc = row["locator"]
    assert loc["sheet"] == "Invoices" and loc["row_start"] <= 43 <= loc["row_end"]
    assert "INV-0042 | customer number 42 of the northern region | 441" in row["text"]


def test_zip_members_are_found_by_their_inner_paths(ingested: Any) -> None:
    search, _, _ = ingested
    hit = search("which team owns ledger-sync okapi")["hits"][0]
    assert hit["doc_id"] == "docs:space.zip/Notion/Team Home.md"
    confluence = search("canary before the full rollout")["hits"][0]
    assert confluence["doc_id"] == "docs:space.zip/Payments/Deploy_42.html"
    assert confluence["metadata"]["links"][0] == "space.zip/Payments/On-call_123.html"


def test_html_boilerplate_is_not_searchable(ingested: Any) -> None:
    search, _, _ = ingested
    for word in ("marmosetnav", "numbatfooter", "wombatsidebar", "zanzibarfooter"):
        assert search(word, "--legs", "lexical")["hits"] == [], word
    hit = search("ledger outage began", "--legs", "lexical")["hits"][0]
    assert hit["doc_id"] == "docs:portal.html"
