"""Slack export connector: threads as units, distilled before embedding.

Export layout: ``channels.json`` (and ``groups.json`` for private channels), ``users.json``,
``<channel>/<YYYY-MM-DD>.json`` lists of messages (``ts``, ``thread_ts``, ``user``, ``text``,
``reactions``...). A message without replies is a thread of one.

Per thread (document id ``<source>:<channel>/<thread_ts>``) the parent text is::

    <distilled shape>\\n\\n<raw thread: one "name: text" line per message>

and the records are slices of it:

* chunk 0, kind ``thread``: the distilled shape (``Question/Summary/Resolution/Systems``),
  legs lexical + dense — omitted when every message of the thread is filler;
* kind ``thread_raw``: the raw thread (chunked under the token cap), lexical leg only;
* kind ``burst``: consecutive messages of one author, legs lexical + dense, only when the
  burst passes the write-time gates (length, mean IDF, reactions as a bonus); its embedded
  text is prefixed with the thread's question.

The IDF corpus is every kept message of the export (see :mod:`retrieval.textstats`).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from retrieval.chunking import WORDS, TokenIndex, bounded_prefix, section_cap, split_span
from retrieval.connectors.base import (
    LEXICAL_ONLY,
    BaseConnector,
    LoadContext,
    SourceDocument,
    as_dict,
    as_list,
    chunk_budget,
    dedupe,
    make_record,
)
from retrieval.records import ALL_LEGS, Record
from retrieval.textstats import COMMON_WORDS, DocFreq, is_filler

# Housekeeping events, not conversation.
_IGNORED_SUBTYPES = {
    "channel_join", "channel_leave", "channel_topic", "channel_purpose", "channel_name",
    "channel_archive", "channel_unarchive", "group_join", "group_leave", "group_topic",
    "group_purpose", "group_name", "pinned_item", "unpinned_item", "bot_add", "bot_remove",
    "reminder_add",
}  # fmt: skip


@dataclass(frozen=True)
class Channel:
    name: str
    private: bool
    acl: list[str]


@dataclass(frozen=True)
class SlackMessage:
    ts: str
    user: str
    text: str
    reactions: int = 0
    edited_ts: str | None = None


@dataclass
class SlackThread:
    channel: Channel
    thread_ts: str
    messages: list[SlackMessage] = field(default_factory=list)


def is_slack_export(path: Path) -> bool:
    return path.is_dir() and (path / "channels.json").is_file()


# -- distillation --


@dataclass(frozen=True)
class Distilled:
    question: str
    summary: str
    resolution: str
    systems: list[str]

    def render(self) -> str:
        return (
            f"Question: {self.question or '(none)'}\n"
            f"Summary: {self.summary or '(none)'}\n"
            f"Resolution: {self.resolution or '(none)'}\n"
            f"Systems: {', '.join(self.systems) or '(none)'}"
        )


class Distiller(Protocol):
    """Turns a thread into the fixed shape. An LLM-backed one can replace the default."""

    def distill(self, thread: SlackThread, stats: DocFreq) -> Distilled: ...


# A sentence ends at . ! ? followed by whitespace (not inside "db-3.prod.internal"), or a line.
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_ANSWER_RE = re.compile(
    r"\b(fix(?:ed|es)?|resolved|solution|workaround|root cause|turned out|caused by|"
    r"the (?:issue|problem) (?:is|was)|you (?:need|have) to|try|restart(?:ed|ing)?|"
    r"roll(?:ed)? ?back|revert(?:ed)?|deploy(?:ed)?|merged|patch(?:ed)?|bump(?:ed)?|"
    r"upgrad(?:e|ed)|works now|working now|should be good)\b",
    re.IGNORECASE,
)
_MAX_LINE = 240


def _one_line(text: str, limit: int = _MAX_LINE) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END_RE.split(text) if s.strip()]


class DeterministicDistiller:
    """Rule-based distillation: no model, same output for the same thread."""

    def distill(self, thread: SlackThread, stats: DocFreq) -> Distilled:
        messages = [m for m in thread.messages if m.text.strip()]
        if not messages:
            return Distilled("", "", "", [])
        first = messages[0]
        question = self._question(first.text)
        resolution_msg = self._resolution(messages[1:], asker=first.user)
        participants = dedupe([m.user for m in messages])
        summary_bits = self._salient(messages, stats, exclude={question}, skip=resolution_msg)
        head = f"{len(messages)} message{'s' if len(messages) != 1 else ''} from "
        head += ", ".join(participants) + "."
        summary = " ".join([head, *summary_bits])
        resolution = _one_line(resolution_msg.text) if resolution_msg else ""
        return Distilled(
            question=_one_line(question),
            summary=_one_line(summary, 2 * _MAX_LINE),
            resolution=resolution,
            systems=extract_systems("\n".join(m.text for m in messages)),
        )

    @staticmethod
    def _question(text: str) -> str:
        """The first line when it fits one line (a lone "Anyone know what that is?" loses
        the context before it); a long first line gives its first question sentence."""
        line = next((ln.strip() for ln in text.splitlines() if ln.strip()), text.strip())
        if len(line) <= _MAX_LINE:
            return line
        sentences = _sentences(line) or [line]
        return next((s for s in sentences if s.endswith("?")), sentences[0])

    @staticmethod
    def _resolution(replies: Sequence[SlackMessage], asker: str) -> SlackMessage | None:
        substantive = [m for m in replies if not is_filler(m.text)]
        answers = [m for m in substantive if _ANSWER_RE.search(m.text)]
        if answers:
            return answers[-1]
        others = [m for m in substantive if m.user != asker]
        return others[-1] if others else None

    @staticmethod
    def _salient(
        messages: Sequence[SlackMessage],
        stats: DocFreq,
        exclude: set[str],
        skip: SlackMessage | None,
        count: int = 2,
    ) -> list[str]:
        """The ``count`` most information-dense sentences, in thread order."""
        candidates: list[tuple[int, str]] = []
        for message in messages[1:] if len(messages) > 1 else messages:
            if message is skip or is_filler(message.text):
                continue
            for sentence in _sentences(message.text):
                if sentence not in exclude and not is_filler(sentence):
                    candidates.append((len(candidates), sentence))
        best = sorted(candidates, key=lambda c: -stats.mean_idf(c[1]))[:count]
        return [_one_line(s, 160) for _, s in sorted(best)]


_CODE_RE = re.compile(r"`([^`\n]{1,80})`")
_URL_HOST_RE = re.compile(r"https?://([A-Za-z0-9.-]+)")
_ERROR_CODE_RE = re.compile(r"\b(?:[A-Z][A-Z0-9]{1,9}[-_]\d{2,6}|ERR_[A-Z0-9_]+|E\d{3,5})\b")
_HOST_RE = re.compile(r"\b[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+\b")
_KEBAB_RE = re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b")
_SNAKE_RE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_CAMEL_RE = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b|\b[a-z]+(?:[A-Z][a-z0-9]+)+\b")
_ACRONYM_RE = re.compile(r"\b[A-Z][A-Z0-9]{1,5}\b")
_NOT_SYSTEMS = {
    "on-call", "follow-up", "sign-off", "check-in", "e-mail", "real-time", "built-in",
    "opt-in", "long-term", "short-term", "read-only", "up-to-date", "so-called", "self-serve",
    "re-run", "re-deploy", "in-flight", "end-to-end", "day-to-day", "one-off", "write-up",
    "ok", "pr", "prs", "fyi", "asap", "lgtm", "imo", "imho", "til", "afaik", "eod", "eta",
    "wip", "tbd", "am", "pm", "utc", "i", "a", "tl", "dr", "tldr", "btw", "cc",
}  # fmt: skip
_MAX_SYSTEMS = 15


def extract_systems(text: str) -> list[str]:
    """Referenced systems: `code` spans, URL hosts, error codes, hostnames, kebab/snake/
    CamelCase identifiers and acronyms, in order of first appearance. A match inside a
    longer one (``db-3`` in ``db-3.prod.internal``, ``ERR`` in ``ERR-5023``) is dropped."""
    found: list[tuple[int, int, str]] = []
    for regex in (_CODE_RE, _URL_HOST_RE):
        found.extend((m.start(1), m.end(1), m.group(1).strip()) for m in regex.finditer(text))
    # Blank out code and URLs (same length, so offsets still line up) before the prose rules.
    prose = _URL_HOST_RE.sub(_blank, _CODE_RE.sub(_blank, text))
    for regex in (_ERROR_CODE_RE, _KEBAB_RE, _SNAKE_RE, _CAMEL_RE, _ACRONYM_RE):
        found.extend((m.start(), m.end(), m.group(0)) for m in regex.finditer(prose))
    for match in _HOST_RE.finditer(prose):
        host = match.group(0)
        # "e.g" and "file.name" are not hosts; "db-1.prod" and "a.b.internal" are.
        if host.count(".") >= 2 or re.search(r"[\d-]", host):
            found.append((match.start(), match.end(), host))
    kept: list[str] = []
    taken: list[tuple[int, int]] = []
    for start, end, name in sorted(found, key=lambda f: (f[0], -(f[1] - f[0]))):
        if any(s <= start and end <= e for s, e in taken):
            continue
        taken.append((start, end))
        if name and name.lower() not in _NOT_SYSTEMS and name.lower() not in COMMON_WORDS:
            kept.append(name)
    return dedupe(kept)[:_MAX_SYSTEMS]


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


# -- the connector --


class SlackConnector(BaseConnector[SlackThread]):
    kind = "slack"
    sync_interval = timedelta(minutes=15)

    def __init__(self, ctx: LoadContext, distiller: Distiller | None = None) -> None:
        super().__init__(ctx)
        self.distiller: Distiller = distiller or DeterministicDistiller()
        self.stats = DocFreq()

    def fetch(self, path: Path) -> Iterator[SlackThread]:
        users = self._users(path)
        channels = self._channels(path)
        threads: dict[tuple[str, str], SlackThread] = {}
        seen: set[tuple[str, str]] = set()
        for folder in sorted(p for p in path.iterdir() if p.is_dir()):
            channel = channels.get(folder.name)
            if channel is None:
                reason = "not listed in channels.json/groups.json (DMs are not ingested)"
                self.ctx.skip(folder, reason)
                continue
            for day in sorted(folder.glob("*.json")):
                for raw in self._day(day):
                    message = self._message(raw, users)
                    if message is None or (folder.name, message.ts) in seen:
                        continue
                    seen.add((folder.name, message.ts))
                    root = str(raw.get("thread_ts") or message.ts)
                    thread = threads.setdefault((folder.name, root), SlackThread(channel, root))
                    thread.messages.append(message)
        # Corpus statistics before any transform: the IDF gate needs the whole export.
        self.stats = DocFreq.from_texts(m.text for t in threads.values() for m in t.messages)
        for key in sorted(threads, key=lambda k: (k[0], float(k[1]))):
            thread = threads[key]
            thread.messages.sort(key=lambda m: float(m.ts))
            yield thread

    def transform(self, raw: SlackThread) -> list[Record]:
        thread = raw
        distilled = self.distiller.distill(thread, self.stats)
        shape = distilled.render()
        parent, spans = _render_thread(shape, thread.messages)
        channel = thread.channel
        last = thread.messages[-1]
        title = f"#{channel.name}: {distilled.question or _one_line(thread.messages[0].text, 80)}"
        path = [f"#{channel.name}"]
        reactions = sum(m.reactions for m in thread.messages)
        doc = SourceDocument(
            doc_id=f"{self.ctx.source}:{channel.name}/{thread.thread_ts}",
            source=self.ctx.source,
            text=parent,
            title=title,
            kind="thread",
            timestamp=_slack_time(last.ts),
            source_version=max((m.edited_ts or m.ts for m in thread.messages), key=float),
            acl=list(channel.acl),
            author=thread.messages[0].user,
            entities=list(distilled.systems),
            project=self.ctx.project,
            extra={
                "channel": channel.name,
                "thread_ts": thread.thread_ts,
                "participants": dedupe([m.user for m in thread.messages]),
                "message_count": len(thread.messages),
                "reactions": reactions,
            },
        )
        records: list[Record] = []
        settings = self.ctx.settings
        # Sizes in the embedding model's tokens: no embedded text is cut at its limit.
        budget = chunk_budget(settings)
        index = TokenIndex(parent, budget.counter if budget else WORDS)
        if self.is_substantive(thread):
            # The shape itself is what gets embedded (it already leads with the question);
            # one longer than the model reads is cut on its lines.
            if budget is None or index.count(0, len(shape)) <= budget.limit:
                shape_spans = [(0, len(shape))]
            else:
                shape_spans = split_span(parent, 0, len(shape), budget.limit, 0, index=index)
            for s, e in shape_spans:
                records.append(
                    make_record(
                        doc, len(records), s, e, path, legs=ALL_LEGS, embed_text=parent[s:e]
                    )
                )
        raw_start = len(shape) + 2
        raw_cap = section_cap(settings.chunk_tokens, "", (), budget)
        for s, e in split_span(
            parent, raw_start, len(parent), raw_cap, settings.chunk_overlap_tokens, index=index
        ):
            records.append(
                make_record(
                    doc,
                    len(records),
                    s,
                    e,
                    path,
                    kind="thread_raw",
                    legs=LEXICAL_ONLY,
                    embed_text=parent[s:e],  # never embedded; no prefix to carry
                )
            )
        # A burst is embedded after the thread's question; a longer one than the model reads
        # with it becomes several burst records.
        lead, burst_cap = distilled.question, None
        if budget is not None:
            lead = bounded_prefix(lead, budget)
            burst_cap = budget.limit - budget.count(lead)
        for burst in self._bursts(thread.messages, spans):
            start, end, author, stats = burst
            if burst_cap is None or index.count(start, end) <= burst_cap:
                burst_spans = [(start, end)]
            else:
                burst_spans = split_span(
                    parent, start, end, burst_cap, settings.chunk_overlap_tokens, index=index
                )
            for s, e in burst_spans:
                records.append(
                    make_record(
                        doc,
                        len(records),
                        s,
                        e,
                        path,
                        kind="burst",
                        legs=ALL_LEGS,
                        author=author,
                        embed_text=f"{lead}\n{parent[s:e]}",
                        extra=stats,
                    )
                )
        return records

    def is_substantive(self, thread: SlackThread) -> bool:
        """Worth distilling and embedding: one message is neither filler nor low-IDF chat."""
        floor = self.ctx.connector_settings.thread_min_mean_idf
        return any(
            not is_filler(m.text) and self.stats.mean_idf(m.text) >= floor for m in thread.messages
        )

    def burst_gate(self, texts: Sequence[str], reactions: int) -> tuple[bool, dict[str, Any]]:
        """Length and mean-IDF gates; reactions lower the IDF threshold a little."""
        cfg = self.ctx.connector_settings
        content = "\n".join(texts)
        bonus = min(cfg.burst_reaction_bonus_max, cfg.burst_reaction_bonus * reactions)
        threshold = cfg.burst_min_mean_idf - bonus
        mean_idf = self.stats.mean_idf(content)
        passed = (
            len(content) >= cfg.burst_min_chars and mean_idf >= threshold and not is_filler(content)
        )
        info = {"mean_idf": round(mean_idf, 3), "idf_threshold": round(threshold, 3)}
        return passed, {**info, "reactions": reactions}

    def _bursts(
        self, messages: Sequence[SlackMessage], spans: Sequence[tuple[int, int]]
    ) -> Iterator[tuple[int, int, str, dict[str, Any]]]:
        i = 0
        while i < len(messages):
            j = i
            while j + 1 < len(messages) and messages[j + 1].user == messages[i].user:
                j += 1
            group = messages[i : j + 1]
            passed, info = self.burst_gate([m.text for m in group], sum(m.reactions for m in group))
            if passed:
                yield spans[i][0], spans[j][1], messages[i].user, info
            i = j + 1

    # -- reading the export --

    def _load(self, path: Path) -> Any:
        """Parsed JSON, or ``None`` with the reason recorded."""
        limit = self.ctx.settings.max_file_bytes
        try:
            size = path.stat().st_size
            if size > limit:
                self.ctx.fail(path, f"too large: {size} bytes > max_file_bytes {limit}")
                return None
            return json.loads(path.read_bytes().decode("utf-8-sig"))
        except OSError as exc:
            self.ctx.fail(path, f"unreadable: {exc.strerror or exc}")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.ctx.fail(path, f"invalid JSON: {exc}")
        return None

    def _users(self, root: Path) -> dict[str, str]:
        data = self._load(root / "users.json") if (root / "users.json").is_file() else []
        names: dict[str, str] = {}
        for user in data if isinstance(data, list) else []:
            if not isinstance(user, dict) or "id" not in user:
                continue
            profile = as_dict(user.get("profile"))
            names[str(user["id"])] = str(
                profile.get("real_name")
                or profile.get("display_name")
                or user.get("real_name")
                or user.get("name")
                or user["id"]
            )
        return names

    def _channels(self, root: Path) -> dict[str, Channel]:
        channels: dict[str, Channel] = {}
        for file_name, always_private in (("channels.json", False), ("groups.json", True)):
            if not (root / file_name).is_file():
                continue
            data = self._load(root / file_name)
            for entry in data if isinstance(data, list) else []:
                if not isinstance(entry, dict) or not entry.get("name"):
                    continue
                name = str(entry["name"])
                private = always_private or _is_private(entry)
                acl = as_list(entry.get("acl"))
                if not acl:
                    acl = [f"slack-{name}"] if private else list(self.ctx.acl)
                channels[name] = Channel(name, private, acl)
        return channels

    def _day(self, path: Path) -> list[dict[str, Any]]:
        data = self._load(path)
        if data is None:
            return []
        if not isinstance(data, list):
            self.ctx.fail(path, "not a JSON list of messages")
            return []
        return [m for m in data if isinstance(m, dict)]

    @staticmethod
    def _message(raw: dict[str, Any], users: dict[str, str]) -> SlackMessage | None:
        if raw.get("subtype") in _IGNORED_SUBTYPES or not raw.get("ts"):
            return None
        text = normalize_text(str(raw.get("text") or ""), users)
        if not text.strip():
            return None
        user_id = str(raw.get("user") or raw.get("bot_id") or "")
        profile = as_dict(raw.get("user_profile"))
        name = (
            users.get(user_id)
            or profile.get("real_name")
            or raw.get("username")
            or user_id
            or "unknown"
        )
        reactions = 0
        for reaction in raw.get("reactions") or []:
            if isinstance(reaction, dict):
                reactions += int(reaction.get("count") or len(reaction.get("users") or []) or 1)
        edited = as_dict(raw.get("edited"))
        ts = str(raw["ts"])
        try:
            float(ts)
        except ValueError:
            return None
        return SlackMessage(ts, str(name), text, reactions, edited.get("ts"))


def _slack_time(ts: str) -> datetime:
    # Message ts values are epoch seconds, checked numeric when the message was read.
    return datetime.fromtimestamp(float(ts), tz=UTC)


def _is_private(entry: dict[str, Any]) -> bool:
    # Fail closed: a channel with a member list is private unless it says it is not.
    if "is_private" in entry:
        return bool(entry["is_private"])
    return isinstance(entry.get("members"), list)


_MENTION_RE = re.compile(r"<@([A-Z0-9]+)(?:\|([^>]+))?>")
_CHANNEL_RE = re.compile(r"<#[A-Z0-9]+\|([^>]+)>")
_LINK_RE = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|([^>]+))?>")
_SPECIAL_RE = re.compile(r"<!(here|channel|everyone)[^>]*>")


def normalize_text(text: str, users: dict[str, str]) -> str:
    """Slack markup to plain text: mentions to @name, links to their label or URL."""
    text = _MENTION_RE.sub(lambda m: "@" + (m.group(2) or users.get(m.group(1), m.group(1))), text)
    text = _CHANNEL_RE.sub(lambda m: "#" + m.group(1), text)
    text = _LINK_RE.sub(lambda m: m.group(2) or m.group(1), text)
    text = _SPECIAL_RE.sub(lambda m: "@" + m.group(1), text)
    return html.unescape(text).strip()


def _render_thread(
    shape: str, messages: Sequence[SlackMessage]
) -> tuple[str, list[tuple[int, int]]]:
    """Parent text and each message's (start, end) in it."""
    parts = [shape, "\n\n"]
    offset = len(shape) + 2
    spans: list[tuple[int, int]] = []
    for message in messages:
        line = f"{message.user}: {message.text}"
        spans.append((offset, offset + len(line)))
        parts.append(line + "\n")
        offset += len(line) + 1
    return "".join(parts).rstrip("\n"), spans
