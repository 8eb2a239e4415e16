"""Claims: every sentence of an answer is checked against the passages it cites.

Whoever wrote the answer (the extractive synthesis or an LLM), the same check holds it to
the evidence: a claim is kept only when the passages it cites carry its names, numbers
and dates and most of its content words. Unsupported claims leave the answer and are
reported with the reason. Citations are then renumbered 1..n in order of first use, one
number per passage, so the reader sees only the passages that support a kept claim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graph.models import Citation, Claim
from graph.text import (
    QUESTION_WORDS,
    SENTENCE_END,
    STOPWORDS,
    instruction_like,
    terms,
    words,
)
from tools.evidence import Evidence

MARK = re.compile(r"\[(\d+)\]")
# Share of a claim's content terms the cited passages (with the question) must hold:
# paraphrase loses some words, an invented statement loses most.
MIN_TERM_SUPPORT = 0.6
# Prompt structure an LLM may echo from its input: never part of an answer.
_FENCE = re.compile(r"</?\s*(evidence|system|user|assistant|instructions?)\b[^>]*>", re.I)
_NUMBER = re.compile(r"\d[\d,.]*\d|\d")
_LINE_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
# A claim's sentences: split after ., ! or ? (and any [n] markers right after them).
_SPLIT = re.compile(rf"{SENTENCE_END}((?:\s*\[\d+\])*)\s+(?=[A-Z0-9\"'“(])")
_COMMON = STOPWORDS | QUESTION_WORDS | {"yes", "no"}
_NAME = re.compile(r"(?<![\w'’])[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*")


@dataclass
class CheckedAnswer:
    text: str  # the kept claims, markers renumbered
    claims: list[Claim]  # every claim, kept or not, markers renumbered where kept
    citations: list[Citation]
    removed_markers: list[str]  # markers that resolved to nothing the caller may read


def neutralise_markers(text: str) -> str:
    """Citation-like markers written inside a document ("see [3]") become plain text, so
    only markers the synthesis itself placed can ever resolve to a passage."""
    return MARK.sub(r"(\1)", text)


def strip_prompt_structure(text: str) -> str:
    return _FENCE.sub("", text)


_HELD_MAX = 64  # a tag longer than this is no prompt tag: it is streamed as it is


class StreamedFenceFilter:
    """Prompt structure stripped from a token stream: a tag may arrive split over tokens
    ("</evi", "dence>"), so text from an unclosed "<" is held until the tag closes."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, delta: str) -> str:
        text = self._held + delta
        cut = text.rfind("<")
        if cut >= 0 and ">" not in text[cut:] and len(text) - cut <= _HELD_MAX:
            text, self._held = text[:cut], text[cut:]
        else:
            self._held = ""
        return strip_prompt_structure(text)

    def flush(self) -> str:
        text, self._held = self._held, ""
        return strip_prompt_structure(text)


def split_claims(answer: str) -> list[str]:
    """Sentences (and list items) of an answer, each with the markers that follow it."""
    out: list[str] = []
    for line in answer.splitlines():
        line = _LINE_ITEM.sub("", line).strip()
        if not line:
            continue
        parts = _SPLIT.split(line)
        # re.split with a group returns [sentence, markers, sentence, markers, ..., last]
        for i in range(0, len(parts), 2):
            piece = parts[i] + (parts[i + 1] if i + 1 < len(parts) else "")
            if piece.strip():
                out.append(piece.strip())
    return out


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "").rstrip(".") for n in _NUMBER.findall(MARK.sub(" ", text))}


def _names(text: str) -> list[str]:
    """Capitalised words that are not just a sentence's first word."""
    out: list[str] = []
    for m in _NAME.finditer(MARK.sub(" ", text)):
        toks = m.group(0).split()
        start = m.start()
        before = text[:start].rstrip()
        if (not before or before[-1] in ".!?:\n-*•") and toks[0].casefold() in _COMMON:
            toks = toks[1:]  # a common word capitalised only because a sentence starts
        out.extend(t for t in toks if len(t) > 1)
    return out


def support_reason(claim: str, passages: list[Evidence], question: str) -> str | None:
    """None when the cited passages support the claim; otherwise why they do not."""
    body = MARK.sub(" ", claim).strip()
    if instruction_like(body):
        return "instruction-like text from a document"
    if not passages:
        return "cites no passage the caller may read"
    # the claim quotes a document's own "[2]" as "(2)" (neutralise_markers): read both alike
    held_text = neutralise_markers(" ".join(f"{e.title} {e.text}" for e in passages))
    held_words = set(words(held_text))
    held_terms = set(terms(held_text)) | set(terms(question))
    for n in _numbers(body):
        if n not in _numbers(held_text) and n not in _numbers(question):
            return f"the number {n} is in no cited passage"
    for name in _names(body):
        w = words(name)
        if w and not set(w) <= held_words and not set(w) <= set(words(question)):
            return f"the name {name!r} is in no cited passage"
    own = terms(body)
    if own:
        share = sum(t in held_terms for t in own) / len(own)
        if share < MIN_TERM_SUPPORT:
            return f"only {share:.0%} of its words are in the cited passages"
    return None


def check_answer(
    answer: str,
    evidence: list[Evidence],
    authorised_ids: set[str],
    question: str,
) -> CheckedAnswer:
    """Check every claim, drop the unsupported ones, renumber the citations of the rest.

    ``[n]`` in ``answer`` indexes ``evidence`` (1-based). A marker that points outside
    it, or at a passage the caller may not read, is removed and reported.
    """
    answer = strip_prompt_structure(answer)
    removed: list[str] = []
    checked: list[tuple[str, list[int], str | None]] = []
    for claim in split_claims(answer):
        cited: list[int] = []
        for m in MARK.finditer(claim):
            n = int(m.group(1))
            if 1 <= n <= len(evidence) and evidence[n - 1].id in authorised_ids:
                if n not in cited:
                    cited.append(n)
            else:
                removed.append(m.group(0))
        body = _clean(MARK.sub("", claim))
        if not body:
            continue
        reason = support_reason(body, [evidence[n - 1] for n in cited], question)
        checked.append((body, cited, reason))
    # Renumber: passages in order of first use by a kept claim; one number per passage.
    number: dict[int, int] = {}
    for _, cited, reason in checked:
        if reason is None:
            for n in cited:
                number.setdefault(n, len(number) + 1)
    claims: list[Claim] = []
    kept: list[str] = []
    for body, cited, reason in checked:
        if reason is None:
            marks = [number[n] for n in cited]
            kept.append(body + "".join(f" [{m}]" for m in marks))
            claims.append(Claim(text=body, citations=marks, supported=True))
        else:
            claims.append(Claim(text=body, citations=[], supported=False, reason=reason))
    citations = [
        Citation(
            n=new,
            evidence_id=evidence[old - 1].id,
            doc_id=evidence[old - 1].doc_id,
            title=evidence[old - 1].title,
            text=evidence[old - 1].text,
            locator=evidence[old - 1].locator,
        )
        for old, new in number.items()
    ]
    return CheckedAnswer("\n".join(kept), claims, citations, removed)


def _clean(text: str) -> str:
    """Spaces a removed marker left behind; punctuation that starts a word (".pyc",
    ":memory:") keeps the space before it."""
    text = re.sub(r"[ \t]{2,}", " ", text)
    return re.sub(r"[ \t]+([.,;:])(?=\s|$)", r"\1", text).strip()
