"""Find which known document titles a text mentions (the "open the page about X" signal).

The titles come from the store, already filtered by the caller's scope and ACL: a title
the caller may not read must never become a tool call in the trace.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from functools import lru_cache

from retrieval.structure import code_names, identifiers

__all__ = [
    "TitleIndex",
    "base_title",
    "code_names",
    "identifiers",
    "named_titles",
    "name_spans",
    "tokens",
]

_TOKEN = re.compile(r"\w+", re.UNICODE)
# A title shorter than this (in characters) or a single common word is too ambiguous to
# count as a mention ("Up", "It").
_MIN_CHARS = 4


def tokens(text: str) -> list[str]:
    return [t.casefold() for t in _TOKEN.findall(text)]


def base_title(title: str) -> str:
    """'Ed Wood (film)' -> 'Ed Wood': the name as running text would mention it."""
    return re.sub(r"\s*\([^)]*\)\s*$", "", title).strip()


class TitleIndex:
    """Longest-match scan of a text for known titles, by first token."""

    def __init__(self, titles: Iterable[str | tuple[str, str]]) -> None:
        """``titles``: titles, or ``(title, doc_id)`` pairs as ``Store.titles`` returns."""
        # first token -> [(name length, {name tokens: titles with that name})], longest
        # first: a text position is tried once per distinct name length, not once per
        # title sharing its first token ("the", "john" start thousands of titles).
        by_first: dict[str, dict[int, dict[tuple[str, ...], list[str]]]] = defaultdict(dict)
        self.titles: set[str] = set()
        # The documents (visible to the same caller) that link to another one it can read,
        # when the store can tell (``Store.linking_documents``); None: unknown.
        self.linking: frozenset[str] | None = None
        for item in titles:
            title = item if isinstance(item, str) else item[0]
            if not title or title in self.titles:
                continue
            self.titles.add(title)
            name = base_title(title)
            toks = tuple(tokens(name))
            if not toks or len(name) < _MIN_CHARS:
                continue
            by_first[toks[0]].setdefault(len(toks), {}).setdefault(toks, []).append(title)
        self._by_first = {
            first: sorted(by_len.items(), key=lambda kv: -kv[0])
            for first, by_len in by_first.items()
        }

    def __len__(self) -> int:
        return len(self.titles)

    def mentions(self, text: str, exclude: frozenset[str] | set[str] = frozenset()) -> list[str]:
        """Full titles whose name occurs in ``text`` (first occurrence order, no repeats).

        ``exclude``: titles not to match (a page's own title, which would otherwise swallow
        the names inside it: "Postmortem ...: tracking-ingest outage").
        """
        toks = tokens(text)
        found: list[str] = []
        seen: set[str] = set()
        i = 0
        while i < len(toks):
            matched = 0
            for n, names in self._by_first.get(toks[i], ()):
                hits = names.get(tuple(toks[i : i + n]))
                if not hits:
                    continue
                hits = [t for t in hits if t not in exclude]
                if hits:
                    matched = n  # the longest name here; shorter ones are inside it
                    for title in hits:
                        if title not in seen:
                            seen.add(title)
                            found.append(title)
                    break
            i += matched or 1
        return found


def named_titles(
    text: str,
    titles: TitleIndex | None,
    proper_only: bool = True,
    exclude: frozenset[str] | set[str] = frozenset(),
) -> list[str]:
    """Titles ``text`` names; with ``proper_only`` the mention must be capitalised."""
    if titles is None:
        return []
    out = []
    for title in titles.mentions(text, exclude):
        name = base_title(title)
        for surface in _surfaces(name, text):
            # A name written as the title writes it ("ledger-service"), or capitalised
            # like a proper noun; not a common word that happens to be a title ("county").
            if not proper_only or surface == name or surface[0].isupper() or surface[0].isdigit():
                out.append(title)
                break
    return out


def _surfaces(name: str, text: str) -> Iterator[str]:
    """How ``text`` writes ``name`` as whole words, case aside, first to last."""
    for start, end in name_spans(name, text):
        yield text[start:end]


def name_spans(name: str, text: str) -> Iterator[tuple[int, int]]:
    r"""Where ``text`` names ``name`` as whole words, case aside, first to last: what
    ``(?<!\w)name(?!\w)`` with IGNORECASE (name escaped) finds."""
    if not (name and name.isascii() and text.isascii()):
        yield from (m.span() for m in _name_pattern(name).finditer(text))
        return
    # ASCII: IGNORECASE is lowercase equality. Compiling the pattern costs ~75 us a name;
    # most names are met once or twice.
    yield from whole_word_spans(name.lower(), text.lower())


def has_words(key: str, text: str) -> bool:
    """Does ``text`` write ``key`` as whole words (case as given: "Essex" is not written
    by "Wessex")?"""
    return next(whole_word_spans(key, text), None) is not None


def whole_word_spans(key: str, text: str) -> Iterator[tuple[int, int]]:
    r"""Where ``key`` occurs in ``text`` with no word character either side, first to last,
    not overlapping: what ``(?<!\w)key(?!\w)`` (key escaped) finds, ``\w`` being
    ``isalnum()`` or "_" as in ``re``."""
    size = len(text)
    start = text.find(key)
    while start != -1:
        end = start + len(key)
        if (start == 0 or not _is_word(text[start - 1])) and (
            end == size or not _is_word(text[end])
        ):
            yield start, end
            start = text.find(key, end if end > start else start + 1)  # "" matches empty
        else:
            start = text.find(key, start + 1)


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


@lru_cache(maxsize=4096)
def _name_pattern(name: str) -> re.Pattern[str]:
    # Compiled once per name: ``re``'s own cache (512 entries) overflows on a run's titles.
    return re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)", re.IGNORECASE)
