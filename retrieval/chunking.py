"""Structure-aware chunking that only ever *slices* the parent text.

Every chunk is ``(start, end, heading_path)`` with ``text[start:end]`` the chunk text, so
citations can point back into the document exactly. Nothing artificial is added to the
chunk text: the title and heading path travel in metadata (the indexer may prefix the
embedded text with them, see :func:`embed_prefix`).

Algorithm: headings cut the text into sections (a heading with no body of its own is
merged into the next section, so a lone "# Title" line never becomes a chunk). A section
over the token cap is split on paragraph, then line, then sentence boundaries, then as a
last resort on word windows; the pieces are packed greedily up to the cap, and each new
chunk repeats the trailing pieces of the previous one that fit in the overlap budget.
Tokens are approximated by whitespace words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval.textstats import count_words, word_spans


@dataclass(frozen=True)
class Heading:
    """A heading found in the parent text: ``text[start:end]`` is the heading line(s)."""

    level: int
    title: str
    start: int
    end: int


@dataclass(frozen=True)
class Chunk:
    start: int
    end: int
    heading_path: tuple[str, ...]


@dataclass(frozen=True)
class _Piece:
    start: int
    end: int
    tokens: int


_FENCE_RE = re.compile(r"^ {0,3}(```|~~~)")
_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_PARAGRAPH_SEP = re.compile(r"\n[ \t]*\n\s*")
_LINE_SEP = re.compile(r"\n")
_SENTENCE_SEP = re.compile(r"(?<=[.!?;:])\s+")


def markdown_headings(text: str) -> list[Heading]:
    """ATX (``## x``) and setext (underlined) headings outside fenced code blocks."""
    headings: list[Heading] = []
    in_fence = False
    prev: tuple[int, int, str] | None = None  # (start, end, line) of a paragraph line
    para_lines = 0
    pos = 0
    for line in text.splitlines(keepends=True):
        start, body = pos, line.rstrip("\r\n")
        pos += len(line)
        end = start + len(body)
        if _FENCE_RE.match(body):
            in_fence = not in_fence
            prev, para_lines = None, 0
            continue
        if in_fence:
            continue
        atx = _ATX_RE.match(body)
        if atx:
            title = (atx.group(2) or "").strip()
            headings.append(Heading(len(atx.group(1)), title, start, end))
            prev, para_lines = None, 0
            continue
        setext = _SETEXT_RE.match(body)
        if setext and prev is not None:
            level = 1 if setext.group(1).startswith("=") else 2
            headings.append(Heading(level, prev[2].strip(), prev[0], end))
            prev, para_lines = None, 0
            continue
        # Only a single-line paragraph directly above can become a setext heading.
        para_lines = para_lines + 1 if body.strip() else 0
        prev = (start, end, body) if para_lines == 1 else None
    return headings


def chunk_text(
    text: str,
    headings: Sequence[Heading] = (),
    max_tokens: int = 256,
    overlap_tokens: int = 32,
    body_start: int = 0,
) -> list[Chunk]:
    """Chunks of ``text[body_start:]`` on heading structure, each at most ``max_tokens``
    words (a single longer word cannot be split). Offsets are into the whole ``text``."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be >= 1")
    overlap_tokens = max(0, min(overlap_tokens, max_tokens // 2))
    chunks: list[Chunk] = []
    for start, end, path in _sections(text, headings, body_start):
        for s, e in split_span(text, start, end, max_tokens, overlap_tokens):
            chunks.append(Chunk(s, e, path))
    return chunks


def split_span(
    text: str, start: int, end: int, max_tokens: int, overlap_tokens: int
) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into stripped spans of at most ``max_tokens`` words."""
    start, end = _strip(text, start, end)
    if start >= end:
        return []
    if count_words(text[start:end]) <= max_tokens:
        return [(start, end)]
    pieces = _pieces(text, start, end, max_tokens, (_PARAGRAPH_SEP, _LINE_SEP, _SENTENCE_SEP))
    return _pack(pieces, max_tokens, overlap_tokens)


def embed_prefix(title: str, heading_path: Sequence[str]) -> str:
    """``"Title > Heading > Sub"`` without repeating a heading equal to the title."""
    parts = [title] if title else []
    for heading in heading_path:
        if heading and (not parts or heading.strip().lower() != parts[-1].strip().lower()):
            parts.append(heading)
    return " > ".join(parts)


def _sections(
    text: str, headings: Sequence[Heading], body_start: int
) -> list[tuple[int, int, tuple[str, ...]]]:
    ordered = sorted((h for h in headings if h.start >= body_start), key=lambda h: h.start)
    sections: list[tuple[int, int, tuple[str, ...]]] = []
    first = ordered[0].start if ordered else len(text)
    if text[body_start:first].strip():
        sections.append((body_start, first, ()))
    stack: list[Heading] = []
    pending_start: int | None = None  # a heading-only section waiting for a body
    for i, heading in enumerate(ordered):
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        end = ordered[i + 1].start if i + 1 < len(ordered) else len(text)
        start = heading.start if pending_start is None else pending_start
        if not text[heading.end : end].strip():
            pending_start = start
            continue
        pending_start = None
        sections.append((start, end, tuple(h.title for h in stack)))
    if pending_start is not None:
        if sections:
            s, _, path = sections[-1]
            sections[-1] = (s, len(text), path)
        else:
            sections.append((pending_start, len(text), tuple(h.title for h in stack)))
    return sections


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _split_on(text: str, start: int, end: int, sep: re.Pattern[str]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    cursor = start
    for match in sep.finditer(text, start, end):
        spans.append((cursor, match.start()))
        cursor = match.end()
    spans.append((cursor, end))
    stripped = (_strip(text, s, e) for s, e in spans)
    return [(s, e) for s, e in stripped if s < e]


def _pieces(
    text: str, start: int, end: int, max_tokens: int, seps: Sequence[re.Pattern[str]]
) -> list[_Piece]:
    pieces: list[_Piece] = []
    parts = _split_on(text, start, end, seps[0]) if seps else [(start, end)]
    for s, e in parts:
        tokens = count_words(text[s:e])
        if tokens <= max_tokens:
            pieces.append(_Piece(s, e, tokens))
        elif len(seps) > 1:
            pieces.extend(_pieces(text, s, e, max_tokens, seps[1:]))
        else:
            pieces.extend(_word_windows(text, s, e, max_tokens))
    return pieces


def _word_windows(text: str, start: int, end: int, max_tokens: int) -> list[_Piece]:
    words = word_spans(text, start, end)
    return [
        _Piece(
            words[i][0],
            words[min(i + max_tokens, len(words)) - 1][1],
            len(words[i : i + max_tokens]),
        )
        for i in range(0, len(words), max_tokens)
    ]


def _pack(pieces: Sequence[_Piece], max_tokens: int, overlap_tokens: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(pieces):
        j, tokens = i, pieces[i].tokens
        while j + 1 < len(pieces) and tokens + pieces[j + 1].tokens <= max_tokens:
            j += 1
            tokens += pieces[j].tokens
        spans.append((pieces[i].start, pieces[j].end))
        if j + 1 >= len(pieces):
            break
        # Repeat trailing pieces that fit the overlap budget; k > i guarantees progress.
        k, carried = j + 1, 0
        while k - 1 > i and carried + pieces[k - 1].tokens <= overlap_tokens:
            k -= 1
            carried += pieces[k].tokens
        # The overlap plus the next piece must still fit the cap.
        while k <= j and carried + pieces[j + 1].tokens > max_tokens:
            carried -= pieces[k].tokens
            k += 1
        i = k
    return spans
