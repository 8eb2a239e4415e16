"""The narrow waist: the one record every connector emits.

Nothing below the connectors branches on ``source``: ranking and correctness signals
travel in ``metadata`` under the well-known keys in :class:`Meta`.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field


class Meta:
    """Well-known metadata keys (the record's metadata object stays opaque otherwise)."""

    KIND = "kind"  # "document" | "section" | "thread" | "burst" | "ticket" | "passage" ...
    TITLE = "title"
    HEADING_PATH = "heading_path"  # list[str]
    CHAR_START = "char_start"  # offsets of this chunk inside the parent document text
    CHAR_END = "char_end"
    CONTENT_HASH = "content_hash"  # sha256 of the document text (not the chunk)
    SOURCE_VERSION = "source_version"  # the source system's own version / mtime
    ACL = "acl"  # list[str] of groups allowed to read; PUBLIC_GROUP for everyone
    AUTHOR = "author"
    DOC_ID = "doc_id"  # the parent document id (chunks of one document share it)
    CHUNK_INDEX = "chunk_index"  # position of the chunk in its document (neighbours = +-1)
    LEGS = "legs"  # list[str] subset of ["lexical", "dense"]: which indexes receive it
    URL = "url"
    ENTITIES = "entities"  # list[str] named things the record is about (services, people...)
    EMBED_TEXT = "embed_text"  # optional: the text to embed if it differs from ``text``
    # Where a chunk sits inside its file, for citations (``report.pdf p. 12``); all optional.
    PATH = "path"  # the file's path relative to the loaded folder (files connector)
    PAGE = "page"  # 1-based PDF page the chunk is on (a chunk never crosses pages)
    SLIDE = "slide"  # 1-based slide number (PPTX)
    SHEET = "sheet"  # spreadsheet sheet name (XLSX)
    ROW_START = "row_start"  # first / last sheet row numbers a table chunk holds
    ROW_END = "row_end"
    LINKS = "links"  # list[str] outgoing link targets whose anchors lie in this chunk
    SYMBOLS = "symbols"  # list[str] code symbols (functions, classes) this chunk defines


PUBLIC_GROUP = "public"
ALL_LEGS = ["lexical", "dense"]


class Record(BaseModel):
    """One searchable unit (a chunk of a document, a distilled thread, a ticket...).

    ``id`` is stable across re-ingestion of the same content position: chunk ids are
    ``f"{doc_id}#{chunk_index}"`` and document ids are ``f"{source}:{native_id}"``.
    """

    id: str
    source: str
    text: str
    timestamp: datetime = Field(default_factory=lambda: datetime.now(UTC))
    metadata: dict[str, Any] = Field(default_factory=dict)

    # -- convenience accessors (read-only views on metadata) --
    @property
    def doc_id(self) -> str:
        # Not ``get(key, default)``: the default (a split) would be built on every read.
        meta = self.metadata
        return str(meta[Meta.DOC_ID]) if Meta.DOC_ID in meta else self.id.split("#", 1)[0]

    @property
    def title(self) -> str:
        return str(self.metadata.get(Meta.TITLE, ""))

    @property
    def acl(self) -> list[str]:
        return list(self.metadata.get(Meta.ACL) or [PUBLIC_GROUP])

    @property
    def legs(self) -> list[str]:
        return list(self.metadata.get(Meta.LEGS) or ALL_LEGS)

    @property
    def chunk_index(self) -> int:
        return int(self.metadata.get(Meta.CHUNK_INDEX, 0))

    @property
    def embed_text(self) -> str:
        return str(self.metadata.get(Meta.EMBED_TEXT) or self.text)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_id(doc_id: str, index: int) -> str:
    return f"{doc_id}#{index}"
