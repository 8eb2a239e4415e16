"""Who made it: the agent of a passive, "directed by Brad Silberling", "written by Phil
Spector".

A question that asks for a work's maker by an agent noun ("who is the writer of …", "the
director of …") or by the participle itself ("a movie directed by who?") is answered by
the name English writes right after that participle and "by". Of the passages that write
one, the one whose context (the sentence, its page's title and the pages it was reached
from) binds most of the question's other words decides; two names bound as well are no
answer.
"""

from __future__ import annotations

import re

from graph.question import ask_of
from graph.support import chain_context
from graph.text import QUESTION_WORDS, STOPWORDS, key_terms, sentences, stem, terms, words
from tools.evidence import Evidence
from tools.titles import base_title

# "writer" -> "writ" (written), "director" -> "direct" (directed), "producer" -> "produc"
_AGENT = re.compile(r"^(\w{3,}?)(?:er|or)$")
# "directed by who", "written by whom"
_PARTICIPLE_BY_WHO = re.compile(r"\b(\w+(?:ed|en))\s+by\s+(?:who|whom)\b", re.IGNORECASE)
# A work has one director or writer but a cast of players: "played by" names one of many.
_CAST = frozenset({"played", "portrayed", "voiced", "starred"})
# Past tenses whose participle another stem spells: "wrote" -> "written".
_IRREGULAR = {"wrote": "writ", "sang": "sung", "drew": "drawn", "built": "built"}
# a name of two to four capitalised words right after "<participle> by"
_NAME = r"((?:[A-Z][\w'’.-]*\s+){1,3}[A-Z][\w'’-]*)"
# Share of the question's other terms the passage's context must hold.
_MIN_BINDING = 0.5


def asked_agent(question: str) -> str | None:
    """The participle's stem the maker is asked by: "writ", "direct"; None otherwise."""
    ask = ask_of(question)
    m = _PARTICIPLE_BY_WHO.search(ask)
    if m:
        return m.group(1).casefold()
    toks = words(ask)
    if not toks or toks[0] not in {"who", "whom"}:
        return None
    if len(toks) > 2 and toks[1] not in _CAST and (toks[1].endswith("ed") or toks[1] in _IRREGULAR):
        # "who directed X", "who wrote X": X was directed / written by the answer
        return _IRREGULAR.get(toks[1], toks[1][:-2])
    for i, t in enumerate(toks[:-1]):
        if toks[i + 1] == "of" and t not in STOPWORDS:
            agent = _AGENT.match(t)  # the outermost relation: "the writer of X"
            return agent.group(1) if agent else None
    return None


def agent_answer(
    question: str, evidence: list[Evidence]
) -> tuple[str, list[tuple[int, str]]] | None:
    stem_ = asked_agent(question)
    if stem_ is None:
        return None
    by = re.compile(rf"\b{re.escape(stem_)}\w*\s+by\s+{_NAME}")
    keys = set(key_terms(question))
    other = [
        t for t in terms(ask_of(question)) if t not in QUESTION_WORDS and not t.startswith(stem_)
    ]
    if not other:
        return None
    contexts, _ = chain_context(evidence, question)
    # the page's other sentences are not the sentence's context (a cast list names many
    # players); the pages it was reached from are
    own: dict[str, set[str]] = {}
    for e in evidence:
        own.setdefault(e.doc_id, set()).update(terms(f"{e.title} {e.text}"))
    scored: list[tuple[int, str, int, str]] = []
    for n, e in enumerate(evidence, start=1):
        for sent in sentences(e.text):
            m = by.search(sent)
            if not m:
                continue
            name = m.group(1).strip().rstrip(".,")
            if {stem(w) for w in words(name)} <= keys:
                continue  # a name the question gives is not the one it asks for
            reached_from = contexts[n - 1] - own[e.doc_id]
            held = set(terms(sent)) | set(terms(base_title(e.title))) | reached_from
            scored.append((sum(t in held for t in other), name, n, sent))
    return best_bound(scored, len(other))


def best_bound(
    scored: list[tuple[int, str, int, str]], other: int
) -> tuple[str, list[tuple[int, str]]] | None:
    """Of (terms bound, name, evidence n, sentence) readings, the name bound best when it
    binds at least half of the question's ``other`` terms and no other name binds as many."""
    if not scored:
        return None
    scored = sorted(scored, key=lambda x: -x[0])
    best = scored[0]
    if best[0] < _MIN_BINDING * other:
        return None
    if any(s[0] == best[0] and s[1] != best[1] for s in scored[1:]):
        return None  # two names bound as well
    return best[1], [(best[2], best[3])]
