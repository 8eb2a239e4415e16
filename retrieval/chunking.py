"""Structure-aware chunking that only ever *slices* the parent text.

Every chunk is ``(start, end, heading_path)`` with ``text[start:end]`` the chunk text, so
citations can point back into the document exactly. Nothing artificial is added to the
chunk text: the title and heading path travel in metadata, and the embedded text is
``"Title > Heading: chunk"`` (:func:`embed_text`).

Algorithm: headings cut the text into sections (a heading with no body of its own is
merged into the next section, so a lone "# Title" line never becomes a chunk). A section
over the token cap is split on paragraph, then line, then sentence boundaries, then as a
last resort on word windows (and a single word longer than the cap on its own token
boundaries); the pieces are packed greedily up to the cap, and each new chunk repeats the
trailing pieces of the previous one that fit in the overlap budget.

Tokens: with an :class:`EmbedBudget` (the connectors pass the embedding model's own
tokenizer, :func:`embed_budget`), sizes are counted in the model's
tokens and each section's cap is also what the model reads less that section's embed
prefix, so no chunk's embedded text is cut at the model's max sequence length. The
document is tokenized once (token character offsets); a slice's size is the number of
its tokens, found by bisection. Cuts fall on whitespace, where the tokenizer cuts too,
so a slice tokenized alone has the same tokens. Without a budget, whitespace words
approximate tokens and nothing else limits a chunk.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from retrieval.textstats import word_spans

log = logging.getLogger(__name__)


class TokenCounter(Protocol):
    """Splits a text into the tokens a model reads (no special tokens): their offsets."""

    def spans(self, text: str) -> list[tuple[int, int]]: ...


class WordCounter:
    """Whitespace words: the approximation of tokens when no model tokenizer is given."""

    def spans(self, text: str) -> list[tuple[int, int]]:
        return word_spans(text)


WORDS = WordCounter()


@dataclass(frozen=True)
class EmbedBudget:
    """What the embedding model reads of one record: at most ``limit`` tokens of
    ``counter`` (its max sequence length less the special tokens it adds), the embed
    prefix included. A prefix may take at most a quarter of it (longer ones are cut)."""

    counter: TokenCounter
    limit: int

    @property
    def max_prefix(self) -> int:
        return max(1, self.limit // 4)

    def count(self, text: str) -> int:
        return len(self.counter.spans(text))


class TokenIndex:
    """One tokenization of ``text``; the tokens of any slice counted by position."""

    def __init__(self, text: str, counter: TokenCounter = WORDS) -> None:
        self.text = text
        self.counter = counter
        spans = counter.spans(text)
        self._starts = [s for s, _ in spans]
        self._ends = [e for _, e in spans]

    def count(self, start: int, end: int) -> int:
        """Tokens overlapping ``text[start:end]``."""
        if end <= start:
            return 0
        return max(0, bisect_left(self._starts, end) - bisect_right(self._ends, start))

    def spans_in(self, start: int, end: int) -> list[tuple[int, int]]:
        i, j = bisect_right(self._ends, start), bisect_left(self._starts, end)
        return list(zip(self._starts[i:j], self._ends[i:j], strict=True))


# -- the embedding model's own tokenizer (read from its local folder, no model loaded) --


@dataclass(frozen=True)
class ModelTokenizer:
    """The embedding model's own (fast) tokenizer, with nothing truncated or padded: what a
    text costs the model. ``max_length`` counts the special tokens it adds."""

    path: str
    max_length: int
    special_tokens: int
    _tokenizer: Any = field(repr=False, compare=False)

    @property
    def text_limit(self) -> int:
        """Tokens of text the model reads before it silently truncates."""
        return self.max_length - self.special_tokens

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character offsets of the tokens of ``text`` (no special tokens)."""
        return list(self._tokenizer.encode(text, add_special_tokens=False).offsets)

    def count(self, text: str) -> int:
        """Tokens the model reads for ``text``, special tokens included (untruncated)."""
        return len(self._tokenizer.encode(text, add_special_tokens=True).ids)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _max_length(folder: Path) -> int | None:
    """The sequence length the model is run with: sentence-transformers' ``max_seq_length``,
    else the tokenizer's ``model_max_length``, else the position embeddings."""
    candidates = (
        _read_json(folder / "sentence_bert_config.json").get("max_seq_length"),
        _read_json(folder / "tokenizer_config.json").get("model_max_length"),
        _read_json(folder / "config.json").get("max_position_embeddings"),
    )
    for value in candidates:
        if isinstance(value, int) and 0 < value < 1_000_000:  # HF's "no limit" is 1e30
            return value
    return None


