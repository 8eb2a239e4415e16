"""Extractive synthesis: the supporting sentences, each cited, never an ungrounded word.

Used by the rule policy and as the fallback whenever the LLM fails or returns nothing.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections import Counter
from collections.abc import Callable

from graph.claims import neutralise_markers
from graph.lexicon import closeness
from graph.policies.base import Answer
from graph.short_answer import assigned, find_short_answer, in_named_scope, stated_value
from graph.statements import (
    asks_more_than_once,
    assigned_value,
    expand_terms,
    statements,
    superseded,
    value_kind,
)
from graph.support import (
    Support,
    Verdict,
    assess_support,
    chain_context,
    heading_of,
    question_parts,
    unstated_attribute,
)
from graph.text import QUESTION_WORDS, acronyms, instruction_like, sentences, terms
from tools.evidence import Evidence
from tools.titles import base_title

CANNOT_ANSWER = "I can't answer this from the available sources."
NO_SUPPORTED_CLAIM = "No statement of the answer is supported by the passages it cites."
_MAX_SENTENCES = 3
# A supporting sentence is quoted beside the best one only when it covers nearly as much.
_NEAR_BEST = 0.9
# Share of the question's names/numbers the evidence must cover to attempt an answer
# (or of its salient terms, when it names nothing).
_MIN_KEY_COVERAGE = 0.75
_MIN_COVERAGE = 0.5


_MARKUP = re.compile(r"^\s*(?:#{1,6}\s+|[-*•]\s+|\d+[.)]\s+|>\s*|\|)|\|\s*$")


def quote(sentence: str, q_terms: set[str], value: str | None = None) -> str:
    """One line to quote: a "sentence" of a Markdown list or table spans lines, and only
    its line that states the value (or shares most with the question) is the claim."""
    raw = [ln for ln in sentence.splitlines() if ln.strip()]
    lines = [_MARKUP.sub("", ln).strip() for ln in raw]
    if len(lines) <= 1:
        return " ".join(sentence.split())
    if value:
        for ln in lines:
            if value.casefold() in ln.casefold():
                return ln
    # A heading restates the subject; the line under it says something about it.
    body = [ln for r, ln in zip(raw, lines, strict=True) if not r.lstrip().startswith("#")]
    body = [ln for ln in body if set(terms(ln)) - q_terms] or lines

    def score(ln: str) -> tuple[int, int, int]:
        own = set(terms(ln)) | acronyms(ln)
        return (len(q_terms & own), len(own - q_terms) > 0, -lines.index(ln))

    return max(body, key=score)


def _closest_sentence(text: str, question: str) -> str | None:
    q = set(terms(question))
    scored = [
        (len(q & set(terms(x))), -i, x)
        for i, x in enumerate(sentences(text))
        if not instruction_like(x) and set(terms(x)) - q
    ]
    best = max(scored, default=None)
    return best[2] if best and best[0] > 0 else None


def _with_chain(
    picked: list[tuple[int, str]],
    evidence: list[Evidence],
    supports: list[Support],
    question: str,
) -> list[tuple[int, str]]:
    """A passage reached by following a mention is cited with the passage that named it
    (and the other way round): the chain is the answer's support ("the runbook names
    Dana; Dana's page says she leads Payments"). The chain's supporting sentences are
    added, parent before child, one reached page per quoted one."""
    ids = {e.id: n for n, e in enumerate(evidence, start=1)}
    parent_of = {
        n: ids[p.parent]
        for n, e in enumerate(evidence, start=1)
        for p in e.provenance
        if p.parent in ids and ids[p.parent] != n
    }
    best: dict[int, str] = {}
    rank: dict[int, int] = {}
    for sup in sorted(supports, key=lambda x: (-(x.direct + x.coverage), x.index)):
        best.setdefault(sup.index, sup.sentence)
        rank.setdefault(sup.index, len(rank))
    titles = [base_title(e.title).casefold() for e in evidence]
    chosen = dict(picked)
    for n in list(chosen):
        # A chain is a path, not a tree: of the pages reached from this one (the loop
        # follows many of its mentions), the one that speaks to the question best is its
        # next hop; the others are what was looked at, not what supports the answer.
        reached = [m for m, p in parent_of.items() if p == n and m in best and m not in chosen]
        linked = sorted(reached, key=rank.__getitem__)[:1] + [parent_of.get(n, 0)]
        # a page the quoted sentence names ("Owner: Payments team" -> the Payments team page)
        said, own = chosen[n].casefold(), titles[n - 1]
        named = [
            m
            for m, title in enumerate(titles, start=1)
            # another subject than the quoted page's own: the same one is no next hop
            if len(title) >= 3 and title in said and title != own
        ]
        for m in linked:
            if m and m not in chosen and m in best:
                chosen[m] = best[m]
        # Likewise one of the pages the sentence names, the first that speaks to the
        # question (its next hop): a supporting one first, the best.
        named = sorted(
            (m for m in named if m not in chosen),
            key=lambda m: (0, rank[m], m) if m in rank else (1, 0, m),
        )
        for m in named:
            line = best.get(m) or _closest_sentence(evidence[m - 1].text, question)
            if line:
                chosen[m] = line
                break
    order = sorted(chosen, key=lambda n: (_depth(n, parent_of), n))
    return [(n, chosen[n]) for n in order]


def _depth(n: int, parent_of: dict[int, int]) -> int:
    depth, seen = 0, {n}
    while n in parent_of and parent_of[n] not in seen:
        n = parent_of[n]
        seen.add(n)
        depth += 1
    return depth


_VALUE_NAMES = {
    "number": "the number",
    "duration": "the duration",
    "date": "the date or release",
    "literal": "the default value",
}


# The names a technical question asks about: sqlite3.connect, dirs_exist_ok, relay-eu1.
_NAMED = re.compile(r"`?\w+(?:[._]\w+)+`?|\b\w+(?:-\w+)+\b|\b[A-Z][\w-]*\d[\w-]*")


def _asked_value(question: str) -> str:
    """ "the default value asked for (dirs_exist_ok)": what the refusal says is missing."""
    what = _VALUE_NAMES.get(value_kind(question) or "", "the value")
    names = [m.group(0).strip("`") for m in _NAMED.finditer(question)]
    return f"{what} asked for" + (f" ({', '.join(dict.fromkeys(names))})" if names else "")


def _states_a_value(question: str, evidence: list[Evidence]) -> bool:
    """A question that asks for a value (a number, a duration, a date, a default) is
    answered only by a sentence that writes one of that type in the scope of what the
    question names: "how many bytes does token_bytes return by default" is not answered
    by its signature, nor "how often does the interpreter switch threads" by a sentence
    about switching that states no period."""
    if value_kind(question) is None or asks_more_than_once(question):
        return True  # a value read through an earlier sentence's hop: not judged here
    return bool(statements(question, evidence)) or assigned_value(question, evidence) is not None


def _best_supports(supports: list[Support]) -> list[tuple[int, str]]:
    """The most direct supporting sentences, one per passage: what states the answer, not
    every passage that touches it."""
    picked: list[tuple[int, str]] = []
    ranked = sorted(supports, key=lambda x: (-(x.direct + x.coverage), x.index))
    top = ranked[0].direct + ranked[0].coverage
    for sup in ranked:
        if sup.direct + sup.coverage < _NEAR_BEST * top or len(picked) >= _MAX_SENTENCES:
            break
        if all(sup.index != n for n, _ in picked):
            picked.append((sup.index, sup.sentence))
    return picked


# Sentences bound to the question within this much of the best one are quoted too (up to
# _BOUND_MAX passages): near-ties are shown, not decided.
_BOUND_MARGIN = 0.05
_BOUND_MAX = 2


def _about_named(question: str, evidence: list[Evidence]) -> Callable[[int, str], bool]:
    """Does a sentence (with its page's title and headings) name one of the things the
    question names? A quote about none of them ("newer" in a glossary entry on new-style
    classes, for "correlation or fmean, which is newer?") cites a page that is not about
    the question; one is quoted only when no sentence names any. A page reached by
    following a mention counts with the page it was reached from."""
    keys = set(question_parts(question).keys)
    contexts, linked = chain_context(evidence, question) if keys else ([], set())

    def about(n: int, sentence: str) -> bool:
        e = evidence[n - 1]
        if not keys or keys & expand_terms(f"{e.title} {heading_of(e)} {sentence}"):
            return True
        # a hop's page speaks of the bridge, not of what the question names: the page it
        # was reached from names that
        return e.id in linked and bool(keys & contexts[n - 1])

    return about


def _bound_statements(
    question: str, evidence: list[Evidence], about: Callable[[int, str], bool]
) -> list[tuple[int, str]]:
    """When no value can be read off: the sentences that bind the question's names and
    terms best, each read in its own scope (one per passage), rather than every sentence
    that shares enough words with the question; those naming what the question names
    first."""
    found = [st for st in statements(question, evidence) if not _asks(st.sentence)]
    found = [st for st in found if about(st.index, st.sentence)] or found
    if not found:
        return []
    top = found[0].bound
    picked: list[tuple[int, str]] = []
    for st in found:
        if st.bound < top - _BOUND_MARGIN or len(picked) >= _BOUND_MAX:
            break
        if all(st.index != n for n, _ in picked):
            picked.append((st.index, st.sentence))
    return picked


def _asks(sentence: str) -> bool:
    return sentence.rstrip().endswith("?")


# A sentence weighed for meaning: a few words at least (not a label), not a whole listing.
_MEANING_WORDS = (3, 80)
_MEANING_QUOTES = 2  # passages the meaning quotes come from, at most


def _closest_statements(
    question: str,
    evidence: list[Evidence],
    about: Callable[[int, str], bool],
    quoted: list[tuple[int, str]],
) -> list[tuple[int, str]]:
    """The sentences nearest the question in meaning, one from each of up to
    ``_MEANING_QUOTES`` passages not yet quoted, that the embedding model ranks above every
    sentence already quoted; nearest first. Quotes are picked by how the question's words
    bind in a sentence, and a sentence that answers in other words ("If port is omitted,
    the standard IMAP4-over-SSL port (993) is used." for "the default port") shares few of
    them; the model was trained to place a question near the passages that answer it. An
    answer often spans two passages (a chain's two hops, a comparison's two sides), hence
    one sentence from each of two. They are quoted beside the word-picked sentences, not
    instead of them: a repeated name binds more surely than a nearness score."""
    at = {n for n, _ in quoted}
    asked = set(salient_terms(question))
    low, high = _MEANING_WORDS
    candidates = [
        (n, sent)
        for n, e in enumerate(evidence, start=1)
        if n not in at
        for sent in sentences(e.text)
        if low <= len(sent.split()) <= high
        # a question restated in a thread or a FAQ sits nearest the question and answers
        # nothing; a sentence sharing no word with the question states nothing about it
        and not _asks(sent)
        and asked & set(terms(sent))
        and not instruction_like(sent)
        and about(n, sent)
    ]
    if not candidates:
        return []
    pool = [*quoted, *candidates]
    near = closeness(question, [f"{evidence[n - 1].title}: {sent}" for n, sent in pool])
    if near is None:
        return []
    bar = max(near[: len(quoted)], default=float("-inf"))
    chosen: list[tuple[int, str]] = []
    for i in sorted(range(len(quoted), len(pool)), key=lambda i: -near[i]):
        if near[i] <= bar or len(chosen) == _MEANING_QUOTES:
            break
        if all(pool[i][0] != n for n, _ in chosen):
            chosen.append(pool[i])
    return chosen


_HEADING_MAX_WORDS = 8


def _heading_like(line: str, value: str | None) -> bool:
    """A short line with no sentence end, no number and no field separator: a title, a
    heading or a field's label, not a statement. A line holding the answer's value is
    never one."""
    text = line.strip().rstrip("¶").strip()
    if value and value.casefold() in text.casefold():
        return False
    return (
        0 < len(text.split()) <= _HEADING_MAX_WORDS
        and not text.endswith((".", "!", "?", '"', ")"))
        # a field with its value ("Owner: Payments team", "**Dana**: team lead") states it
        and not re.search(r"\d|\||=|:\s*\S", text)
    )


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


async def extractive_answer_in_thread(
    question: str, evidence: list[Evidence], note: str | None = None
) -> Answer:
    """:func:`extractive_answer` in a worker thread: it runs the embedding model, which must
    not hold the event loop that other runs' streams and the API's requests share."""
    return await asyncio.to_thread(extractive_answer, question, evidence, note)


def extractive_answer(question: str, evidence: list[Evidence], note: str | None = None) -> Answer:
    warnings = [note] if note else []
    # Faithfulness, not overlap: some sentence, read with its page and its chain, must
    # state what the question asks about next to the question's own names.
    verdict = assess_support(question, evidence)
    # A choice or a yes/no is decided by values read from each option's own page; that
    # reading grounds itself even when no single sentence covers the question's words.
    # So does a value the evidence assigns to the setting the question names.
    decided = (
        find_short_answer(question, evidence, []) or assigned(question, evidence)
        if not verdict.supported
        else None
    )
    if verdict.supported and value_kind(question) is None:
        # a value question is held to a sentence stating a value of its type (below);
        # another is held to the attribute it asks
        unstated = unstated_attribute(question, evidence)
        if unstated:
            verdict = Verdict(False, unstated, [])
    if not evidence or (not verdict.supported and decided is None):
        what = ", ".join(verdict.missing) if verdict.missing else "any passage about the question"
        return Answer(
            text=f"{CANNOT_ANSWER} Missing: {what}.",
            answerable=False,
            warnings=warnings,
            extractive=True,
        )
    supports = superseded(verdict.supports, evidence)
    if decided is None and not _states_a_value(question, evidence):
        return Answer(
            text=f"{CANNOT_ANSWER} Missing: a passage that states {_asked_value(question)}.",
            answerable=False,
            warnings=warnings,
            extractive=True,
        )
    found = (
        decided
        or find_short_answer(question, evidence, supports)
        or stated_value(question, evidence)
    )
    if found is not None and not in_named_scope(question, evidence, found.support):
        # another thing's value (http.client's port for http.server's) is no answer
        found = None
        if value_kind(question) is not None:
            return Answer(
                text=f"{CANNOT_ANSWER} Missing: a passage that states {_asked_value(question)}.",
                answerable=False,
                warnings=warnings,
                extractive=True,
            )
    value = found.value if found else None
    if found is not None:
        # The passages that decide the short answer, in chain order, and nothing else.
        picked = [(n, sent) for n, sent in found.support if not instruction_like(sent)]
    else:
        # No value can be read off: say what was found, the most direct supporting
        # sentences (one per passage).
        about = _about_named(question, evidence)
        # a question in a thread or a FAQ repeats the asker's words and states nothing
        statement = [s for s in supports if not _asks(s.sentence)] or supports
        picked = _bound_statements(question, evidence, about) or _best_supports(
            [s for s in statement if about(s.index, s.sentence)] or statement
        )
        picked += _closest_statements(question, evidence, about, picked)
        picked = _with_chain(picked, evidence, supports, question)
        picked.sort()
    q_terms = set(terms(question))
    quoted = [(n, quote(sent, q_terms, value)) for n, sent in picked]
    # A heading or a label quoted alone ("Apache Module mod_ssl", "Technical Solution ¶",
    # "join-clause:") states nothing: it is not a claim, unless it is all there is.
    stating = [(n, q) for n, q in quoted if not _heading_like(q, value)] or quoted
    lines = [f"{neutralise_markers(q)} [{n}]" for n, q in stating]
    return Answer(
        text="\n".join(lines),
        answerable=True,
        short_answer=found.value if found else None,
        warnings=warnings,
        extractive=True,
    )
