"""What every connector shares: the load context, the connector contract, and the one
place where a parsed document becomes :class:`~retrieval.records.Record` chunks.

A connector answers three questions only (DESIGN.md section 1):

* ``fetch(path)``      — iterate raw items from a path (reporting bad ones in the context);
* ``transform(raw)``   — turn one raw item into records;
* ``sync_interval``    — how often to re-sync by default (``interval_for`` per channel/space).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from retrieval.chunking import (
    WORDS,
    EmbedBudget,
    Heading,
    TokenIndex,
    chunk_text,
    embed_budget,
    section_cap,
    split_span,
)
from retrieval.chunking import embed_text as chunk_embed_text
from retrieval.records import ALL_LEGS, PUBLIC_GROUP, Meta, Record, chunk_id, content_hash
from retrieval.settings import RetrievalSettings

PROJECT = "project"  # metadata key: the project named at load time or in front matter
LEXICAL_ONLY = ["lexical"]


class ConnectorSettings(BaseSettings):
    """Write-time gates of the chat connector (env prefix ``WAYPOINT_``)."""

    model_config = SettingsConfigDict(env_prefix="WAYPOINT_", extra="ignore")

    burst_min_chars: int = 200
    burst_min_mean_idf: float = 4.0
    # Reactions lower the IDF threshold: per reaction, up to a cap.
    burst_reaction_bonus: float = 0.1
    burst_reaction_bonus_max: float = 0.5
    # A thread is distilled and embedded only if one message is substantive: not filler
    # and at least this mean IDF (lower than the burst gate: questions are short).
    thread_min_mean_idf: float = 2.0
    # Archives (.zip): refused past these (zip bombs); members are also held to
    # ``max_file_bytes`` each.
    zip_max_members: int = 20_000
    zip_max_total_bytes: int = 2 * 1024**3  # sum of the members' uncompressed sizes
    zip_max_ratio: float = 200.0  # uncompressed / compressed size of one member
    # Spreadsheets: rows read per sheet (the rest is reported as skipped).
    table_max_rows: int = 200_000
    # Files of a folder parsed by this many processes (0: one per core, when the program
    # may start workers, see connectors/parallel.py; 1: in the loading process).
    ingest_workers: int = Field(default=0, ge=0)
    # Git repositories: a file larger than this is skipped (generated code, vendored
    # bundles, data files); the first bytes checked for NUL to call a file binary.
    git_max_file_bytes: int = 1_000_000
    git_binary_probe_bytes: int = 8000


@dataclass
class LoadContext:
    """Per-load defaults and the running account of what was not ingested."""

    source: str
    acl: list[str] = field(default_factory=lambda: [PUBLIC_GROUP])
    project: str | None = None
    settings: RetrievalSettings = field(default_factory=RetrievalSettings)
    connector_settings: ConnectorSettings = field(default_factory=ConnectorSettings)
    failures: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def fail(self, where: str | Path, reason: str) -> None:
        self.failures.append((str(where), reason))

    def skip(self, where: str | Path, reason: str) -> None:
        self.skipped.append((str(where), reason))


RawT = TypeVar("RawT")


class Connector(Protocol[RawT]):
    kind: str
    sync_interval: timedelta

    def fetch(self, path: Path) -> Iterator[RawT]: ...

    def transform(self, raw: RawT) -> list[Record]: ...

    def interval_for(self, key: str) -> timedelta: ...


class BaseConnector(Generic[RawT]):
    """Holds the context; subclasses implement ``fetch`` and ``transform``."""

    kind = "base"
    sync_interval = timedelta(hours=1)
    # Per channel / space overrides of the default interval.
    intervals: dict[str, timedelta] = {}

    def __init__(self, ctx: LoadContext) -> None:
        self.ctx = ctx

    def interval_for(self, key: str) -> timedelta:
        return self.intervals.get(key, self.sync_interval)

    def fetch(self, path: Path) -> Iterator[RawT]:
        raise NotImplementedError

    def transform(self, raw: RawT) -> list[Record]:
        raise NotImplementedError


@dataclass(frozen=True)
class Region:
    """A part of the parent text no chunk crosses (a PDF page, a slide); ``meta`` is
    copied into the metadata of every chunk inside it (``{"page": 12}``)."""

    start: int
    end: int
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Section:
    """A unit of the parent text chunked on its own (a code definition): never merged
    with its neighbours; over the cap it is cut at its ``parts`` when it has them (a
    class at its members), else split like any text. ``symbols`` go to the metadata of
    its chunks (``Meta.SYMBOLS``)."""

    start: int
    end: int
    heading_path: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()
    parts: tuple[Section, ...] = ()


@dataclass(frozen=True)
class TableLayout:
    """A table document: ``text[header[0]:header[1]]`` is the header line and each row
    ``(start, end, row number)`` one line. Chunks hold whole rows (the first chunk opens
    with the header; the others carry it in their embed text)."""

    header: tuple[int, int]
    rows: Sequence[tuple[int, int, int]]
    heading_path: tuple[str, ...] = ()


@dataclass
class SourceDocument:
    """A parsed document before chunking. ``text`` is the parent text chunk offsets index."""

    doc_id: str
    source: str
    text: str
    title: str
    kind: str
    timestamp: datetime
    source_version: str
    acl: list[str]
    headings: Sequence[Heading] = ()
    body_start: int = 0  # where chunking starts (after front matter, which is never chunked)
    author: str | None = None
    entities: list[str] = field(default_factory=list)
    url: str | None = None
    project: str | None = None
    legs: list[str] = field(default_factory=lambda: list(ALL_LEGS))
    extra: dict[str, Any] = field(default_factory=dict)
    # What the content hash covers when it differs from ``text`` (e.g. front matter too).
    hash_basis: str | None = None
    # Pages / slides no chunk crosses (empty: the whole text is one region).
    regions: Sequence[Region] = ()
    # A spreadsheet / CSV table: chunked by whole rows instead of headings.
    table: TableLayout | None = None
    # Code: explicit sections (definitions) instead of headings.
    sections: Sequence[Section] = ()
    # Outgoing links: (offset in ``text``, target); each chunk's are in its metadata.
    links: Sequence[tuple[int, str]] = ()

    @property
    def content_hash(self) -> str:
        # Every chunk record carries it: hashed once per document, not once per chunk.
        basis = self.hash_basis if self.hash_basis is not None else self.text
        return _document_hash(basis, tuple(sorted(self.acl)))


def document_hash(basis: str, acl: Sequence[str]) -> str:
    """sha256 of the document's source text and its resolved ACL: an ACL change must never
    be skipped as "unchanged" by the indexer."""
    return _document_hash(basis, tuple(sorted(acl)))


@lru_cache(maxsize=64)
def _document_hash(basis: str, acl: tuple[str, ...]) -> str:
    return content_hash(basis + "\n\x00acl=" + ",".join(acl))


def make_record(
    doc: SourceDocument,
    index: int,
    start: int,
    end: int,
    heading_path: Sequence[str] = (),
    *,
    kind: str | None = None,
    legs: Sequence[str] | None = None,
    author: str | None = None,
    embed_text: str | None = None,
    extra: dict[str, Any] | None = None,
) -> Record:
    """One chunk record of ``doc`` covering ``doc.text[start:end]``."""
    text = doc.text[start:end]
    path = list(heading_path)
    metadata: dict[str, Any] = dict(doc.extra)
    metadata.update(
        {
            Meta.KIND: kind or doc.kind,
            Meta.TITLE: doc.title,
            Meta.HEADING_PATH: path,
            Meta.CHAR_START: start,
            Meta.CHAR_END: end,
            Meta.CONTENT_HASH: doc.content_hash,
            Meta.SOURCE_VERSION: doc.source_version,
            Meta.ACL: list(doc.acl),
            Meta.DOC_ID: doc.doc_id,
            Meta.CHUNK_INDEX: index,
            Meta.LEGS: list(legs if legs is not None else doc.legs),
            Meta.ENTITIES: list(doc.entities),
        }
    )
    if embed_text is None:
        embed_text = prefixed_embed_text(doc.title, path, text)
    metadata[Meta.EMBED_TEXT] = embed_text
    if author or doc.author:
        metadata[Meta.AUTHOR] = author or doc.author
    if doc.url:
        metadata[Meta.URL] = doc.url
    if doc.project:
        metadata[PROJECT] = doc.project
    if extra:
        metadata.update(extra)
    return Record(
        id=chunk_id(doc.doc_id, index),
        source=doc.source,
        text=text,
        timestamp=doc.timestamp,
        metadata=metadata,
    )


def prefixed_embed_text(
    title: str, heading_path: Sequence[str], text: str, budget: EmbedBudget | None = None
) -> str:
    """``"Title > Heading: text"``, leaving out the title / headings the chunk already
    opens with (a section chunk starts with its own heading line)."""
    return chunk_embed_text(title, heading_path, text, budget)


def chunk_budget(settings: RetrievalSettings) -> EmbedBudget | None:
    """The embedding model's tokenizer and limit, which chunk sizes are counted in."""
    return embed_budget(settings.embedding_model)


