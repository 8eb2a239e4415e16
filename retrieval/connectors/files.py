"""Files connector: a folder (recursive) or a single .md / .markdown / .txt / .html / .htm.

Parent text (what chunk offsets index): for Markdown and text, the decoded file content
itself (front matter included but never chunked); for HTML, the text extracted by the
stdlib parser with h1-h6 kept as headings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from retrieval.chunking import Heading, markdown_headings
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
from retrieval.records import Record

MARKDOWN_SUFFIXES = {".md", ".markdown"}
TEXT_SUFFIXES = {".txt"}
HTML_SUFFIXES = {".html", ".htm"}
SUFFIXES = MARKDOWN_SUFFIXES | TEXT_SUFFIXES | HTML_SUFFIXES

# Front matter keys that become list values / are consumed by the connector itself.
_LIST_KEYS = {"acl", "entities", "tags", "aliases"}
_CONSUMED_KEYS = {"title", "acl", "author", "updated", "date", "entities", "project", "url"}


def is_export_file(path: Path) -> bool:
    """A .jsonl / .jsonl.gz / .json file: a collection for another connector, not a page."""
    name = path.name.lower()
    return name.endswith((".jsonl", ".jsonl.gz", ".json"))


@dataclass(frozen=True)
class FileItem:
    path: Path
    root: Path  # ids are relative to it


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

    def fetch(self, path: Path) -> Iterator[FileItem]:
        if path.is_file():
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
            if child.suffix.lower() not in SUFFIXES:
                self.ctx.skip(child, f"unsupported file type {child.suffix or '(none)'}")
                continue
            yield from self._check(FileItem(child, path))

    def _check(self, item: FileItem) -> Iterator[FileItem]:
        try:
            size = item.path.stat().st_size
        except OSError as exc:
            self.ctx.fail(item.path, f"unreadable: {exc.strerror or exc}")
            return
        limit = self.ctx.settings.max_file_bytes
        if size > limit:
            self.ctx.fail(item.path, f"too large: {size} bytes > max_file_bytes {limit}")
            return
        yield item

    def transform(self, raw: FileItem) -> list[Record]:
        doc = self.document(raw)
        return document_records(doc, self.ctx.settings) if doc else []

    def document(self, raw: FileItem) -> SourceDocument | None:
        """Parse one file; a bad file is reported in the context and gives ``None``."""
        text = read_text(raw.path, self.ctx)
        if text is None:
            return None
        suffix = raw.path.suffix.lower()
        front = parse_front_matter(text) if suffix not in HTML_SUFFIXES else FrontMatter()
        meta = front.fields
        html_title = None
        if suffix in HTML_SUFFIXES:
            parent, headings, html_title = html_to_text(text)
            body_start = 0
        else:
            parent, body_start = text, front.end
            headings = markdown_headings(text) if suffix in MARKDOWN_SUFFIXES else []
            headings = [h for h in headings if h.start >= body_start]
        if not parent[body_start:].strip():
            self.ctx.skip(raw.path, "empty document")
            return None
        first_h1 = next((h.title for h in headings if h.level == 1 and h.title), None)
        title = str(meta.get("title") or first_h1 or html_title or raw.path.stem)
        rel = raw.path.relative_to(raw.root).as_posix()
        updated = parse_time(meta.get("updated")) or parse_time(meta.get("date"))
        mtime = mtime_of(raw.path)
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
        )


def read_text(path: Path, ctx: LoadContext) -> str | None:
    """Decoded text, or ``None`` with the reason recorded (unreadable / binary / undecodable)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        ctx.fail(path, f"unreadable: {exc.strerror or exc}")
        return None
    if b"\x00" in data:
        ctx.fail(path, "binary content (NUL bytes)")
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        ctx.fail(path, f"undecodable: not UTF-8 ({exc.reason} at byte {exc.start})")
        return None


_FM_LINE_RE = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$")
_FM_ITEM_RE = re.compile(r"^\s+-\s+(.*?)\s*$|^-\s+(.*?)\s*$")


