"""Office and PDF files to parent text: pypdf, python-docx, python-pptx, openpyxl and the
stdlib ``csv`` (pure converters: nothing is downloaded, no model runs).

Each converter turns a file's bytes into :class:`Converted` parts; chunk offsets index
``Converted.text`` exactly like a Markdown file's content.

* **PDF**: the text of each page (pypdf, plain mode), pages separated by a blank line;
  each page a :class:`~retrieval.connectors.base.Region` with ``{"page": n}`` (1-based);
  headings from the document outline (bookmarks), placed where the title appears on its
  page (else at the page start); without an outline, short lines set in a font at least
  15% larger than the body text (larger size, higher level). A page without text (a
  scan) is reported as skipped.
* **DOCX**: paragraphs and tables in body order, blank-line separated; ``Title`` and
  ``Heading 1-9`` styles are headings. Table rows are cells joined by `` | ``.
* **PPTX**: one region per slide (``{"slide": n}``): the title, then every other text
  frame and table (groups included), then the speaker notes after ``Notes:``. The slide
  title is its level-1 heading (``Slide n`` when it has none).
* **XLSX / CSV / TSV**: each sheet is a table document (the header line, then one line
  per non-empty row, cells joined by `` | ``), chunked by whole rows.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import Any

from retrieval.chunking import Heading
from retrieval.connectors.base import Region, TableLayout

PDF_SUFFIXES = {".pdf"}
DOCX_SUFFIXES = {".docx"}
PPTX_SUFFIXES = {".pptx"}
XLSX_SUFFIXES = {".xlsx", ".xlsm"}
CSV_SUFFIXES = {".csv", ".tsv"}
DOCUMENT_SUFFIXES = PDF_SUFFIXES | DOCX_SUFFIXES | PPTX_SUFFIXES | XLSX_SUFFIXES | CSV_SUFFIXES

# Authors written by the libraries that made a file, not by a person.
_TOOL_AUTHORS = {"python-docx", "python-pptx", "openpyxl"}
_PDF_TITLE_PREFIX_RE = re.compile(r"^Microsoft (?:Word|PowerPoint|Excel) - ", re.IGNORECASE)
_HEADING_STYLE_RE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_CELL_SPACE_RE = re.compile(r"\s+")


# pypdf warns about every repaired oddity of a real-world PDF (a wrong xref offset, a
# duplicate key) on the root logger's stderr; what matters reaches the load's failures.
if logging.getLogger("pypdf").level == logging.NOTSET:
    logging.getLogger("pypdf").setLevel(logging.ERROR)


class ConversionError(ValueError):
    """A file the converter cannot read (corrupt, encrypted...)."""


@dataclass
class Converted:
    """One document's parent text and structure, as a converter found it."""

    text: str
    title: str | None = None
    headings: list[Heading] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    table: TableLayout | None = None
    kind: str = "section"
    author: str | None = None
    updated: datetime | None = None
    part: str | None = None  # a sheet name: the document id is ``<file id>/<part>``
    extra: dict[str, Any] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where suffix, reason)


