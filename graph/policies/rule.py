"""RulePolicy: the embedded default, no LLM.

Plan: the question itself, the pages it names, and for a comparison one search per
entity. Assess: are the question's salient terms covered by the top evidence, and which
pages do the top passages mention that are not opened yet (the bridge hop)? Rank: the
search's own order, coverage of the question, and links (a page mentioned by a
well-ranked passage inherits part of its score). Synthesis: extractive.
"""

from __future__ import annotations

import re
from typing import Any

from graph.extractive import extractive_answer, salient_terms, term_weights
from graph.policies.base import AssessStep, OnToken, PlanStep, Verdict, View
from graph.text import proper_phrases, sentences, terms
from tools.evidence import Evidence
from tools.executor import ToolCall
from tools.titles import TitleIndex, base_title

_COMPARISON = re.compile(
    r"\b(both|same|either|neither|compared?|older|younger|earlier|later|first|"
    r"more|less|larger|smaller|bigger|higher|lower|longer|shorter)\b|,[^,]+\bor\b[^,]+\?$",
    re.IGNORECASE,
)
# "the county where X is located" -> an inner sub-question whose answer feeds the outer one.
_RELATIVE = re.compile(
    r"\b(?:the|a|an)\s+((?:\w+\s){0,2}?\w+)\s+(?:where|that|which|who|whom|whose|in which|"
    r"of which|by which|on which)\s+([^?,]+)",
    re.IGNORECASE,
)

# Passages that talk like instructions stay evidence (data) but never steer the plan: a
# document must not be able to choose the next tool call by asking for it.
_INSTRUCTION_LIKE = re.compile(
    r"\b(ignore|disregard|forget)\b[^.]{0,40}\b(instructions?|prompts?|rules|above)\b|"
    r"^\s*(system|assistant)\s*:|\b(you must|you are now|call (the )?\w+ tool|"
    r"call lookup_entity|call search_knowledge)\b",
    re.IGNORECASE | re.MULTILINE,
)


def instruction_like(text: str) -> bool:
    return bool(_INSTRUCTION_LIKE.search(text))


MAX_QUESTION_LOOKUPS = 4
MAX_HOP_LOOKUPS = 6
MAX_HOP_SEARCHES = 2
ENTITIES_PER_PASSAGE = 2
TOP_FOR_HOPS = 4


def named_titles(text: str, titles: TitleIndex | None, proper_only: bool = True) -> list[str]:
    """Titles ``text`` names; with ``proper_only`` the mention must be capitalised."""
    if titles is None:
        return []
    out = []
    for title in titles.mentions(text):
        name = base_title(title)
        m = re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", text, re.IGNORECASE)
        if m and (not proper_only or m.group(0)[0].isupper() or m.group(0)[0].isdigit()):
            out.append(title)
    return out


def comparison_entities(question: str, titles: TitleIndex | None) -> list[str]:
    if not _COMPARISON.search(question):
        return []
    named = [base_title(t) for t in named_titles(question, titles)]
    # Prefer the longest distinct names (a title inside another one is the same entity).
    names = [n for n in named if not any(n != o and n in o for o in named)]
    if len(names) >= 2:
        return list(dict.fromkeys(names))[:3]
    m = re.search(r",\s*([^,]+?)\s+or\s+([^?]+)\?$", question)
    if m:
        return [m.group(1).strip(), m.group(2).strip()]
    m = re.search(r"^\w+\s+(?:both\s+)?(.+?)\s+and\s+(.+?)\s+(?:both\s+)?\w+", question)
    if m:
        left = proper_phrases(m.group(1))
        right = proper_phrases(m.group(2))
        if left and right:
            return [left[-1], right[0]]
    return []


def bridge_entities(e: Evidence, question: str) -> list[str]:
    """Names in a passage that the question does not contain, best first: those in the
    sentences sharing most words with the question (where the hop is stated)."""
    q_terms = set(salient_terms(question))
    q_fold = question.casefold()
    title = base_title(e.title).casefold()
    scored: list[tuple[int, int, str]] = []
    for i, sent in enumerate(sentences(e.text)):
        overlap = len(q_terms & set(terms(sent)))
        for phrase in proper_phrases(sent):
            fold = phrase.casefold()
            if fold in q_fold or fold == title or fold in title or len(phrase) < 3:
                continue
            if set(terms(phrase)) <= q_terms:
                continue
            scored.append((-overlap, i, phrase))
    out: list[str] = []
    for _, _, phrase in sorted(scored, key=lambda x: (x[0], x[1])):
        if phrase not in out:
            out.append(phrase)
    return out


