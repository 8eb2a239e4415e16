"""Files connector: a folder (recursive), a single file, or a ``.zip`` of them.

Formats: Markdown (``.md .markdown``), text (``.txt``), HTML (``.html .htm``, main
content only: :mod:`.html`), PDF, DOCX, PPTX, XLSX/XLSM, CSV/TSV (:mod:`.documents`).
A ``.zip`` (:mod:`.archives`) is read like the folder it holds: ids from the inner paths
(``<source>:<inner path>`` when the zip itself is loaded, ``<source>:<zip path>/<inner
path>`` when it sits in a loaded folder).

Parent text (what chunk offsets index): for Markdown and text, the decoded file content
itself (front matter included but never chunked); for HTML, the text of the main content;
for the other formats, the text their converter extracts.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from retrieval.chunking import markdown_headings
from retrieval.connectors import documents as converters
from retrieval.connectors.archives import ARCHIVE_SUFFIXES, archive_members
from retrieval.connectors.base import (
    BaseConnector,
    LoadContext,
    SourceDocument,
    as_list,
    dedupe,
    document_records,
    mtime_of,
    parse_time,
)
from retrieval.connectors.documents import (
    CSV_SUFFIXES,
    DOCUMENT_SUFFIXES,
    DOCX_SUFFIXES,
    PDF_SUFFIXES,
    PPTX_SUFFIXES,
    XLSX_SUFFIXES,
    Converted,
)
from retrieval.connectors.html import html_page, html_to_text, resolve_link
from retrieval.records import Record

__all__ = [
    "SUFFIXES",
    "FileItem",
    "FilesConnector",
    "FrontMatter",
    "html_to_text",
    "parse_front_matter",
    "read_text",
]

MARKDOWN_SUFFIXES = {".md", ".markdown"}
TEXT_SUFFIXES = {".txt"}
HTML_SUFFIXES = {".html", ".htm"}
PAGE_SUFFIXES = MARKDOWN_SUFFIXES | TEXT_SUFFIXES | HTML_SUFFIXES
SUFFIXES = PAGE_SUFFIXES | DOCUMENT_SUFFIXES  # documents (an archive is a folder of them)

# Front matter keys that become list values / are consumed by the connector itself.
_LIST_KEYS = {"acl", "entities", "tags", "aliases"}
_CONSUMED_KEYS = {"title", "acl", "author", "updated", "date", "entities", "project", "url"}
# Inline Markdown links and images: [text](target "title").
_MD_LINK_RE = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)")


def is_export_file(path: Path | str) -> bool:
    """A .jsonl / .jsonl.gz / .json file: a collection for another connector, not a page."""
    name = str(path).lower()
    return name.endswith((".jsonl", ".jsonl.gz", ".json"))


def _suffix(name: str) -> str:
    return PurePosixPath(name).suffix.lower()


@dataclass(frozen=True)
class FileItem:
    path: Path  # the file; for an archive member, the archive
    root: Path  # ids are relative to it (the archive itself when it was the loaded path)
    member: str | None = None  # the inner path of an archive member
    data: bytes | None = field(default=None, repr=False, compare=False)  # member bytes
    mtime: datetime | None = None  # member time (files: read from disk)

    @property
    def rel(self) -> str:
        """The id path: relative to the loaded folder, forward slashes."""
        if self.member is None:
            return self.path.relative_to(self.root).as_posix()
        if self.path == self.root:
            return self.member
        return f"{self.path.relative_to(self.root).as_posix()}/{self.member}"

    @property
    def name(self) -> str:
        return PurePosixPath(self.member).name if self.member else self.path.name

    @property
    def where(self) -> str:
        return f"{self.path}/{self.member}" if self.member else str(self.path)


@dataclass
class FrontMatter:
    fields: dict[str, Any] = field(default_factory=dict)
    end: int = 0  # offset where the body starts


class FilesConnector(BaseConnector[FileItem]):
    kind = "files"
    sync_interval = timedelta(hours=1)

    def __init__(self, ctx: LoadContext) -> None:
        super().__init__(ctx)
        # JSONL / JSON export files met while walking a folder (see ``is_export_file``).
        self.exports: list[Path] = []
        # The id paths of the other files met in a folder or zip, and of those that gave
        # documents: the rest keep what they had (:mod:`.found`).
        self.met: set[str] = set()
        self.read: set[str] = set()

    def fetch(self, path: Path) -> Iterator[FileItem]:
        if path.is_file():
            if path.suffix.lower() in ARCHIVE_SUFFIXES:
                yield from self._archive(path, path)
            else:
                yield from self._check(FileItem(path, path.parent))
            return
        for child in sorted(path.rglob("*")):
            rel = child.relative_to(path)
            if any(part.startswith(".") for part in rel.parts):
                continue  # hidden files and folders (.git, .DS_Store...) are not documents
            if child.is_dir():
                continue
            if is_export_file(child):
                self.exports.append(child)  # loaded by its own connector (load_path)
                continue
            suffix = child.suffix.lower()
            if suffix in ARCHIVE_SUFFIXES:
                yield from self._archive(child, path)
                continue
            self.met.add(rel.as_posix())
            if suffix not in SUFFIXES:
                self.ctx.skip(child, f"unsupported file type {child.suffix or '(none)'}")
                continue
            yield from self._check(FileItem(child, path))

    def _archive(self, archive: Path, root: Path) -> Iterator[FileItem]:
        prefix = "" if archive == root else f"{archive.relative_to(root).as_posix()}/"
        failed = len(self.ctx.failures)

        def accept(name: str, where: str) -> bool:
            self.met.add(prefix + name)
            return self._accept_member(name, where)

        for name, data, mtime in archive_members(archive, self.ctx, accept):
            yield FileItem(archive, root, name, data, mtime)
        if any(where == str(archive) for where, _ in self.ctx.failures[failed:]):
            # Refused or unreadable as a whole: its documents stay as they were.
            self.met.add(prefix.rstrip("/"))

    def _accept_member(self, name: str, where: str) -> bool:
        suffix = _suffix(name)
        if suffix in ARCHIVE_SUFFIXES:
            self.ctx.skip(where, "nested archive: not read")
        elif is_export_file(name):
            self.ctx.skip(where, "JSON export inside an archive: not read (unzip it)")
        elif suffix not in SUFFIXES:
            self.ctx.skip(where, f"unsupported file type {suffix or '(none)'}")
        else:
            return True
        return False

    def _check(self, item: FileItem) -> Iterator[FileItem]:
        try:
            size = item.path.stat().st_size
        except OSError as exc:
            self.ctx.fail(item.path, f"unreadable: {exc.strerror or exc}")
            return
        limit = self.ctx.settings.max_file_bytes
        if size > limit:
            self.ctx.skip(item.path, f"too large: {size} bytes > max_file_bytes {limit}")
            return
        yield item

    def transform(self, raw: FileItem) -> list[Record]:
        records = [
            record
            for doc in self.documents(raw)
            for record in document_records(doc, self.ctx.settings)
        ]
        if records:
            self.read.add(raw.rel)
        return records

    def unread(self) -> set[str]:
        """Files met that gave no document this time (failed, skipped, an archive
        refused as a whole)."""
        return self.met - self.read

    def document(self, raw: FileItem) -> SourceDocument | None:
        """The (first) document of one file; a bad file is reported and gives ``None``."""
        docs = self.documents(raw)
        return docs[0] if docs else None

    def documents(self, raw: FileItem) -> list[SourceDocument]:
        """Parse one file (a workbook gives one document per sheet); a bad file is
        reported in the context and gives none."""
        suffix = _suffix(raw.name)
        data = self._read(raw)
        if data is None:
            return []
        if suffix in PAGE_SUFFIXES or suffix in CSV_SUFFIXES:
            text = decode_text(data, raw.where, self.ctx)
            if text is None:
                return []
            if suffix in PAGE_SUFFIXES:
                doc = self._page(raw, text, suffix)
                return [doc] if doc else []
            return self._converted(
                raw,
                lambda: converters.convert_csv(
                    text, suffix == ".tsv", self.ctx.connector_settings.table_max_rows
                ),
                data,
            )
        if suffix in PDF_SUFFIXES:
            return self._converted(raw, lambda: converters.convert_pdf(data), data)
        if suffix in DOCX_SUFFIXES:
            return self._converted(raw, lambda: converters.convert_docx(data), data)
        if suffix in PPTX_SUFFIXES:
            return self._converted(raw, lambda: converters.convert_pptx(data), data)
        if suffix in XLSX_SUFFIXES:
            max_rows = self.ctx.connector_settings.table_max_rows
            return self._converted(raw, lambda: converters.convert_xlsx(data, max_rows), data)
        self.ctx.skip(raw.where, f"unsupported file type {suffix or '(none)'}")
        return []

    def _read(self, raw: FileItem) -> bytes | None:
        if raw.data is not None:
            return raw.data
        try:
            return raw.path.read_bytes()
        except OSError as exc:
            self.ctx.fail(raw.where, f"unreadable: {exc.strerror or exc}")
            return None

    def _mtime(self, raw: FileItem) -> datetime:
        return raw.mtime or mtime_of(raw.path)

    def _page(self, raw: FileItem, text: str, suffix: str) -> SourceDocument | None:
        front = parse_front_matter(text) if suffix not in HTML_SUFFIXES else FrontMatter()
        meta = front.fields
        rel = raw.rel
        html_title = None
        links: list[tuple[int, str]] = []
        if suffix in HTML_SUFFIXES:
            page = html_page(text, rel)
            parent, headings, html_title, links = page.text, page.headings, page.title, page.links
            body_start = 0
        else:
            parent, body_start = text, front.end
            headings = markdown_headings(text) if suffix in MARKDOWN_SUFFIXES else []
            headings = [h for h in headings if h.start >= body_start]
            if suffix in MARKDOWN_SUFFIXES:
                links = markdown_links(text, rel, body_start)
        if not parent[body_start:].strip():
            self.ctx.skip(raw.where, "empty document")
            return None
        first_h1 = _page_h1(headings, html_title) if html_title else _first_heading(headings)
        title = str(meta.get("title") or first_h1 or html_title or PurePosixPath(raw.name).stem)
        updated = parse_time(meta.get("updated")) or parse_time(meta.get("date"))
        mtime = self._mtime(raw)
        extra = {k: v for k, v in meta.items() if k not in _CONSUMED_KEYS}
        extra["path"] = rel
        return SourceDocument(
            doc_id=f"{self.ctx.source}:{rel}",
            source=self.ctx.source,
            text=parent,
            title=title,
            kind="section",
            timestamp=updated or mtime,
            source_version=str(meta.get("version") or mtime.isoformat()),
            acl=as_list(meta.get("acl")) or list(self.ctx.acl),
            headings=headings,
            body_start=body_start,
            author=str(meta["author"]) if meta.get("author") else None,
            entities=dedupe(as_list(meta.get("entities"))),
            url=str(meta["url"]) if meta.get("url") else None,
            project=str(meta.get("project") or self.ctx.project or "") or None,
            extra=extra,
            hash_basis=text,
            links=links,
        )

    def _converted(self, raw: FileItem, convert: Any, data: bytes) -> list[SourceDocument]:
        """Documents from a converter; its failure fails this file alone."""
        try:
            parts: list[Converted] = convert()
        except Exception as exc:  # noqa: BLE001 - a converter bug or a corrupt file
            self.ctx.fail(raw.where, f"could not convert: {type(exc).__name__}: {exc}")
            return []
        rel = raw.rel
        mtime = self._mtime(raw)
        stem = PurePosixPath(raw.name).stem
        digest = hashlib.sha256(data).hexdigest()
        docs: list[SourceDocument] = []
        for part in parts:
            for where, reason in part.skipped:
                self.ctx.skip(f"{raw.where} {where}".rstrip(), reason)
            if not part.text.strip():
                self.ctx.skip(raw.where, "no extractable text")
                continue
            native = rel if part.part is None else f"{rel}/{part.part.replace('#', '%23')}"
            extra = dict(part.extra)
            extra["path"] = rel
            # The hash covers the file's bytes (a metadata-only edit is an update too) and
            # what was extracted from them (a better converter re-indexes), per part.
            basis = f"sha256:{digest}\n{part.part or ''}\n{part.text}"
            docs.append(
                SourceDocument(
                    doc_id=f"{self.ctx.source}:{native}",
                    source=self.ctx.source,
                    text=part.text,
                    title=part.title or _first_h1(part) or stem,
                    kind=part.kind,
                    timestamp=part.updated or mtime,
                    source_version=mtime.isoformat(),
                    acl=list(self.ctx.acl),
                    headings=part.headings,
                    author=part.author,
                    project=self.ctx.project,
                    extra=extra,
                    hash_basis=basis,
                    regions=part.regions,
                    table=part.table,
                )
            )
        if not parts:
            self.ctx.skip(raw.where, "no extractable text")
        return docs


def _first_heading(headings: list[Any]) -> str | None:
    return next((h.title for h in headings if h.level == 1 and h.title), None)


# "1. Definitions", "2.3 Limits": a numbered heading opens a section of the page.
_NUMBERED = re.compile(r"^\d+(?:\.\d+)*\.?\s")


def _page_h1(headings: list[Any], html_title: str) -> str | None:
    """An HTML page's own level-1 heading, which names it better than a ``<title>`` that
    adds the site's name ("reprlib — … — Python 3.11 documentation"). A page whose
    level-1 headings are several, or numbered ("1. Definitions"), uses them for its
    sections, unless its ``<title>`` opens with the first ("8. Compound statements —
    Python 3.11 documentation"): then the ``<title>`` names it."""
    h1 = [h.title for h in headings if h.level == 1 and h.title]
    if not h1:
        return None
    if html_title.casefold().startswith(h1[0].casefold()):
        return h1[0]
    if len(h1) == 1 and not _NUMBERED.match(h1[0]):
        return h1[0]
    return None


def _first_h1(part: Converted) -> str | None:
    """The first level-1 heading that is text of the document (not a ``Slide n`` name)."""
    return next(
        (h.title for h in part.headings if h.level == 1 and h.title and h.end > h.start), None
    )


def markdown_links(text: str, doc_path: str, start: int = 0) -> list[tuple[int, str]]:
    """(offset, resolved target) of the inline links of a Markdown text (first of each)."""
    seen: set[str] = set()
    links: list[tuple[int, str]] = []
    for match in _MD_LINK_RE.finditer(text, start):
        target = resolve_link(match.group(1), doc_path)
        if target is not None and target not in seen:
            seen.add(target)
            links.append((match.start(), target))
    return links


def decode_text(data: bytes, where: str, ctx: LoadContext) -> str | None:
    """Decoded text, or ``None`` with the reason recorded (binary content in what should
    be a text file, or not UTF-8: a failure)."""
    if b"\x00" in data:
        ctx.fail(where, "binary content (NUL bytes)")
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        ctx.fail(where, f"undecodable: not UTF-8 ({exc.reason} at byte {exc.start})")
        return None


def read_text(path: Path, ctx: LoadContext) -> str | None:
    """Decoded text of a file, or ``None`` with the reason recorded (unreadable /
    binary / undecodable)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        ctx.fail(path, f"unreadable: {exc.strerror or exc}")
        return None
    return decode_text(data, str(path), ctx)


_FM_CLOSE_RE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)
# Every scalar as the string it is written as (``version: 1.10`` stays "1.10", ``no``
# stays "no", a date stays "2024-03-04"); lists and mappings as YAML reads them.
_FM_LOADER: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)


def parse_front_matter(text: str) -> FrontMatter:
    """A leading ``---`` ... ``---`` (or ``...``) YAML mapping, read by PyYAML with every
    scalar kept as its string; a block PyYAML rejects is read as plain ``key: value``
    lines. Anything else (no closing line, not a mapping) is not front matter and is
    left in the body."""
    first = text.split("\n", 1)[0].rstrip("\r")
    if first.strip() != "---" or "\n" not in text:
        return FrontMatter()
    body_at = text.index("\n") + 1
    close = _FM_CLOSE_RE.search(text, body_at)
    if close is None:
        return FrontMatter()
    try:
        data = yaml.load(text[body_at : close.start()], Loader=_FM_LOADER)  # noqa: S506
    except yaml.YAMLError:
        # Not valid YAML (``title: Deploy: EU``): read it as the plain ``key: value`` lines
        # it most likely is, as before PyYAML, so an ``acl:`` line is never lost.
        return _lenient_front_matter(text)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return FrontMatter()
    end = close.end()
    if end < len(text) and text[end] == "\n":
        end += 1
    fields = {str(k).lower(): _fm_value(str(k).lower(), v) for k, v in data.items()}
    return FrontMatter(fields, end)


def _fm_value(key: str, value: Any) -> Any:
    if isinstance(value, list):
        return [v for v in value if v is not None and v != ""]
    if value is None:
        return ""
    if key in _LIST_KEYS and isinstance(value, str):
        return as_list(value)
    return value


_FM_LINE_RE = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$")
_FM_ITEM_RE = re.compile(r"^\s+-\s+(.*?)\s*$|^-\s+(.*?)\s*$")


def _lenient_front_matter(text: str) -> FrontMatter:
    """``key: value`` lines (lists as ``[a, b]``, ``a, b`` or ``- item`` lines), for a
    block that is not valid YAML."""
    lines = text.splitlines(keepends=True)
    fields: dict[str, Any] = {}
    pos = len(lines[0])
    last_key: str | None = None
    for line in lines[1:]:
        pos += len(line)
        body = line.rstrip("\r\n")
        if body.strip() in {"---", "..."}:
            return FrontMatter({k: _lenient_value(k, v) for k, v in fields.items()}, pos)
        item = _FM_ITEM_RE.match(body)
        if item and last_key is not None:
            previous = fields[last_key]
            values = previous if isinstance(previous, list) else as_list(previous)
            values.append((item.group(1) or item.group(2) or "").strip("'\""))
            fields[last_key] = values
            continue
        match = _FM_LINE_RE.match(body)
        if match:
            last_key = match.group(1).lower()
            fields[last_key] = match.group(2)
        elif body.strip() and not body.lstrip().startswith("#"):
            return FrontMatter()  # not a key/value block: treat the file as plain body
    return FrontMatter()  # never closed


def _lenient_value(key: str, value: Any) -> Any:
    if isinstance(value, list):
        return value
    if key in _LIST_KEYS:
        return as_list(value)
    text = str(value)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text.startswith("[") and text.endswith("]"):
        return as_list(text)
    return text