class _Text:
    """Parent text built block by block, blocks separated by a blank line."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0

    def add(self, block: str) -> tuple[int, int]:
        """Append a block; its (start, end) in the text."""
        if self.parts:
            self.parts.append("\n\n")
            self.length += 2
        start = self.length
        self.parts.append(block)
        self.length += len(block)
        return start, self.length

    def value(self) -> str:
        return "".join(self.parts)


def _aware(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _author(value: Any) -> str | None:
    text = str(value or "").strip()
    return text if text and text.lower() not in _TOOL_AUTHORS else None


def _clean(text: str) -> str:
    """A block's text: vertical tabs (soft line breaks) as newlines, lines right-stripped,
    no leading/trailing blank lines."""
    lines = text.replace("\x0b", "\n").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


# -- PDF --


def convert_pdf(data: bytes) -> list[Converted]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ConversionError("encrypted PDF (a password is needed)")
        pages = list(reader.pages)
    except (PdfReadError, PyPdfError, OSError) as exc:
        raise ConversionError(f"unreadable PDF: {exc}") from exc
    out = _Text()
    regions: list[Region] = []
    skipped: list[tuple[str, str]] = []
    page_spans: dict[int, tuple[int, int]] = {}
    runs: dict[int, list[tuple[str, float]]] = {}  # page -> (text, font size) in order
    for number, page in enumerate(pages, 1):
        page_runs: list[tuple[str, float]] = []
        try:
            text = _clean(page.extract_text(visitor_text=_run_collector(page_runs)) or "")
        except Exception as exc:  # noqa: BLE001 - one bad page must not sink the file
            skipped.append((f"p. {number}", f"text extraction failed: {exc}"))
            continue
        if not text.strip():
            skipped.append((f"p. {number}", "no text layer (a scanned page?)"))
            continue
        start, end = out.add(text)
        page_spans[number] = (start, end)
        runs[number] = page_runs
        regions.append(Region(start, end, {"page": number}))
    text = out.value()
    meta = _pdf_metadata(reader)
    headings = _pdf_headings(reader, text, page_spans) or _font_headings(text, page_spans, runs)
    return [
        Converted(
            text=text,
            title=meta.get("title"),
            headings=headings,
            regions=regions,
            author=meta.get("author"),
            updated=meta.get("updated"),
            extra={"pages": len(pages)},
            skipped=skipped,
        )
    ]


def _pdf_metadata(reader: Any) -> dict[str, Any]:
    try:
        info = reader.metadata
    except Exception:  # noqa: BLE001 - a broken info dictionary is not a broken file
        return {}
    if not info:
        return {}
    out: dict[str, Any] = {}
    title = (info.title or "").strip() if isinstance(info.title, str) else ""
    title = _PDF_TITLE_PREFIX_RE.sub("", title).strip()
    if title and title.lower() not in {"untitled", "title"}:
        out["title"] = title
    author = (info.author or "").strip() if isinstance(info.author, str) else ""
    if author:
        out["author"] = author
    try:
        out["updated"] = _aware(info.modification_date or info.creation_date)
    except (ValueError, TypeError):
        pass
    return out


def _outline(reader: Any) -> Iterator[tuple[int, str, int]]:
    """(level, title, 1-based page) of every outline entry, in order."""

    def walk(items: Iterable[Any], level: int) -> Iterator[tuple[int, str, int]]:
        for item in items:
            if isinstance(item, list):
                yield from walk(item, level + 1)
                continue
            try:
                page = reader.get_destination_page_number(item) + 1
                title = " ".join(str(item.title or "").split())
            except Exception:  # noqa: BLE001 - dangling destinations are common
                continue
            if title and page > 0:
                yield min(level, 6), title, page

    try:
        outline = reader.outline
    except Exception:  # noqa: BLE001
        return iter(())
    return walk(outline, 1)


def _pdf_headings(reader: Any, text: str, page_spans: dict[int, tuple[int, int]]) -> list[Heading]:
    headings: list[Heading] = []
    cursor: dict[int, int] = {}
    for level, title, page in _outline(reader):
        span = page_spans.get(page)
        if span is None:
            continue  # a bookmark to a page without text
        start = cursor.get(page, span[0])
        found = _find_loose(text, title, start, span[1])
        if found is None:
            headings.append(Heading(level, title, start, start))
        else:
            headings.append(Heading(level, title, found[0], found[1]))
            cursor[page] = found[1]
    return headings


def _run_collector(runs: list[tuple[str, float]]) -> Any:
    """A pypdf ``visitor_text`` that records each shown text with its rendered size."""

    def visit(text: str, cm: Any, tm: Any, font: Any, size: Any) -> None:
        if not text or not text.strip():
            return
        try:
            scale = math.hypot(float(tm[2]), float(tm[3])) * math.hypot(float(cm[2]), float(cm[3]))
            rendered = abs(float(size)) * (scale or 1.0)
        except (TypeError, ValueError, IndexError):
            return
        if runs and runs[-1][1] == rendered and "\n" not in runs[-1][0]:
            runs[-1] = (runs[-1][0] + text, rendered)  # one line shown in several pieces
        else:
            runs.append((text, rendered))

    return visit


def _font_headings(
    text: str,
    page_spans: dict[int, tuple[int, int]],
    runs: dict[int, list[tuple[str, float]]],
) -> list[Heading]:
    """Headings of a PDF without an outline: short lines set in a font at least 15% larger
    than the body's (the size most characters are set in); the largest size is level 1.
    Each is placed where its text occurs on its page, in page order."""
    weight: Counter[float] = Counter()
    for page_runs in runs.values():
        for run, size in page_runs:
            weight[round(size, 1)] += len(run.strip())
    if not weight:
        return []
    body = weight.most_common(1)[0][0]
    candidates: list[tuple[int, str, float]] = []
    for number, page_runs in runs.items():
        for run, size in page_runs:
            if round(size, 1) < body * 1.15:
                continue
            for line in run.split("\n"):
                title = " ".join(line.split())
                if 2 <= len(title) <= 150 and any(c.isalpha() for c in title):
                    candidates.append((number, title, round(size, 1)))
    sizes = sorted({size for _, _, size in candidates}, reverse=True)
    level_of = {size: min(i + 1, 6) for i, size in enumerate(sizes)}
    headings: list[Heading] = []
    cursor: dict[int, int] = {}
    for number, title, size in candidates:
        span = page_spans.get(number)
        if span is None:
            continue
        found = _find_loose(text, title, cursor.get(number, span[0]), span[1])
        if found is not None:
            headings.append(Heading(level_of[size], title, found[0], found[1]))
            cursor[number] = found[1]
    return headings


def _find_loose(text: str, title: str, start: int, end: int) -> tuple[int, int] | None:
    """``title`` in ``text[start:end]``, any whitespace between its words, any case."""
    words = title.split()
    if not words:
        return None
    pattern = r"\s+".join(re.escape(w) for w in words)
    match = re.compile(pattern, re.IGNORECASE).search(text, start, end)
    return (match.start(), match.end()) if match else None


# -- DOCX --


def convert_docx(data: bytes) -> list[Converted]:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - zip / XML errors of a corrupt file
        raise ConversionError(f"unreadable DOCX: {type(exc).__name__}: {exc}") from exc
    out = _Text()
    headings: list[Heading] = []
    title: str | None = None
    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            text = _clean(block.text)
            if not text.strip():
                continue
            style = (block.style.name if block.style is not None else "") or ""
            start, end = out.add(text)
            match = _HEADING_STYLE_RE.match(style.strip())
            if style.strip().lower() == "title":
                title = title or " ".join(text.split())
                headings.append(Heading(1, " ".join(text.split()), start, end))
            elif match:
                headings.append(Heading(int(match.group(1)), " ".join(text.split()), start, end))
        elif isinstance(block, Table):
            rows = [_row_text(cell.text for cell in row.cells) for row in block.rows]
            rows = [r for r in rows if r.strip()]
            if rows:
                out.add("\n".join(rows))
    props = document.core_properties
    return [
        Converted(
            text=out.value(),
            title=(props.title or "").strip() or title,
            headings=headings,
            author=_author(props.author),
            updated=_aware(props.modified),
        )
    ]


def _row_text(cells: Iterable[Any]) -> str:
    """Cells joined by `` | `` (whitespace collapsed; a merged cell repeated by the
    converter kept once)."""
    out: list[str] = []
    for cell in cells:
        value = _CELL_SPACE_RE.sub(" ", _cell_text(cell)).strip()
        if out and value and value == out[-1]:
            continue
        out.append(value)
    while out and not out[-1]:
        out.pop()
    return " | ".join(out)


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime):
        return value.isoformat(sep=" ") if value.time() != time(0) else value.date().isoformat()
    if isinstance(value, date | time):
        return value.isoformat()
    return str(value)


# -- PPTX --


def convert_pptx(data: bytes) -> list[Converted]:
    from pptx import Presentation

    try:
        deck = Presentation(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - zip / XML errors of a corrupt file
        raise ConversionError(f"unreadable PPTX: {type(exc).__name__}: {exc}") from exc
    out = _Text()
    headings: list[Heading] = []
    regions: list[Region] = []
    skipped: list[tuple[str, str]] = []
    first_title: str | None = None
    for number, slide in enumerate(deck.slides, 1):
        title_shape = slide.shapes.title
        title = ""
        if title_shape is not None and title_shape.has_text_frame:
            title = " ".join(_clean(title_shape.text_frame.text).split())
        bodies: list[str] = []
        for shape in _shapes(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                body = _clean(shape.text_frame.text)
                if body.strip():
                    bodies.append(body)
            if getattr(shape, "has_table", False) and shape.has_table:
                rows = [_row_text(c.text for c in row.cells) for row in shape.table.rows]
                rows = [r for r in rows if r.strip()]
                if rows:
                    bodies.append("\n".join(rows))
        if slide.has_notes_slide:
            notes = _clean(slide.notes_slide.notes_text_frame.text or "")
            if notes.strip():
                bodies.append(f"Notes: {notes}")
        if not title and not bodies:
            skipped.append((f"slide {number}", "no text"))
            continue
        block = "\n\n".join(([title] if title else []) + bodies)
        start, end = out.add(block)
        name = title or f"Slide {number}"
        headings.append(Heading(1, name, start, start + len(title)))
        regions.append(Region(start, end, {"slide": number}))
        first_title = first_title or (title or None)
    props = deck.core_properties
    return [
        Converted(
            text=out.value(),
            title=(props.title or "").strip() or first_title,
            headings=headings,
            regions=regions,
            author=_author(props.author),
            updated=_aware(props.modified),
            extra={"slides": len(deck.slides)},
            skipped=skipped,
        )
    ]


def _shapes(shapes: Iterable[Any]) -> Iterator[Any]:
    """Every shape, the members of group shapes included, in slide order."""
    for shape in shapes:
        if getattr(shape, "shape_type", None) == 6:  # MSO_SHAPE_TYPE.GROUP
            yield from _shapes(shape.shapes)
        else:
            yield shape


# -- XLSX / CSV --


def _table(
    rows: Iterable[tuple[int, list[Any]]], heading_path: tuple[str, ...], max_rows: int
) -> tuple[str, TableLayout, list[str], bool] | None:
    """(text, layout, columns, truncated) of a table's non-empty rows; None if empty."""
    lines: list[tuple[int, str]] = []
    truncated = False
    for number, cells in rows:
        line = _row_text(cells)
        if not line.strip():
            continue
        if len(lines) > max_rows:  # the header plus max_rows rows
            truncated = True
            break
        lines.append((number, line))
    if not lines:
        return None
    parts: list[str] = []
    spans: list[tuple[int, int, int]] = []
    pos = 0
    for number, line in lines:
        if parts:
            parts.append("\n")
            pos += 1
        parts.append(line)
        spans.append((pos, pos + len(line), number))
        pos += len(line)
    header = spans[0]
    columns = [c.strip() for c in lines[0][1].split(" | ")]
    layout = TableLayout((header[0], header[1]), spans[1:], heading_path)
    return "".join(parts), layout, columns, truncated