class RulePolicy:
    name = "rule"

    async def plan(self, view: View) -> PlanStep:
        q = view.question
        k = view.options.k
        calls = [ToolCall(tool="search_knowledge", args={"query": q, "k": k}, reason="question")]
        if view.options.mode == "hybrid":
            return PlanStep(calls=calls)
        for title in named_titles(q, view.titles)[:MAX_QUESTION_LOOKUPS]:
            calls.append(
                ToolCall(tool="lookup_entity", args={"name": title}, reason="named in question")
            )
        entities = comparison_entities(q, view.titles)
        if entities:
            rest = " ".join(t for t in salient_terms(q) if not any(t in terms(e) for e in entities))
            for e in entities:
                calls.append(
                    ToolCall(
                        tool="search_knowledge",
                        args={"query": f"{e} {rest}".strip(), "k": k},
                        reason="comparison entity",
                    )
                )
        inner = _RELATIVE.search(q)
        if inner and not entities:
            sub = f"{inner.group(1)} {inner.group(2)}".strip()
            if sub.casefold() != q.casefold():
                calls.append(
                    ToolCall(
                        tool="search_knowledge", args={"query": sub, "k": k}, reason="inner hop"
                    )
                )
        return PlanStep(calls=calls, policy_state={"entities": entities})

    async def assess(self, view: View) -> AssessStep:
        if view.options.mode == "hybrid":
            return AssessStep(Verdict(decision="enough", reason="single round (hybrid mode)"))
        steering = [e for e in view.ranked if not instruction_like(e.text)]
        top = steering[: max(TOP_FOR_HOPS, 1)]
        cov_terms = salient_terms(view.question)
        have: set[str] = set()
        for e in top:
            have.update(terms(f"{e.title} {e.text}"))
        missing = [t for t in cov_terms if t not in have]

        opened = {e.title for e in view.ranked}
        calls: list[ToolCall] = []
        # Follow the pages that the top passages mention (the bridge hop).
        for e in top:
            for title in self._mentions(e, view.titles):
                if title in opened or len(calls) >= MAX_HOP_LOOKUPS:
                    continue
                call = ToolCall(
                    tool="lookup_entity", args={"name": title}, reason=f"mentioned in {e.id}"
                )
                if call.key() not in view.done_calls and call not in calls:
                    calls.append(call)
        # Missing terms: search them beside the bridge entities of the best passages (the
        # names a passage mentions next to the question's own words).
        if missing:
            for e in top[:MAX_HOP_SEARCHES]:
                for entity in bridge_entities(e, view.question)[:ENTITIES_PER_PASSAGE]:
                    query = f"{' '.join(missing)} {entity}".strip()
                    call = ToolCall(
                        tool="search_knowledge",
                        args={"query": query, "k": view.options.k},
                        reason=f"missing: {', '.join(missing)}; via {entity} ({e.id})",
                    )
                    if call.key() not in view.done_calls and call not in calls:
                        calls.append(call)
        if not calls:
            reason = "all question terms covered" if not missing else "no new leads"
            return AssessStep(Verdict(decision="enough", reason=reason, missing=missing))
        if not missing and view.round >= 2:
            return AssessStep(
                Verdict(decision="enough", reason="all question terms covered", missing=[])
            )
        decision = "next" if any(c.tool == "lookup_entity" for c in calls) else "more"
        return AssessStep(
            Verdict(
                decision=decision,
                reason=f"{len(calls)} leads from the top passages"
                + (f"; missing {', '.join(missing)}" if missing else ""),
                missing=missing,
                next_calls=calls,
            )
        )

    def _mentions(self, e: Evidence, titles: TitleIndex | None) -> list[str]:
        if titles is not None:
            return [t for t in named_titles(e.text, titles) if t != e.title]
        return [p for p in proper_phrases(e.text) if p != e.title][:3]

    def rank(self, view: View) -> list[tuple[str, float]]:
        return rank_pool(view.question, view.ranked, view.titles)

    async def synthesize(self, question: str, evidence: list[Evidence], on_token: OnToken) -> Any:
        return extractive_answer(question, evidence)


def rank_pool(
    question: str, pool: list[Evidence], titles: TitleIndex | None
) -> list[tuple[str, float]]:
    """Score every pool item for the question; best first (ties by id, deterministic)."""
    weights = term_weights(question, pool)
    total = sum(weights.values()) or 1.0
    q_named = {t.casefold() for t in named_titles(question, titles)}
    base: dict[str, float] = {}
    for e in pool:
        have = set(terms(f"{e.title} {e.text}"))
        cov = sum(w for t, w in weights.items() if t in have) / total
        prior = max(
            (1.0 / (1 + (p.rank or 10)) for p in e.provenance if p.tool == "search_knowledge"),
            default=0.0,
        )
        named = 1.0 if e.title.casefold() in q_named else 0.0
        base[e.id] = 0.5 * cov + 0.8 * prior + 0.6 * named
    # A page mentioned by a strong passage inherits part of that passage's score.
    final = dict(base)
    by_title: dict[str, list[str]] = {}
    for e in pool:
        by_title.setdefault(base_title(e.title).casefold(), []).append(e.id)
    for e in pool:
        text = e.text.casefold()
        for name, ids in by_title.items():
            if len(name) < 4 or name not in text:
                continue
            for other in ids:
                if other != e.id:
                    final[other] = max(final[other], 0.8 * base[e.id] + 0.2 * base[other])
    return sorted(final.items(), key=lambda kv: (-kv[1], kv[0]))
