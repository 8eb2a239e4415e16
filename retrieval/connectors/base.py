"""What every connector shares: the load context, the connector contract, and the one
place where a parsed document becomes :class:`~retrieval.records.Record` chunks.

A connector answers three questions only (DESIGN.md section 1):

* ``fetch(path)``      — iterate raw items from a path (reporting bad ones in the context);
* ``transform(raw)``   — turn one raw item into records;
* ``sync_interval``    — how often to re-sync by default (``interval_for`` per channel/space).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from pydantic_settings import BaseSettings, SettingsConfigDict

from retrieval.chunking import EmbedBudget, Heading, chunk_text, embed_budget
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

    @property
    def content_hash(self) -> str:
        return document_hash(
            self.hash_basis if self.hash_basis is not None else self.text, self.acl
        )


def document_hash(basis: str, acl: Sequence[str]) -> str:
    """sha256 of the document's source text and its resolved ACL: an ACL change must never
    be skipped as "unchanged" by the indexer."""
    return content_hash(basis + "\n\x00acl=" + ",".join(sorted(acl)))


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
    its prefixed embed text within what the model reads); one record per chunk."""
    budget = chunk_budget(settings)
    chunks = chunk_text(
        doc.text,
        doc.headings,
        settings.chunk_tokens,
        settings.chunk_overlap_tokens,
        body_start=doc.body_start,
        title=doc.title,
        budget=budget,
    )
    return [
        make_record(
            doc,
            i,
            c.start,
            c.end,
            c.heading_path,
            embed_text=chunk_embed_text(
                doc.title, c.heading_path, doc.text[c.start : c.end], budget
            ),
        )
        for i, c in enumerate(chunks)
    ]


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
