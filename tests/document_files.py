"""Small PDF, DOCX, PPTX, XLSX, HTML and zip files made by the tests themselves.

The PDF is written by hand (one Helvetica text object per page, valid xref); its outline
(bookmarks) and title are added with pypdf's writer. Office files come from python-docx,
python-pptx and openpyxl.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _pdf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(
    pages: Sequence[Sequence[str | tuple[str, int]]],
    *,
    title: str | None = None,
    outline: Sequence[tuple[str, int, int]] = (),
) -> bytes:
    """A PDF whose page i shows the lines ``pages[i]`` (11 pt, or ``(line, size)``; an
    empty list: a page without any text, as a scan is). ``outline``: (title, 0-based page,
    level 1 or 2) bookmarks."""
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [{}] /Count {} >>".format(
            " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages))), len(pages)
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, lines in enumerate(pages):
        blocks, y = [], 740
        for line in lines:
            text, size = (line, 11) if isinstance(line, str) else line
            blocks.append(f"BT /F1 {size} Tf 72 {y} Td ({_pdf_escape(text)}) Tj ET")
            y -= size + 6
        content = "\n".join(blocks)
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>"
        )
        objects.append(f"<< /Length {len(content)} >>\nstream\n{content}\nendstream")
    out = "%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n"
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    data = out.encode("latin-1")
    if not title and not outline:
        return data
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=io.BytesIO(data))
    parents: dict[int, Any] = {}
    for name, page, level in outline:
        parent = parents.get(level - 1) if level > 1 else None
        parents[level] = writer.add_outline_item(title=name, page_number=page, parent=parent)
    if title:
        writer.add_metadata({"/Title": title})
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


REPORT_PAGES = [
    ["Introduction", "The quarterly report covers the ledger migration."],
    [],  # a scanned page: no text layer
    ["Scope", "Only the EU region moved to ledger-v2 in March."],
    ["Results", "Settlement latency fell from 40 ms to 12 ms after cutover."],
]
REPORT_OUTLINE = [("Introduction", 0, 1), ("Scope", 2, 2), ("Results", 3, 1)]


def write_report_pdf(path: Path) -> Path:
    path.write_bytes(pdf_bytes(REPORT_PAGES, title="Quarterly report", outline=REPORT_OUTLINE))
    return path


def write_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.core_properties.author = "Dana Ruiz"
    document.add_paragraph("Payments handbook", style="Title")
    document.add_heading("On-call", level=1)
    document.add_paragraph("The on-call engineer answers pages within 15 minutes.")
    document.add_heading("Escalation", level=2)
    document.add_paragraph("Escalate ledger incidents to the database team after an hour.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Service", "Owner"
    table.cell(1, 0).text, table.cell(1, 1).text = "ledger-sync", "Payments"
    document.save(str(path))
    return path


def write_pptx(path: Path) -> Path:
    from pptx import Presentation

    deck = Presentation()
    layout = deck.slide_layouts[1]  # title and content
    for title, body, notes in (
        ("Roadmap 2026", "Ship ledger-v2 to every region.", ""),
        ("Risks", "The APAC cutover depends on the zeppelin freeze.", "Ask Hana."),
    ):
        slide = deck.slides.add_slide(layout)
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    deck.save(str(path))
    return path


def write_xlsx(path: Path, rows: int = 60) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Invoices"
    sheet.append(["Invoice", "Customer", "Amount"])
    for i in range(1, rows + 1):
        sheet.append([f"INV-{i:04d}", f"customer number {i} of the northern region", i * 10.5])
    owners = book.create_sheet("Owners")
    owners.append(["Service", "Team"])
    owners.append(["ledger-sync", "Payments"])
    book.create_sheet("Empty")
    book.save(str(path))
    return path


CONFLUENCE_PAGE = """<!DOCTYPE html>
<html><head><title>Payments : Deploy runbook</title></head>
<body><div id="page">
<div id="main" class="aui-page-panel">
  <div id="main-header">
    <div id="breadcrumb-section"><ol id="breadcrumbs">
      <li><a href="index.html">Payments</a></li></ol></div>
    <h1 id="title-heading" class="pagetitle">
      <span id="title-text">Payments : Deploy runbook</span></h1>
  </div>
  <div id="content" class="view">
    <div class="page-metadata">Created by Dana, last modified on Mar 04, 2024</div>
    <div id="main-content" class="wiki-content group">
      <h2 id="Deploy-Steps">Steps</h2>
      <p>Run the canary for <b>ledger-sync</b> before the full rollout.
         See <a href="On-call_123.html#pager">the on-call page</a> and
         <a href="https://status.example.com/ledger">the status page</a>.</p>
      <h2>Rollback</h2>
      <p>Roll back with <code>deploy --undo</code> within ten minutes.</p>
    </div>
  </div>
</div>
<div id="footer" role="contentinfo"><section class="footer-body">
  <p>Document generated by Confluence on Mar 05, 2024 zanzibarfooter</p></section></div>
</div></body></html>
"""

PORTAL_PAGE = """<!DOCTYPE html>
<html><head><title>Team portal</title><script>var x = "scriptword";</script></head>
<body>
<header class="site-header"><a href="/">Home</a> <a href="/search">Search</a> quokkabanner</header>
<nav><ul><li><a href="../a.html">Alpha</a></li><li>marmosetnav</li></ul></nav>
<div class="sidebar">Recent pages wombatsidebar</div>
<main>
  <article>
    <h1>Incident review</h1>
    <p>The ledger outage began at 09:12 and ended at 09:40.</p>
    <table><tr><th>Phase</th><th>Minutes</th></tr><tr><td>Detect</td><td>4</td></tr></table>
    <p>Details in <a href="../reports/outage.html">the outage report</a>.</p>
  </article>
  <aside>Related: pangolinaside</aside>
</main>
<footer>Copyright numbatfooter</footer>
</body></html>
"""

BOILERPLATE_WORDS = (
    "quokkabanner", "marmosetnav", "wombatsidebar", "pangolinaside", "numbatfooter",
    "scriptword",
)  # fmt: skip


def zip_bytes(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(2024, 3, 4, 12, 0, 0))
            info.compress_type = compression
            zf.writestr(info, data)
    return buffer.getvalue()
