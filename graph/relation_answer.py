"""What a named relation holds: "what is the county seat of X" read off "Its county seat
is Newport." or "Newport is the county seat of X".

A question that asks for the holder of a relation by its noun phrase ("the county seat
of", "the capital of", "X's owner") is answered by the name English writes as that
phrase's complement: after "<phrase> is" / "<phrase> of <...> is", or before "is the
<phrase>". Of the passages that write one, the one whose context (the sentence, its
page's title and the pages it was reached from) binds most of the question's other words
decides; two names bound as well are no answer, nor is a name the question gives.
"""

from __future__ import annotations

import re

from graph.agent_answer import best_bound
from graph.question import ask_of, asked_phrase
from graph.text import QUESTION_WORDS, key_terms, sentences, stem, terms, words
from tools.evidence import Evidence
from tools.titles import base_title, has_words

# Phrases that ask a value of another type (read by the number, date and default readers)
# or a description rather than a name.
_NOT_A_NAME = frozenset(
    """year date day month time number population amount size length height age area
    price cost value default name meaning purpose reason role type kind genre nationality
    difference way use""".split()
)
# A name: capitalised words, with the small words names carry inside ("Bank of Italy").
_NAME = (
    r"((?:[A-Z][\w'’.-]*)(?:\s+(?:(?:of|the|de|du|la|le|von|van|and|&)\s+)?[A-Z][\w'’.-]*){0,5})"
)
_COPULA = r"(?:is|was|are|were|has\s+been|had\s+been|became|remains)"
_PRONOUNS = frozenset("it its he she they this that these those there which who".split())


def asked_relation(question: str) -> str | None:
    """The relation's noun phrase a question asks the holder of: "county seat"; or None."""
    phrase = asked_phrase(question)
    if phrase is None:
        return None
    toks = phrase.split()
    if toks[-1] in _NOT_A_NAME or toks[-1] in QUESTION_WORDS:
        return None
    return phrase


def _patterns(phrase: str) -> list[re.Pattern[str]]:
    p = r"\s+".join(re.escape(t) for t in phrase.split())
    return [
        # "Its county seat is Newport", "the county seat of Sullivan County is Newport"
        re.compile(rf"\b{p}(?:\s+of\s+[^,.;()]{{1,60}}?)?,?\s+{_COPULA}\s+(?:the\s+)?{_NAME}"),
        # "Newport is the county seat of ..."
        re.compile(rf"{_NAME}(?:\s*,[^,]{{1,60}},)?\s+{_COPULA}\s+(?:also\s+)?the\s+{p}\b"),
        # "its county seat, Newport,"
        re.compile(rf"\b{p},\s+{_NAME},"),
    ]


def relation_answer(
    question: str, evidence: list[Evidence]
) -> tuple[str, list[tuple[int, str]]] | None:
    phrase = asked_relation(question)
    if phrase is None:
        return None
    patterns = _patterns(phrase)
    asked = {stem(w) for w in words(phrase)}
    keys = {stem(w) for w in key_terms(question)}
    other = [t for t in terms(ask_of(question)) if t not in QUESTION_WORDS and t not in asked]
    if not other:
        return None
    # A page's context is what the passages naming it say: the hop that leads to Sullivan
    # County is the passage about East Lempster that writes "Sullivan County".
    mentioned: list[set[str]] = []
    for e in evidence:
        name = base_title(e.title).casefold()
        held: set[str] = set()
        if len(name) >= 3:
            for a in evidence:
                if a.doc_id != e.doc_id and has_words(name, a.text.casefold()):
                    held |= set(terms(f"{a.title} {a.text}"))
        mentioned.append(held)
    scored: list[tuple[int, str, int, str]] = []
    for n, e in enumerate(evidence, start=1):
        for sent in sentences(e.text):
            for pat in patterns:
                for m in pat.finditer(sent):
                    name = m.group(1).strip().rstrip(".,")
                    if not name or name.casefold() in _PRONOUNS:
                        continue
                    if {stem(w) for w in words(name)} <= keys | asked:
                        continue  # a name the question gives is not the one it asks for
                    held = set(terms(sent)) | set(terms(e.title)) | mentioned[n - 1]
                    scored.append((sum(t in held for t in other), name, n, sent))
    return best_bound(scored, len(other))