def document_records(doc: SourceDocument, settings: RetrievalSettings) -> list[Record]:
    """Chunk ``doc`` on its headings under the token cap (in the embedding model's tokens,
    its prefixed embed text within what the model reads); one record per chunk. A chunk
    never crosses a region (page, slide); a table is chunked by whole rows."""
    budget = chunk_budget(settings)
    spans: list[_Span]
    if doc.table is not None:
        spans = _table_spans(doc, settings, budget)
    elif doc.sections:
        spans = _section_spans(doc, settings, budget)
    elif doc.regions:
        spans = _region_spans(doc, settings, budget)
    else:
        chunks = chunk_text(
            doc.text,
            doc.headings,
            settings.chunk_tokens,
            settings.chunk_overlap_tokens,
            body_start=doc.body_start,
            title=doc.title,
            budget=budget,
        )
        spans = [_Span(c.start, c.end, c.heading_path) for c in chunks]
    links = sorted(doc.links)
    records: list[Record] = []
    for i, span in enumerate(spans):
        extra = dict(span.meta)
        if links:
            lo = bisect_left(links, (span.start, ""))
            hi = bisect_left(links, (span.end, ""))
            extra[Meta.LINKS] = list(dict.fromkeys(target for _, target in links[lo:hi]))
        embed_input = span.embed_input or doc.text[span.start : span.end]
        records.append(
            make_record(
                doc,
                i,
                span.start,
                span.end,
                span.heading_path,
                embed_text=chunk_embed_text(doc.title, span.heading_path, embed_input, budget),
                extra=extra,
            )
        )
    return records