def convert_xlsx(data: bytes, max_rows: int) -> list[Converted]:
    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # noqa: BLE001 - zip / XML errors of a corrupt file
        raise ConversionError(f"unreadable XLSX: {type(exc).__name__}: {exc}") from exc
    try:
        props = book.properties
        out: list[Converted] = []
        skipped: list[tuple[str, str]] = []
        for sheet in book.worksheets:
            rows = (
                (n, list(values)) for n, values in enumerate(sheet.iter_rows(values_only=True), 1)
            )
            table = _table(rows, (sheet.title,), max_rows)
            if table is None:
                skipped.append((f"sheet {sheet.title}", "empty sheet"))
                continue
            text, layout, columns, truncated = table
            if truncated:
                skipped.append((f"sheet {sheet.title}", f"rows past the first {max_rows} not read"))
            out.append(
                Converted(
                    text=text,
                    title=(props.title or "").strip() or None,
                    table=layout,
                    kind="table",
                    author=_author(props.creator),
                    updated=_aware(props.modified),
                    part=sheet.title,
                    extra={"sheet": sheet.title, "columns": columns},
                )
            )
        if out:
            out[0].skipped.extend(skipped)
        elif skipped:
            raise ConversionError("no sheet holds any cell")
        return out
    finally:
        book.close()


def convert_csv(text: str, tab: bool, max_rows: int) -> list[Converted]:
    if tab:
        dialect: Any = csv.excel_tab
    else:
        try:
            dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
    try:
        reader = csv.reader(io.StringIO(text, newline=""), dialect)
        rows = list(_numbered(reader, max_rows + 2))
    except csv.Error as exc:
        raise ConversionError(f"invalid CSV: {exc}") from exc
    table = _table(((n, cells) for n, cells in rows), (), max_rows)
    if table is None:
        return []
    body, layout, columns, truncated = table
    converted = Converted(text=body, table=layout, kind="table", extra={"columns": columns})
    if truncated:
        converted.skipped.append(("", f"rows past the first {max_rows} not read"))
    return [converted]


def _numbered(reader: Any, limit: int) -> Iterator[tuple[int, list[str]]]:
    """(1-based record number, cells), at most ``limit`` records."""
    for number, cells in enumerate(reader, 1):
        yield number, cells
        if number >= limit:
            return
