"""Extractive synthesis: the supporting sentences, each cited, never an ungrounded word.

Used by the rule policy and as the fallback whenever the LLM fails or returns nothing.
"""

from __future__ import annotations

import math
from collections import Counter

from graph.policies.base import Answer
from graph.text import QUESTION_WORDS, instruction_like, key_terms, sentences, terms
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
    # Both the names/numbers and most of the question's other content words must appear:
    # a page about the right service that never mentions a "port" does not answer
    # "which port...".
    cov, missing = coverage(question, evidence)
    enough = cov >= _MIN_COVERAGE
    keys = key_terms(question)
    if keys:
        key_cov, key_missing = coverage(question, evidence, keys)
        enough = enough and key_cov >= _MIN_KEY_COVERAGE
        missing = list(dict.fromkeys([*key_missing, *missing]))
    weights = term_weights(question, evidence)
    scored: list[tuple[float, int, int, str]] = []
    for n, e in enumerate(evidence, start=1):
        for i, sent in enumerate(sentences(e.text)):
            if instruction_like(sent):
                continue  # data that talks like an instruction is never repeated as an answer
            have = set(terms(f"{e.title} {sent}"))
            s = sum(w for t, w in weights.items() if t in have)
            if s > 0:
                scored.append((s, n, i, sent))
    if not evidence or not scored or not enough:
        what = ", ".join(missing) if missing else "any passage about the question"
        return Answer(
            text=f"{CANNOT_ANSWER} Missing: {what}.",
            answerable=False,
            warnings=warnings,
        )
    # The best sentence of each of the top passages (a later hop rarely shares the
    # question's words), then the best-scoring others, in reading order.
    best_per_doc: dict[int, tuple[float, int, int, str]] = {}
    for item in scored:
        if item[1] not in best_per_doc or item[0] > best_per_doc[item[1]][0]:
            best_per_doc[item[1]] = item
    for n, e in enumerate(evidence[:_LEAD_DOCS], start=1):
        lead = [s for s in sentences(e.text) if not instruction_like(s)]
        if n not in best_per_doc and lead:
            best_per_doc[n] = (0.0, n, 0, lead[0])
    chosen = list(best_per_doc.values())
    chosen = sorted(chosen, key=lambda x: (x[1] > _LEAD_DOCS, -x[0], x[1]))[:_MAX_SENTENCES]
    lines = [f"- {sent} [{n}]" for _, n, _, sent in sorted(chosen, key=lambda x: (x[1], x[2]))]
    short = _short_answer(question, evidence)
    head = f"Answer: {short[0]} [{short[1]}]\n\n" if short else ""
    tail = f"\n\nNot found in the sources: {', '.join(missing)}." if missing else ""
    return Answer(
        text=head + "Supporting evidence:\n" + "\n".join(lines) + tail,
        answerable=True,
        short_answer=short[0] if short else None,
        warnings=warnings,
    )


def _short_answer(question: str, evidence: list[Evidence]) -> tuple[str, int] | None:
    """The entity that closes a chain: a page opened by following a mention (a later
    hop), ranked near the top, that the question itself does not name."""
    q = question.casefold()
    if not q.startswith(("who ", "which ", "whom ")):
        return None  # "what position..." asks about the hop page, not for its name
    for n, e in enumerate(evidence[:3], start=1):
        hop = any(p.tool == "lookup_entity" and p.round > 1 for p in e.provenance)
        name = e.title.split(" (", 1)[0].strip()
        if hop and name and name.casefold() not in q:
            return name, n
    return None
