"""Query rewrite that keeps the meaning.

Only conversational wrapping is removed ("can you tell me", "what is", "please", a trailing
"?"). Content words, identifiers (ERR-4012, v2.3.1), quoted phrases and word order stay as
they are: the query is never shredded into n-grams or keyword bags, because BM25 already
discounts common words and a shredded query loses the phrase the user typed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Leading wrappers, longest first so "who is the" wins over "who is". Applied repeatedly:
# "hi, can you tell me what is X" -> "X".
_LEADING = [
    "i would like to know",
    "i'd like to know",
    "i want to know",
    "i wanted to know",
    "i need to know",
    "can you please tell me",
    "could you please tell me",
    "can you tell me",
    "could you tell me",
    "would you tell me",
    "can you explain",
    "could you explain",
    "can you find",
    "could you find",
    "do you know",
    "does anyone know",
    "tell me",
    "explain",
    "what is the",
    "what are the",
    "what is",
    "what's the",
    "what's",
    "what are",
    "who is the",
    "who are the",
    "who is",
    "who's",
    "please",
    "kindly",
]
# Greetings and "ok"/"so" only count as filler when punctuation sets them off: "OK Computer"
# and "So Long, and Thanks for All the Fish" are titles, "ok, ..." is not.
_GREETINGS = ["hey", "hi", "hello", "ok", "okay", "so", "well"]
_TRAILING = ["please"]
_THANKS = ["thanks", "thank you", "thx", "ty"]

_LEADING_RE = re.compile(
    r"^(?:"
    + "|".join(re.escape(p) for p in sorted(_LEADING, key=len, reverse=True))
    + r")\b[\s,:]*",
    re.IGNORECASE,
)
_GREETING_RE = re.compile(
    r"^(?:" + "|".join(re.escape(p) for p in _GREETINGS) + r")\s*[,!:]+\s*", re.IGNORECASE
)
_TRAILING_RE = re.compile(
    r"[\s,]*\b(?:" + "|".join(re.escape(p) for p in _TRAILING) + r")$", re.IGNORECASE
)
# "thanks" at the end only after punctuation: "..., thanks" is filler, "No Thanks" is a name.
_THANKS_RE = re.compile(
    r"[,.!?;]\s*(?:" + "|".join(re.escape(p) for p in _THANKS) + r")\W*$", re.IGNORECASE
)
# "please" in the middle of a sentence ("show me please the ...") is filler too.
_INNER_PLEASE_RE = re.compile(r"(?<=\s)please[\s,]+", re.IGNORECASE)
_TRAILING_PUNCT_RE = re.compile(r"[\s?!.,;:]+$")
_QUOTED_RE = re.compile(r'"[^"]*"')
_SPACES_RE = re.compile(r"\s+")
_TYPOGRAPHIC = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


@dataclass(frozen=True)
class Rewrite:
    original: str
    rewritten: str

    @property
    def changed(self) -> bool:
        return self.original.strip() != self.rewritten


def rewrite_query(query: str) -> Rewrite:
    """Strip question fillers; fall back to the original when nothing meaningful is left."""
    original = query
    # Typographic quotes and apostrophes behave like their ASCII forms ("what’s", “phrase”).
    text = query.translate(_TYPOGRAPHIC)
    text = _SPACES_RE.sub(" ", text).strip()
    # Quoted phrases are the user's exact words: mask them so no rule touches their inside.
    quoted: list[str] = []

    def _mask(match: re.Match[str]) -> str:
        quoted.append(match.group(0))
        return f"\x00{len(quoted) - 1}\x00"

    text = _QUOTED_RE.sub(_mask, text)
    previous = None
    while previous != text:
        previous = text
        text = _THANKS_RE.sub("", text)
        text = _TRAILING_PUNCT_RE.sub("", text)
        text = _GREETING_RE.sub("", text)
        text = _LEADING_RE.sub("", text).strip()
        text = _TRAILING_RE.sub("", text).strip()
    text = _INNER_PLEASE_RE.sub("", text)
    text = _TRAILING_PUNCT_RE.sub("", text)
    text = re.sub(r"\x00(\d+)\x00", lambda m: quoted[int(m.group(1))], text)
    text = _SPACES_RE.sub(" ", text).strip()
    if not re.search(r"\w", text):
        text = original.strip()
    return Rewrite(original=original, rewritten=text)
