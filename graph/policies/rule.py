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
from graph.policies.base import AssessStep, Decision, OnToken, PlanStep, Verdict, View
from graph.text import instruction_like, proper_phrases, stem, terms, words
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

MAX_QUESTION_LOOKUPS = 4
_PROTECTED_SHARE = 0.4  # share of the budget kept for the best direct question hits
_SEARCH_HOP_TRUST = 0.7  # a search hop's link strength relative to opening a named page
_CHAIN_SHARE = 0.4  # share kept for followed hops' best passages and their parents
MAX_HOP_LOOKUPS = 6
MAX_HOP_SEARCHES = 2
ENTITIES_PER_PASSAGE = 1
TOP_FOR_HOPS = 4
FRONTIER_HOPS = 3  # passages reached by the last round's hops whose mentions are followed
OWN_PAGE_LOOKUPS = 2  # top direct hits whose page is searched for its best section


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
        for m in re.finditer(r"(?<!\w)" + re.escape(name) + r"(?!\w)", text, re.IGNORECASE):
            surface = m.group(0)
            # A name written as the title writes it ("ledger-service"), or capitalised
            # like a proper noun; not a common word that happens to be a title ("county").
            if not proper_only or surface == name or surface[0].isupper() or surface[0].isdigit():
                out.append(title)
                break
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


def _distance_to_question(toks: list[str], anchors: list[int], name: str) -> int | None:
    """Words between a name's nearest occurrence and a question word (None: absent)."""
    n_toks = [stem(w) for w in words(name)]
    if not n_toks:
        return None
    starts = [i for i in range(len(toks) - len(n_toks) + 1) if toks[i : i + len(n_toks)] == n_toks]
    if not starts:
        return None
    if not anchors:
        return starts[0]
    return min(min(abs(a - s0), abs(a - (s0 + len(n_toks) - 1))) for s0 in starts for a in anchors)


def by_proximity(e: Evidence, question: str, names: list[str]) -> list[str]:
    """Order names by closeness to where the passage uses the question's own words: that is
    where a hop is stated ("... by abolitionist Frederick Douglass")."""
    q_terms = set(salient_terms(question))
    toks = [stem(w) for w in words(e.text)]
    anchors = [i for i, t in enumerate(toks) if t in q_terms]
    dist: dict[str, int] = {}
    for name in names:
        d = _distance_to_question(toks, anchors, base_title(name))
        if d is not None:
            dist[name] = min(d, dist.get(name, d))
    return sorted(dist, key=lambda n: (dist[n], names.index(n)))


def bridge_entities(e: Evidence, question: str) -> list[str]:
    """Names in a passage that the question does not contain, closest to the question's
    words first."""
    q_terms = set(salient_terms(question))
    q_fold = question.casefold()
    title = base_title(e.title).casefold()
    names: list[str] = []
    for raw in proper_phrases(e.text):
        phrase = _trim_known(raw, q_terms)
        fold = phrase.casefold()
        if fold in q_fold or fold == title or fold in title or len(phrase) < 3:
            continue
        if set(terms(phrase)) <= q_terms or phrase in names or _is_label(phrase, e.text):
            continue
        names.append(phrase)
    return by_proximity(e, question, names)


def _is_label(phrase: str, text: str) -> bool:
    """A one-word field label or heading ("Status:", "## Summary"), not a name."""
    if " " in phrase:
        return False
    p = re.escape(phrase)
    return bool(re.search(rf"(?m)(?<!\w){p}\s*:|^#+\s*{p}\b", text))