@dataclass
class _Span:
    start: int
    end: int
    heading_path: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    embed_input: str | None = None  # what is embedded (prefixed) when not the slice itself


def _region_spans(
    doc: SourceDocument, settings: RetrievalSettings, budget: EmbedBudget | None
) -> list[_Span]:
    """Sections on headings as :func:`~retrieval.chunking.chunk_text` makes them, cut
    again at every region boundary; the heading path runs on across regions (a chapter
    goes on over pages). A heading with no body before the region's end merges into the
    next section of the same region."""
    text = doc.text
    index = TokenIndex(text, budget.counter if budget else WORDS)
    ordered = sorted(doc.headings, key=lambda h: h.start)
    stack: list[Heading] = []
    spans: list[_Span] = []
    h = 0
    for region in sorted(doc.regions, key=lambda r: r.start):
        start, end = max(region.start, doc.body_start), region.end
        if start >= end:
            continue
        while h < len(ordered) and ordered[h].start < start:
            _push(stack, ordered[h])
            h += 1
        inside: list[Heading] = []
        while h < len(ordered) and ordered[h].start < end:
            inside.append(ordered[h])
            h += 1
        for s, e, path in _sections_within(text, inside, start, end, stack):
            cap = section_cap(settings.chunk_tokens, doc.title, path, budget)
            for cs, ce in split_span(text, s, e, cap, settings.chunk_overlap_tokens, index=index):
                spans.append(_Span(cs, ce, path, dict(region.meta)))
    return spans


def _section_spans(
    doc: SourceDocument, settings: RetrievalSettings, budget: EmbedBudget | None
) -> list[_Span]:
    """Each section whole when it fits its cap; else cut at its parts, else split."""
    text = doc.text
    index = TokenIndex(text, budget.counter if budget else WORDS)
    spans: list[_Span] = []

    def add(section: Section) -> None:
        cap = section_cap(settings.chunk_tokens, doc.title, section.heading_path, budget)
        meta: dict[str, Any] = {Meta.SYMBOLS: list(section.symbols)} if section.symbols else {}
        if section.parts and index.count(section.start, section.end) > cap:
            for part in section.parts:
                add(part)
            return
        for s, e in split_span(
            text, section.start, section.end, cap, settings.chunk_overlap_tokens, index=index
        ):
            spans.append(_Span(s, e, section.heading_path, dict(meta)))

    for section in sorted(doc.sections, key=lambda x: x.start):
        if section.end > doc.body_start:
            add(section)
    return spans