_TOKENIZERS: dict[str, ModelTokenizer | None] = {}
_TOKENIZERS_LOCK = threading.Lock()


def model_tokenizer(model: str) -> ModelTokenizer | None:
    """The tokenizer of the local model folder ``model`` (``tokenizer.json``), loaded once
    per process; None, logged once, when there is none (chunk sizes then fall back to
    whitespace words)."""
    with _TOKENIZERS_LOCK:
        if model not in _TOKENIZERS:
            _TOKENIZERS[model] = _load_tokenizer(model)
        return _TOKENIZERS[model]


def _load_tokenizer(model: str) -> ModelTokenizer | None:
    folder = Path(model)
    file = folder / "tokenizer.json"
    max_length = _max_length(folder)
    if not file.is_file() or max_length is None:
        log.warning(
            "no tokenizer.json or max sequence length in %s: chunk sizes are counted in "
            "whitespace words, not model tokens",
            model,
        )
        return None
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(file))
    tokenizer.no_truncation()  # the file may carry a truncation/padding of its own
    tokenizer.no_padding()
    specials = int(tokenizer.num_special_tokens_to_add(False))
    return ModelTokenizer(str(folder), max_length, specials, tokenizer)


def embed_budget(model: str) -> EmbedBudget | None:
    """What chunking must fit for the embedding model at ``model``; None without its
    tokenizer."""
    tokenizer = model_tokenizer(model)
    return EmbedBudget(tokenizer, tokenizer.text_limit) if tokenizer else None


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
    *,
    title: str = "",
    budget: EmbedBudget | None = None,
) -> list[Chunk]:
    """Chunks of ``text[body_start:]`` on heading structure. Each is at most ``max_tokens``
    tokens and, with a ``budget``, its :func:`embed_text` (``title`` and heading path
    prefixed) at most ``budget.limit`` model tokens. Offsets are into the whole ``text``."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be >= 1")
    index = TokenIndex(text, budget.counter if budget else WORDS)
    chunks: list[Chunk] = []
    for start, end, path in _sections(text, headings, body_start):
        cap = section_cap(max_tokens, title, path, budget)
        for s, e in split_span(text, start, end, cap, overlap_tokens, index=index):
            chunks.append(Chunk(s, e, path))
    return chunks


def section_cap(
    max_tokens: int, title: str, heading_path: Sequence[str], budget: EmbedBudget | None
) -> int:
    """The token cap of a chunk under ``heading_path``: ``max_tokens``, and with a budget
    no more than the model reads once the section's embed prefix (and ": ") is added."""
    if budget is None:
        return max_tokens
    full = embed_prefix(title, heading_path)
    prefix = min(budget.count(full), budget.max_prefix) + 1 if full else 0
    return max(1, min(max_tokens, budget.limit - prefix))


def fits_one_chunk(
    text: str, max_tokens: int, *, title: str = "", budget: EmbedBudget | None = None
) -> bool:
    """``text`` whole, prefixed with ``title``, is within the chunk cap (and the model)."""
    counter = budget.counter if budget else WORDS
    return len(counter.spans(text)) <= section_cap(max_tokens, title, (), budget)


