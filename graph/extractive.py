"""Extractive synthesis: the supporting sentences, each cited, never an ungrounded word.

Used by the rule policy and as the fallback whenever the LLM fails or returns nothing.
"""

from __future__ import annotations

import math
from collections import Counter

from graph.claims import neutralise_markers
from graph.policies.base import Answer
from graph.short_answer import find_short_answer
from graph.support import assess_support
from graph.text import QUESTION_WORDS, instruction_like, terms
from tools.evidence import Evidence

CANNOT_ANSWER = "I can't answer this from the available sources."
NO_SUPPORTED_CLAIM = "No statement of the answer is supported by the passages it cites."
_MAX_SENTENCES = 3
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
            extractive=True,
        )
    found = find_short_answer(question, evidence, verdict.supports)
    if found is not None:
        # The passages that decide the short answer, in chain order, and nothing else.
        picked = [(n, sent) for n, sent in found.support if not instruction_like(sent)]
    else:
        # No value can be read off: say what was found, the most direct supporting
        # sentences (one per passage).
        picked = []
        for sup in sorted(verdict.supports, key=lambda x: (-(x.direct + x.coverage), x.index)):
            if all(sup.index != n for n, _ in picked) and len(picked) < _MAX_SENTENCES:
                picked.append((sup.index, sup.sentence))
        picked.sort()
    lines = [f"{neutralise_markers(sent)} [{n}]" for n, sent in picked]
    return Answer(
        text="\n".join(lines),
        answerable=True,
        short_answer=found.value if found else None,
        warnings=warnings,
        extractive=True,
    )
