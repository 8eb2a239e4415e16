"""JSONL connector: one ``{"id"?, "title", "text", "metadata"?}`` object per line.

A multi-hop question row (``{"question", "paragraphs": [{"title", "text"}, ...]}``, the
HotpotQA / MuSiQue / 2WikiMultiHopQA format) contributes its paragraphs instead, one
document each, deduplicated on title + text, with id ``sha1(title + text)[:16]`` (the id
the evaluation harness uses for the same paragraph).

``.jsonl.gz`` is read the same way. ``_id`` is accepted for ``id`` (BEIR style). A bad
line is reported with its line number and the rest is loaded. Lines are size-checked
against ``max_file_bytes`` one by one (a corpus file is a collection, not one document).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from io import BufferedReader
from pathlib import Path
from typing import Any

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
from retrieval.records import ALL_LEGS, Meta, Record

_TIME_KEYS = ("updated", "timestamp", "date", "created")


@dataclass(frozen=True)
class JsonlItem:
    path: Path
    line_no: int
    obj: dict[str, Any]


class JsonlConnector(BaseConnector[JsonlItem]):
    kind = "jsonl"
    sync_interval = timedelta(hours=24)

    def __init__(self, ctx: LoadContext) -> None:
        super().__init__(ctx)
        self._seen: set[str] = set()
        self._mtime: dict[Path, str] = {}

    def fetch(self, path: Path) -> Iterator[JsonlItem]:
        limit = self.ctx.settings.max_file_bytes
        try:
            handle = _open(path)
        except OSError as exc:
            self.ctx.fail(path, f"unreadable: {exc.strerror or exc}")
            return
        with handle:
            line_no = 0
            while True:
                try:
                    raw = handle.readline()
                except (OSError, EOFError) as exc:  # truncated gzip, I/O error mid-file
                    self.ctx.fail(f"{path}:{line_no + 1}", f"unreadable: {exc}")
                    return
                if not raw:
                    return
                line_no += 1
                where = f"{path}:{line_no}"
                if len(raw) > limit:
                    self.ctx.fail(where, f"line too large: {len(raw)} bytes > {limit}")
                    continue
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw.decode("utf-8-sig"))
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    self.ctx.fail(where, f"line {line_no}: invalid JSON ({exc})")
                    continue
                if not isinstance(obj, dict):
                    self.ctx.fail(where, f"line {line_no}: not a JSON object")
                    continue
                yield JsonlItem(path, line_no, obj)

    def transform(self, raw: JsonlItem) -> list[Record]:
        paragraphs = raw.obj.get("paragraphs")
        if "text" not in raw.obj and isinstance(paragraphs, list):
            out: list[Record] = []
            for p in paragraphs:
                if not isinstance(p, dict):
                    continue
                title, text = str(p.get("title") or ""), p.get("text")
                native = hashlib.sha1(f"{title}{text}".encode()).hexdigest()[:16]
                item = JsonlItem(
                    raw.path, raw.line_no, {"id": native, "title": title, "text": text}
                )
                if f"{self.ctx.source}:{native}" in self._seen:
                    continue  # the same paragraph recurs across questions: not a failure
                doc = self.document(item)
                out += document_records(doc, self.ctx.settings) if doc else []
            return out
        doc = self.document(raw)
        return document_records(doc, self.ctx.settings) if doc else []

    def document(self, raw: JsonlItem) -> SourceDocument | None:
        obj, where = raw.obj, f"{raw.path}:{raw.line_no}"
        text, title = obj.get("text"), obj.get("title") or ""
        if not isinstance(text, str) or not text.strip():
            self.ctx.fail(where, f'line {raw.line_no}: missing or empty "text"')
            return None
        meta = obj.get("metadata") or {}
        if not isinstance(meta, dict):
            self.ctx.fail(where, f'line {raw.line_no}: "metadata" is not an object')
            return None
        native = obj.get("id", obj.get("_id"))
        if native is None or str(native) == "":
            digest = hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()[:16]
            native = digest
        doc_id = f"{self.ctx.source}:{native}"
        if doc_id in self._seen:
            self.ctx.skip(where, f"duplicate id {doc_id}")
            return None
        self._seen.add(doc_id)
        stamp = next((t for k in _TIME_KEYS if (t := parse_time(meta.get(k)))), None)
        stamp = stamp or next((t for k in _TIME_KEYS if (t := parse_time(obj.get(k)))), None)
        if stamp is None:
            stamp = mtime_of(raw.path)
        legs = [leg for leg in as_list(meta.get(Meta.LEGS)) if leg in ALL_LEGS] or list(ALL_LEGS)
        reserved = {Meta.ACL, Meta.AUTHOR, Meta.ENTITIES, Meta.URL, Meta.LEGS, "project"}
        return SourceDocument(
            doc_id=doc_id,
            source=self.ctx.source,
            text=text,
            title=str(title),
            kind=str(meta.get(Meta.KIND) or "passage"),
            timestamp=stamp,
            source_version=str(meta.get("version") or obj.get("version") or self._version(raw)),
            acl=as_list(meta.get(Meta.ACL)) or list(self.ctx.acl),
            author=str(meta[Meta.AUTHOR]) if meta.get(Meta.AUTHOR) else None,
            entities=dedupe(as_list(meta.get(Meta.ENTITIES))),
            url=str(meta[Meta.URL]) if meta.get(Meta.URL) else None,
            project=str(meta.get("project") or self.ctx.project or "") or None,
            legs=legs,
            extra={k: v for k, v in meta.items() if k not in reserved},
            hash_basis=json.dumps([title, text, meta], sort_keys=True, default=str),
        )

    def _version(self, raw: JsonlItem) -> str:
        if raw.path not in self._mtime:
            self._mtime[raw.path] = mtime_of(raw.path).isoformat()
        return self._mtime[raw.path]


def _open(path: Path) -> gzip.GzipFile | BufferedReader:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rb")
    return path.open("rb")