def split_span(
    text: str,
    start: int,
    end: int,
    max_tokens: int,
    overlap_tokens: int,
    *,
    index: TokenIndex | None = None,
) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into stripped spans of at most ``max_tokens`` tokens of
    ``index`` (a tokenization of the whole ``text``; default: whitespace words)."""
    start, end = _strip(text, start, end)
    if start >= end:
        return []
    if index is None:
        index = TokenIndex(text)
    if index.count(start, end) <= max_tokens:
        return [(start, end)]
    overlap_tokens = max(0, min(overlap_tokens, max_tokens // 2))
    seps = (_PARAGRAPH_SEP, _LINE_SEP, _SENTENCE_SEP)
    return _pack(_pieces(index, start, end, max_tokens, seps), max_tokens, overlap_tokens)


def embed_prefix(title: str, heading_path: Sequence[str]) -> str:
    """``"Title > Heading > Sub"`` without repeating a heading equal to the title."""
    parts = [title] if title else []
    for heading in heading_path:
        if heading and (not parts or heading.strip().lower() != parts[-1].strip().lower()):
            parts.append(heading)
    return " > ".join(parts)


def embed_text(
    title: str, heading_path: Sequence[str], text: str, budget: EmbedBudget | None = None
) -> str:
    """``"Title > Heading: text"``, leaving out the title / headings the chunk already
    opens with (a section chunk starts with its own heading line); with a budget the
    prefix is cut to ``budget.max_prefix`` tokens, as :func:`section_cap` assumes."""
    parts = embed_prefix(title, heading_path).split(" > ") if title or heading_path else []
    opening = text[:300]
    prefix = " > ".join(p for p in parts if p and p not in opening)
    if budget is not None:
        prefix = bounded_prefix(prefix, budget)
    return f"{prefix}: {text}" if prefix else text


def bounded_prefix(prefix: str, budget: EmbedBudget) -> str:
    """``prefix`` cut after its last whole word that keeps it within ``budget.max_prefix``
    tokens (a first word longer than that is cut to as many characters: a token covers at
    least one)."""
    if budget.count(prefix) <= budget.max_prefix:
        return prefix
    words = prefix.split(" ")
    while words and budget.count(" ".join(words)) > budget.max_prefix:
        words.pop()
    cut = " ".join(words).rstrip(" >")
    return cut or prefix[: budget.max_prefix]


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
    index: TokenIndex, start: int, end: int, max_tokens: int, seps: Sequence[re.Pattern[str]]
) -> list[_Piece]:
    pieces: list[_Piece] = []
    parts = _split_on(index.text, start, end, seps[0]) if seps else [(start, end)]
    for s, e in parts:
        tokens = index.count(s, e)
        if tokens <= max_tokens:
            pieces.append(_Piece(s, e, tokens))
        elif len(seps) > 1:
            pieces.extend(_pieces(index, s, e, max_tokens, seps[1:]))
        else:
            pieces.extend(_word_windows(index, s, e, max_tokens))
    return pieces


def _word_windows(index: TokenIndex, start: int, end: int, max_tokens: int) -> list[_Piece]:
    """Runs of whole words of at most ``max_tokens`` tokens; a longer word is cut."""
    pieces: list[_Piece] = []
    run_start, run_end, run_tokens = -1, -1, 0
    for ws, we in word_spans(index.text, start, end):
        tokens = index.count(ws, we)
        if run_tokens and (tokens > max_tokens or run_tokens + tokens > max_tokens):
            pieces.append(_Piece(run_start, run_end, run_tokens))
            run_tokens = 0
        if tokens > max_tokens:
            pieces.extend(_cut_word(index, ws, we, max_tokens))
            continue
        if not run_tokens:
            run_start = ws
        run_end, run_tokens = we, run_tokens + tokens
    if run_tokens:
        pieces.append(_Piece(run_start, run_end, run_tokens))
    return pieces


def _cut_word(index: TokenIndex, start: int, end: int, max_tokens: int) -> list[_Piece]:
    """A word longer than the cap, cut on its token boundaries. A cut inside a word can
    change how its pieces tokenize, so each piece is tokenized alone and shortened until
    it fits (a few pathological words per corpus at most)."""
    spans = index.spans_in(start, end)
    pieces: list[_Piece] = []
    i = 0
    while i < len(spans):
        j = min(i + max_tokens, len(spans))
        while True:
            s = start if i == 0 else spans[i][0]
            e = end if j == len(spans) else spans[j - 1][1]
            tokens = len(index.counter.spans(index.text[s:e]))
            if tokens <= max_tokens or j - i == 1:
                break
            j -= 1
        pieces.append(_Piece(s, e, tokens))
        i = j
    return pieces


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
