"""Ticket export connector: a JSON list of Jira-style issues.

``{"key", "fields": {"summary", "description", "status": {"name"} | "Done", "assignee":
{"displayName"}, "reporter", "components": [{"name"}], "labels", "created", "updated",
"priority", "comment": {"comments": [{"author", "body", "created"}]}}}``; every field may be
missing. One document per ticket; its parent text is rendered here (title line, a fields
line, description, comments), so headings and offsets refer to that rendering.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from retrieval.chunking import Heading, fits_one_chunk
from retrieval.connectors.base import (
    BaseConnector,
    SourceDocument,
    as_dict,
    chunk_budget,
    dedupe,
    document_records,
    mtime_of,
    parse_time,
)
from retrieval.records import Record

_BROWSE_RE = re.compile(r"^(https?://[^/]+)/rest/api/")


@dataclass(frozen=True)
class TicketItem:
    path: Path
    index: int
    issue: dict[str, Any]


def looks_like_tickets(data: Any) -> bool:
    """A non-empty list whose objects (mostly) carry ``key`` and ``fields`` (Jira export)."""
    if not isinstance(data, list) or not data:
        return False
    # Judge on the first objects; a few malformed issues are reported later, one by one.
    dicts = [d for d in data[:20] if isinstance(d, dict)]
    issues = [d for d in dicts if "key" in d and "fields" in d]
    return bool(issues) and 2 * len(issues) >= len(dicts)


class TicketsConnector(BaseConnector[TicketItem]):
    kind = "tickets"
    sync_interval = timedelta(minutes=30)

    def fetch(self, path: Path) -> Iterator[TicketItem]:
        limit = self.ctx.settings.max_file_bytes
        try:
            size = path.stat().st_size
            if size > limit:
                self.ctx.fail(path, f"too large: {size} bytes > max_file_bytes {limit}")
                return
            data = json.loads(path.read_bytes().decode("utf-8-sig"))
        except OSError as exc:
            self.ctx.fail(path, f"unreadable: {exc.strerror or exc}")
            return
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.ctx.fail(path, f"invalid JSON: {exc}")
            return
        if isinstance(data, dict) and isinstance(data.get("issues"), list):
            data = data["issues"]  # the search API's envelope
        if not isinstance(data, list):
            self.ctx.fail(path, "not a JSON list of issues")
            return
        for index, issue in enumerate(data):
            if not isinstance(issue, dict) or not issue.get("key"):
                self.ctx.fail(f"{path}[{index}]", 'issue without a "key"')
                continue
            yield TicketItem(path, index, issue)

    def transform(self, raw: TicketItem) -> list[Record]:
        return document_records(self.document(raw), self.ctx.settings)

    def document(self, raw: TicketItem) -> SourceDocument:
        issue = raw.issue
        key = str(issue["key"])
        fields = as_dict(issue.get("fields"))
        summary = _text(fields.get("summary")) or "(no summary)"
        title = f"{key}: {summary}"
        status = _name(fields.get("status"))
        priority = _name(fields.get("priority"))
        issue_type = _name(fields.get("issuetype"))
        assignee = _person(fields.get("assignee"))
        reporter = _person(fields.get("reporter"))
        components = [n for c in _list(fields.get("components")) if (n := _name(c))]
        labels = [str(label) for label in _list(fields.get("labels")) if str(label).strip()]

        facts = [
            ("Type", issue_type),
            ("Status", status),
            ("Priority", priority),
            ("Assignee", assignee),
            ("Reporter", reporter),
            ("Components", ", ".join(components)),
            ("Labels", ", ".join(labels)),
        ]
        parts: list[str] = []
        headings: list[Heading] = []

        def add_heading(level: int, line: str) -> None:
            start = sum(len(p) for p in parts)
            headings.append(Heading(level, line, start, start + len(line)))
            parts.append(line + "\n")

        add_heading(1, title)
        fact_line = " | ".join(f"{name}: {value}" for name, value in facts if value)
        if fact_line:
            parts.append(fact_line + "\n")
        description = _text(fields.get("description")).strip()
        if description:
            parts.append("\n")
            add_heading(2, "Description")
            parts.append(description + "\n")
        comments = _comments(fields.get("comment"))
        if comments:
            parts.append("\n")
            add_heading(2, "Comments")
            parts.append("\n\n".join(comments) + "\n")

        created = parse_time(fields.get("created"))
        updated = parse_time(fields.get("updated")) or created
        url = issue.get("url") or fields.get("url")
        browse = _BROWSE_RE.match(str(issue.get("self") or ""))
        if not url and browse:
            url = f"{browse.group(1)}/browse/{key}"
        extra = {
            "key": key,
            "status": status,
            "priority": priority,
            "issue_type": issue_type,
            "assignee": assignee,
            "reporter": reporter,
            "components": components,
            "labels": labels,
        }
        text = "".join(parts)
        settings = self.ctx.settings
        if fits_one_chunk(text, settings.chunk_tokens, title=title, budget=chunk_budget(settings)):
            headings = []  # fits one chunk: keep the ticket whole rather than cut by section
        return SourceDocument(
            doc_id=f"{self.ctx.source}:{key}",
            source=self.ctx.source,
            text=text,
            title=title,
            kind="ticket",
            timestamp=updated or mtime_of(raw.path),
            source_version=str(fields.get("updated") or fields.get("created") or ""),
            acl=list(self.ctx.acl),
            headings=headings,
            author=reporter,
            entities=dedupe([*components, *labels, *([assignee] if assignee else [])]),
            url=str(url) if url else None,
            project=self.ctx.project,
            extra={k: v for k, v in extra.items() if v},
        )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _name(value: Any) -> str | None:
    """``{"name": x}`` / ``{"value": x}`` / ``"x"`` -> ``x``."""
    if isinstance(value, dict):
        value = value.get("name") or value.get("value") or value.get("displayName")
    return str(value).strip() or None if value else None


def _person(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("displayName") or value.get("name") or value.get("emailAddress")
    return str(value).strip() or None if value else None


def _text(value: Any) -> str:
    """Plain text, also from Atlassian Document Format (the v3 API's rich text)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if value.get("type") == "text":
            return str(value.get("text", ""))
        inner = "".join(_text(child) for child in _list(value.get("content")))
        block = value.get("type") in {"paragraph", "heading", "listItem", "codeBlock"}
        return inner + ("\n" if block else "")
    if isinstance(value, list):
        return "".join(_text(v) for v in value)
    return str(value)


def _comments(value: Any) -> list[str]:
    items = value.get("comments") if isinstance(value, dict) else value
    out: list[str] = []
    for comment in _list(items):
        if not isinstance(comment, dict):
            continue
        body = _text(comment.get("body")).strip()
        if not body:
            continue
        who = _person(comment.get("author")) or "unknown"
        when = str(comment.get("created") or "")[:10]
        out.append(f"{who} ({when}): {body}" if when else f"{who}: {body}")
    return out