def _push(stack: list[Heading], heading: Heading) -> None:
    while stack and stack[-1].level >= heading.level:
        stack.pop()
    stack.append(heading)


def _sections_within(
    text: str, headings: Sequence[Heading], start: int, end: int, stack: list[Heading]
) -> list[tuple[int, int, tuple[str, ...]]]:
    """``text[start:end]`` cut at ``headings`` (all inside it); ``stack`` is the heading
    path in force at ``start`` and is left as the path in force at ``end``."""
    sections: list[tuple[int, int, tuple[str, ...]]] = []
    first = headings[0].start if headings else end
    if text[start:first].strip():
        sections.append((start, first, tuple(x.title for x in stack)))
    pending: int | None = None
    for i, heading in enumerate(headings):
        _push(stack, heading)
        stop = headings[i + 1].start if i + 1 < len(headings) else end
        begin = heading.start if pending is None else pending
        if not text[heading.end : stop].strip():
            pending = begin
            continue
        pending = None
        sections.append((begin, stop, tuple(x.title for x in stack)))
    if pending is not None and text[pending:end].strip():
        if sections:
            s, _, path = sections[-1]
            sections[-1] = (s, end, path)
        else:
            sections.append((pending, end, tuple(x.title for x in stack)))
    return sections


def _table_spans(
    doc: SourceDocument, settings: RetrievalSettings, budget: EmbedBudget | None
) -> list[_Span]:
    """Whole rows packed up to the cap, the header's tokens counted in every chunk (the
    first chunk holds it, the others embed it). A row over the cap is a chunk alone."""
    layout = doc.table
    assert layout is not None
    text = doc.text
    index = TokenIndex(text, budget.counter if budget else WORDS)
    path = layout.heading_path
    h_start, h_end = layout.header
    header = text[h_start:h_end]
    section = section_cap(settings.chunk_tokens, doc.title, path, budget)
    cap = max(1, section - index.count(h_start, h_end) - 1)
    spans: list[_Span] = []
    group: list[tuple[int, int, int]] = []
    tokens = 0

    def flush() -> None:
        if not group:
            return
        first_chunk = not spans
        start = h_start if first_chunk else group[0][0]
        end = group[-1][1]
        meta = {Meta.ROW_START: group[0][2], Meta.ROW_END: group[-1][2]}
        embed = None if first_chunk else f"{header}\n{text[start:end]}"
        spans.append(_Span(start, end, path, meta, embed))

    for row in layout.rows:
        n = index.count(row[0], row[1])
        if group and tokens + n > cap:
            flush()
            group, tokens = [], 0
        group.append(row)
        tokens += n
    flush()
    if not spans and header.strip():  # a header without rows is still a document
        spans.append(_Span(h_start, h_end, path))
    return spans


# -- small parsing helpers shared by connectors --

_EPOCH_RE = re.compile(r"^\d{9,11}(\.\d+)?$")


def parse_time(value: Any) -> datetime | None:
    """ISO-8601 date/datetime (``Z``, ``+0000`` accepted) or epoch seconds -> aware UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, int | float) or (isinstance(value, str) and _EPOCH_RE.match(value)):
        return datetime.fromtimestamp(float(value), tz=UTC)
    else:
        text = str(value).strip()
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def mtime_of(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)


def as_list(value: Any) -> list[str]:
    """``[a, b]`` / ``"a, b"`` / ``["a", "b"]`` -> ``["a", "b"]`` (empty items dropped)."""
    if value is None:
        return []
    if isinstance(value, list | tuple | set):
        return [str(v).strip() for v in value if str(v).strip()]
    text = str(value).strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return [item.strip().strip("'\"") for item in text.split(",") if item.strip().strip("'\"")]


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (exports omit or null fields)."""
    return value if isinstance(value, dict) else {}


def dedupe(items: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.lower()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out