def _trim_known(phrase: str, q_terms: set[str]) -> str:
    """'Susan Walker Porter Hall' -> 'Porter Hall' when the question names Susan Walker."""
    parts = phrase.split()
    while parts and stem(parts[0].casefold()) in q_terms:
        parts.pop(0)
    while parts and stem(parts[-1].casefold()) in q_terms:
        parts.pop()
    return " ".join(parts)


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
                ToolCall(
                    tool="lookup_entity",
                    args={"name": title, "limit": 1, "query": q},
                    reason="named in question",
                )
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
        if view.round >= 2 and not any(
            min((p.round for p in e.provenance), default=0) == view.round
            for e in view.ranked[: view.options.budget]
        ):
            # Another round of the same kind of leads is unlikely to do better.
            return AssessStep(
                Verdict(decision="enough", reason="the last round changed nothing in the top")
            )
        steering = [e for e in view.ranked if not instruction_like(e.text)]
        top = steering[: max(TOP_FOR_HOPS, 1)]
        cov_terms = salient_terms(view.question)
        have: set[str] = set()
        for e in top:
            have.update(terms(f"{e.title} {e.text}"))
        missing = [t for t in cov_terms if t not in have]

        section_query = " ".join(missing) if missing else view.question
        calls: list[ToolCall] = []
        # Follow the pages that the top passages - and the pages the last round opened by
        # following a mention (the chain's frontier) - mention: the bridge hop. A page is
        # followed even when some chunk of it is already in the pool: the lookup brings
        # the section that matches the question (the ownership line, not the intro).
        for e in self._frontier(view, steering, top):
            mentioned = self._title_mentions(e, view.titles)
            mentioned += [
                t
                for t in by_proximity(e, view.question, self._mentions(e, view.titles))
                if t not in mentioned
            ]
            for lead, title in enumerate(mentioned):
                if len(calls) >= MAX_HOP_LOOKUPS:
                    break
                call = ToolCall(
                    tool="lookup_entity",
                    # An exact title: one page, and its section that holds what the chain
                    # still lacks (the "Lead:" line of a team page, not its intro).
                    args={"name": title, "limit": 1, "query": section_query},
                    reason=f"mentioned in {e.id}",
                    parent=e.id,
                    lead=lead,
                )
                if call.key() not in view.done_calls and call not in calls:
                    calls.append(call)
        # The best direct hits' own pages: the section that holds what is still missing
        # (a page matched on its intro keeps the fact in a later section).
        if missing:
            direct = [e for e in top if any(p.parent is None for p in e.provenance)]
            for e in direct[:OWN_PAGE_LOOKUPS]:
                call = ToolCall(
                    tool="lookup_entity",
                    args={"name": e.title, "limit": 1, "query": section_query},
                    reason=f"rest of the page of {e.id}",
                    parent=e.id,
                    lead=0,
                )
                if call.key() not in view.done_calls and call not in calls:
                    calls.append(call)
        # Missing terms: search them beside the bridge entities of the best passages (the
        # names a passage mentions next to the question's own words).
        if missing:
            for e in top[:MAX_HOP_SEARCHES]:
                leads = bridge_entities(e, view.question)[:ENTITIES_PER_PASSAGE]
                for lead, entity in enumerate(leads):
                    query = f"{' '.join(missing)} {entity}".strip()
                    call = ToolCall(
                        tool="search_knowledge",
                        args={"query": query, "k": view.options.k},
                        reason=f"missing: {', '.join(missing)}; via {entity} ({e.id})",
                        parent=e.id,
                        lead=lead,
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
        decision: Decision = "next" if any(c.tool == "lookup_entity" for c in calls) else "more"
        return AssessStep(
            Verdict(
                decision=decision,
                reason=f"{len(calls)} leads from the top passages"
                + (f"; missing {', '.join(missing)}" if missing else ""),
                missing=missing,
                next_calls=calls,
            )
        )

    def _frontier(
        self, view: View, steering: list[Evidence], top: list[Evidence]
    ) -> list[Evidence]:
        """The top passages, then the best few that the last round reached by a hop."""
        new = set(view.new_ids)
        hops = [
            e
            for e in steering
            if e.id in new
            and e not in top
            and any(p.parent is not None and p.round == view.round for p in e.provenance)
        ]
        return [*top, *hops[:FRONTIER_HOPS]]

    def _title_mentions(self, e: Evidence, titles: TitleIndex | None) -> list[str]:
        """Pages the passage's own title names ("Postmortem INC-2026-011: tracking-ingest
        consumer rebalance loop" names tracking-ingest): its subject, followed first."""
        own = base_title(e.title).casefold()
        return [
            t
            for t in named_titles(e.title, titles, exclude={e.title})
            if base_title(t).casefold() != own
        ]

    def _mentions(self, e: Evidence, titles: TitleIndex | None) -> list[str]:
        if titles is not None:
            return named_titles(e.text, titles, exclude={e.title})
        return [p for p in proper_phrases(e.text) if p != e.title][:3]

    def rank(self, view: View) -> list[tuple[str, float]]:
        return rank_pool(view.question, view.ranked, view.titles, view.options.budget)

    async def synthesize(self, question: str, evidence: list[Evidence], on_token: OnToken) -> Any:
        return extractive_answer(question, evidence)


def rank_pool(
    question: str, pool: list[Evidence], titles: TitleIndex | None, budget: int = 10
) -> list[tuple[str, float]]:
    """Score every pool item for the question; best first (ties by id, deterministic).

    A passage found for the question itself scores by its search rank, its coverage of the
    question and whether the question names its page. A passage reached by a hop scores
    from its parent: a chain is as strong as the passage that stated the hop, discounted
    by the hop's own rank and by how far the lead stood from the question's words.
    """
    weights = term_weights(question, pool)
    total = sum(weights.values()) or 1.0
    q_named = {t.casefold() for t in named_titles(question, titles)}
    cov: dict[str, float] = {}
    final: dict[str, float] = {}
    by_id = {e.id: e for e in pool}
    for e in pool:
        have = set(terms(f"{e.title} {e.text}"))
        cov[e.id] = sum(w for t, w in weights.items() if t in have) / total
        prior = max(
            (
                1.0 / (1 + (p.rank or 10))
                for p in e.provenance
                if p.tool == "search_knowledge" and p.parent is None
            ),
            default=0.0,
        )
        named = 1.0 if e.title.casefold() in q_named else 0.0
        final[e.id] = 0.5 * cov[e.id] + 0.8 * prior + 0.6 * named
    base = dict(final)
    # Parents always come from an earlier round; two passes settle chains of any order.
    by_round = sorted(pool, key=lambda e: min((p.round for p in e.provenance), default=0))
    for _ in range(2):
        for e in by_round:
            for p in e.provenance:
                if p.parent is None or p.parent == e.id or p.parent not in final:
                    continue
                hop = (1.0 / (p.rank or 1)) / (1 + 0.5 * (p.lead or 0))
                # Opening the page a passage names is a firmer link than searching the
                # question's missing words beside a name it mentions.
                firm = 1.0 if p.tool == "lookup_entity" else _SEARCH_HOP_TRUST
                derived = 0.9 * final[p.parent] * hop * firm + 0.2 * cov[e.id]
                final[e.id] = max(final[e.id], derived)
    # A document's second and later chunks yield to other documents: the budget is read
    # best when it spans the chain rather than one long page.
    seen_docs: dict[str, int] = {}
    for eid, _ in sorted(final.items(), key=lambda kv: (-kv[1], kv[0])):
        doc = by_id[eid].doc_id
        seen_docs[doc] = seen_docs.get(doc, 0) + 1
        if seen_docs[doc] > 1:
            final[eid] *= 0.6
    ranked = sorted(final.items(), key=lambda kv: (-kv[1], kv[0]))
    # The budget is filled in three passes: the best direct answers to the question keep
    # their seat (a comparison's second entity, a first hop), then the chain - each
    # followed hop's best passage together with the passage it was followed from - and
    # only then the rest by score. A hop's gold passage often shares few words with the
    # question and would otherwise lose its seat to near-duplicates of the first hop.
    keep = [
        i
        for i, _ in sorted(base.items(), key=lambda kv: (-kv[1], kv[0]))[
            : max(1, int(budget * _PROTECTED_SHARE))
        ]
    ]
    head: list[str] = []

    def take(i: str) -> None:
        if i not in head and len(head) < budget:
            head.append(i)

    for i in keep:
        take(i)
    chain_end = min(budget, len(head) + max(1, int(budget * _CHAIN_SHARE)))
    for parent, child in _chain_links(ranked, by_id, set(final)):
        if len(head) >= chain_end:
            break
        grand = _best_parent(by_id[parent], set(final), final)
        if grand is not None and grand not in head and len(head) + 3 <= chain_end:
            take(grand)  # a three-hop chain keeps its first link too
        take(parent)
        take(child)
    for i, _ in ranked:
        take(i)
    head.sort(key=lambda i: (-final[i], i))
    ranked = [(i, final[i]) for i in head] + [(i, s) for i, s in ranked if i not in head]
    return ranked


def _best_parent(e: Evidence, present: set[str], score: dict[str, float]) -> str | None:
    parents = [p.parent for p in e.provenance if p.parent in present and p.parent != e.id]
    return max(parents, key=lambda i: (score[i], i)) if parents else None  # type: ignore[arg-type]


def _chain_links(
    ranked: list[tuple[str, float]], by_id: dict[str, Evidence], present: set[str]
) -> list[tuple[str, str]]:
    """(parent, child) for each passage that was the basis of a followed hop: its best
    child (the hop's best evidence), best chains first."""
    score = dict(ranked)
    links: list[tuple[str, str]] = []
    seen: set[str] = set()
    for i, _ in ranked:
        parent = _best_parent(by_id[i], present, score)
        if parent is None or parent in seen or by_id[parent].doc_id == by_id[i].doc_id:
            continue
        seen.add(parent)
        links.append((parent, i))
    return links
