"""Extractive synthesis: the supporting sentences, each cited, never an ungrounded word.

Used by the rule policy and as the fallback whenever the LLM fails or returns nothing.
"""

from __future__ import annotations

import math
from collections import Counter

from graph.policies.base import Answer
from graph.support import Support, answer_type, assess_support
from graph.text import QUESTION_WORDS, instruction_like, proper_phrases, sentences, terms
from tools.evidence import Evidence

CANNOT_ANSWER = "I can't answer this from the available sources."
_MAX_SENTENCES = 6
_LEAD_DOCS = 4
# Share of the question's names/numbers the evidence must cover to attempt an answer
# (or of its salient terms, when it names nothing).
_MIN_KEY_COVERAGE = 0.75
_MIN_COVERAGE = 0.5


def salient_terms(question: str) -> list[str]:
    return [t for t in terms(question) if t not in QUESTION_WORDS]


def term_weights(question: str, evidence: list[Evidence]) -> dict[str, float]:
    """IDF over the evidence at hand: a term every passage shares says little."""
    q = salient_terms(question)
    df: Counter[str] = Counter()
    for e in evidence:
        have = set(terms(f"{e.title} {e.text}"))
        df.update(t for t in q if t in have)
    n = max(len(evidence), 1)
    return {t: math.log(1 + n / (1 + df[t])) + 0.1 for t in q}


def coverage(
    question: str, evidence: list[Evidence], q: list[str] | None = None
) -> tuple[float, list[str]]:
    q = salient_terms(question) if q is None else q
    if not q:
        return 1.0, []
    have: set[str] = set()
    for e in evidence:
        have.update(terms(f"{e.title} {e.text}"))
    missing = [t for t in q if t not in have]
    return 1 - len(missing) / len(q), missing


def extractive_answer(question: str, evidence: list[Evidence], note: str | None = None) -> Answer:
    warnings = [note] if note else []
    # Faithfulness, not overlap: some sentence, read with its page and its chain, must
    # state what the question asks about next to the question's own names.
    verdict = assess_support(question, evidence)
    if not evidence or not verdict.supported:
        what = ", ".join(verdict.missing) if verdict.missing else "any passage about the question"
        return Answer(
            text=f"{CANNOT_ANSWER} Missing: {what}.",
            answerable=False,
            warnings=warnings,
        )
    # The supporting sentences first (one per passage, the most direct), then the best
    # sentence of each top passage for context (a later hop rarely shares the question's
    # words), in reading order.
    chosen: dict[int, tuple[float, int, int, str]] = {}
    for sup in sorted(verdict.supports, key=lambda x: (-(x.direct + x.coverage), x.index)):
        if sup.index not in chosen and len(chosen) < _MAX_SENTENCES:
            chosen[sup.index] = (10 + sup.direct + sup.coverage, sup.index, sup.order, sup.sentence)
    weights = term_weights(question, evidence)
    for n, e in enumerate(evidence[:_LEAD_DOCS], start=1):
        if n in chosen or len(chosen) >= _MAX_SENTENCES:
            continue
        best: tuple[float, int, int, str] | None = None
        for i, sent in enumerate(sentences(e.text)):
            if instruction_like(sent):
                continue  # data that talks like an instruction is never repeated
            have = set(terms(f"{e.title} {sent}"))
            score = sum(w for t, w in weights.items() if t in have)
            if score > 0 and (best is None or score > best[0]):
                best = (score, n, i, sent)
        if best is None:
            lead = [(i, x) for i, x in enumerate(sentences(e.text)) if not instruction_like(x)]
            best = (0.0, n, lead[0][0], lead[0][1]) if lead else None
        if best is not None:
            chosen[n] = best
    lines = [f"- {sent} [{n}]" for _, n, _, sent in sorted(chosen.values(), key=lambda x: x[1:3])]
    short = _short_answer(question, evidence, verdict.supports)
    head = f"Answer: {short[0]} [{short[1]}]\n\n" if short else ""
    return Answer(
        text=head + "Supporting evidence:\n" + "\n".join(lines),
        answerable=True,
        short_answer=short[0] if short else None,
        warnings=warnings,
    )


def _short_answer(
    question: str, evidence: list[Evidence], supports: list[Support]
) -> tuple[str, int] | None:
    """A name that can be read off: for "who", the person named in the most direct
    supporting sentence; otherwise the entity that closes a chain (a page opened by
    following a mention, ranked near the top, that the question does not name)."""
    q = question.casefold()
    ask = (sentences(question) or [question])[-1].casefold()  # "Ticket X ... . Who leads..."
    if not ask.startswith(("who ", "which ", "whom ")):
        return None  # "what position..." asks about the hop page, not for its name
    q_terms = set(terms(question))
    if ask.startswith(("who ", "whom ")):
        for sup in sorted(supports, key=lambda x: (-(x.direct + x.coverage), x.index)):
            names = [
                p
                for p in proper_phrases(sup.sentence)
                if 2 <= len(p.split()) <= 4
                and all(w[:1].isupper() for w in p.split())
                and not set(terms(p)) & q_terms
            ]
            if names:
                return names[0], sup.index
    # "which team ..." is answered by a page title only if the title names that kind.
    kind = set(answer_type(question))
    for n, e in enumerate(evidence[:3], start=1):
        hop = any(p.tool == "lookup_entity" and p.round > 1 for p in e.provenance)
        name = e.title.split(" (", 1)[0].strip()
        fits = bool(kind & set(terms(name))) or (
            ask.startswith(("who ", "whom ")) and _name_like(name)
        )
        if hop and fits and name and name.casefold() not in q:
            return name, n
    return None


def _name_like(text: str) -> bool:
    """A person's or organisation's name: a few capitalised words, no ids or punctuation."""
    parts = text.split()
    return 1 <= len(parts) <= 4 and all(p[:1].isupper() and p.isalpha() for p in parts)