def parse_front_matter(text: str) -> FrontMatter:
    """A leading ``---`` block of ``key: value`` lines (lists as ``[a, b]``, ``a, b`` or
    ``- item`` lines). Anything else is not front matter and is left in the body."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").strip() != "---":
        return FrontMatter()
    fields: dict[str, Any] = {}
    pos = len(lines[0])
    last_key: str | None = None
    for line in lines[1:]:
        pos += len(line)
        body = line.rstrip("\r\n")
        if body.strip() in {"---", "..."}:
            return FrontMatter({k: _fm_value(k, v) for k, v in fields.items()}, pos)
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


def _fm_value(key: str, value: Any) -> Any:
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


_BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "dd", "div", "dl", "dt", "fieldset",
    "figcaption", "figure", "footer", "form", "header", "hr", "li", "main", "nav", "ol",
    "p", "pre", "section", "table", "tbody", "thead", "tfoot", "tr", "ul",
}  # fmt: skip
_SKIP_TAGS = {"script", "style", "noscript", "template", "head", "svg"}
_HEADING_TAGS = {f"h{i}": i for i in range(1, 7)}
_SPACE_RE = re.compile(r"\s+")


class _HtmlText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.length = 0
        self.headings: list[Heading] = []
        self.title: str | None = None
        self._skip_depth = 0
        self._in_title = False
        self._title_parts: list[str] = []
        self._pre_depth = 0
        self._open_heading: tuple[int, int] | None = None  # (level, start)

    # -- output helpers --
    def _tail(self, n: int) -> str:
        return "".join(self.parts[-4:])[-n:]

    def _emit(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.length += len(text)

    def _trim_trailing_spaces(self) -> None:
        while self.parts and self.parts[-1].endswith(" "):
            last = self.parts.pop()
            self.length -= len(last)
            kept = last.rstrip(" ")
            self._emit(kept)
            if kept:
                break

    def _break(self, newlines: int = 2) -> None:
        self._trim_trailing_spaces()
        if not self.parts:
            return
        have = len(self._tail(newlines)) - len(self._tail(newlines).rstrip("\n"))
        self._emit("\n" * max(0, newlines - have))

    # -- parser callbacks --
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in _SKIP_TAGS:
            self._skip_depth += 1
            return
        if self._skip_depth:
            return
        if tag in _HEADING_TAGS:
            self._break()
            self._open_heading = (_HEADING_TAGS[tag], self.length)
        elif tag in _BLOCK_TAGS:
            self._break()
            if tag == "pre":
                self._pre_depth += 1
        elif tag == "br":
            self._break(1)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            self.title = " ".join("".join(self._title_parts).split()) or None
        if tag in _SKIP_TAGS:
            self._skip_depth = max(0, self._skip_depth - 1)
            return
        if self._skip_depth:
            return
        if tag in _HEADING_TAGS and self._open_heading:
            self._trim_trailing_spaces()
            level, start = self._open_heading
            title = "".join(self.parts)[start:].strip()
            if title:
                self.headings.append(Heading(level, title, start, self.length))
            self._open_heading = None
            self._break()
        elif tag in _BLOCK_TAGS:
            if tag == "pre":
                self._pre_depth = max(0, self._pre_depth - 1)
            self._break()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title_parts.append(data)
        if self._skip_depth:
            return
        if self._pre_depth:
            self._emit(data)
            return
        text = _SPACE_RE.sub(" ", data)
        if not self.parts or self._tail(1) in {"\n", " "}:
            text = text.lstrip(" ")
        self._emit(text)


def html_to_text(html: str) -> tuple[str, list[Heading], str | None]:
    """(text, headings with offsets into that text, <title>) from an HTML document."""
    parser = _HtmlText()
    parser.feed(html)
    parser.close()
    parser._trim_trailing_spaces()
    text = "".join(parser.parts)
    return text, parser.headings, parser.title
