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

from graph.extractive import extractive_answer_in_thread, salient_terms
from graph.policies.base import AssessStep, Decision, OnToken, PlanStep, Verdict, View
from graph.policies.decompose import SubQuestion, candidates, holds_names, innermost
from graph.policies.ranking import rank_pool
from graph.question import EVENT_WORDS, analyse
from graph.text import (
    STOPWORDS,
    instruction_like,
    is_label,
    name_distance,
    proper_phrases,
    stem,
    terms,
    words,
)
from tools.evidence import Evidence
from tools.executor import ToolCall
from tools.titles import TitleIndex, base_title, code_names, identifiers, named_titles

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
# Hops through the corpus's own structure (retrieval.structure): identifiers a top passage
# names (a ticket's ERR-4012 -> the page that defines it) and the pages it links to, read
# for what the question still lacks; followed before the title mentions.
IDENTS_PER_PASSAGE = 2
MAX_STRUCTURE_LEADS = 4
LINKED_PASSAGES = 2  # top passages whose outgoing links are read
MAX_HOP_LOOKUPS = 6
MAX_HOP_SEARCHES = 2
ENTITIES_PER_PASSAGE = 1
TOP_FOR_HOPS = 4
FRONTIER_HOPS = 3  # passages reached by the last round's hops whose mentions are followed
OWN_PAGE_LOOKUPS = 2  # top direct hits whose page is searched for its best section
CHAINED_HOP_LOOKUPS = 1  # mention lookups beside a decomposition's own next hop
CHAIN_BEAM = 2  # bridge entities followed for the first hop of a decomposed question
CHAIN_PASSAGES = 3  # passages of a sub-question's search that the bridge is read from
# Rounds that follow leads (mentioned pages, missing words beside a name). A third round of
# leads added no gold evidence when measured and costs a round; a decomposed question's
# dependent sub-questions still go on to the round bound.
LEAD_ROUNDS = 2
# A lead search ("the question's missing words beside a name") and a comparison entity's
# search (its name and the compared property) are bags of keywords, not sentences: BM25
# alone serves them, and skipping the dense leg spares the round an embedding batch (or
# shrinks it to the question alone), at a negligible cost in recall.
KEYWORD_SEARCH_LEGS = ("lexical",)


def comparison_entities(question: str, titles: TitleIndex | None) -> list[str]:
    # the options the question's structure offers ("X or Y", with or without a comma)
    options = analyse(question).options
    if not _COMPARISON.search(question) and not options:
        return []
    named = [base_title(t) for t in named_titles(question, titles)]
    # Prefer the longest distinct names (a title inside another one is the same entity).
    names = [n for n in named if not any(n != o and n in o for o in named)]
    if len(names) >= 2:
        return list(dict.fromkeys(names))[:3]
    if len(options) >= 2:
        return list(dict.fromkeys(options))[:3]
    m = re.search(r"^\w+\s+(?:both\s+)?(.+?)\s+and\s+(.+?)\s+(?:both\s+)?\w+", question)
    if m:
        left = proper_phrases(m.group(1))
        right = proper_phrases(m.group(2))
        if left and right:
            return [left[-1], right[0]]
    return []


def by_proximity(e: Evidence, question: str, names: list[str]) -> list[str]:
    """Order names by closeness to where the passage uses the question's own words: that is
    where a hop is stated ("... by abolitionist Frederick Douglass")."""
    q_terms = set(salient_terms(question))
    toks = [stem(w) for w in words(e.text)]
    anchors = [i for i, t in enumerate(toks) if t in q_terms]
    dist: dict[str, int] = {}
    for name in names:
        d = name_distance(toks, anchors, base_title(name))
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
        if set(terms(phrase)) <= q_terms or phrase in names or is_label(phrase, e.text):
            continue
        names.append(phrase)
    return by_proximity(e, question, names)


def _trim_known(phrase: str, q_terms: set[str]) -> str:
    """'Susan Walker Porter Hall' -> 'Porter Hall' when the question names Susan Walker."""
    parts = phrase.split()
    while parts and stem(parts[0].casefold()) in q_terms:
        parts.pop(0)
    while parts and stem(parts[-1].casefold()) in q_terms:
        parts.pop()
    return " ".join(parts)


def _add_new(calls: list[ToolCall], call: ToolCall, done: set[str]) -> None:
    """Queue ``call`` unless an earlier round ran it or this round already has it."""
    if call.key() not in done and call not in calls:
        calls.append(call)


def _frame(sub: SubQuestion) -> str:
    """What the question asks of the description's answer: the question without it."""
    return sub.substitute("") or sub.question


class RulePolicy:
    name = "rule"
    # plan() depends on the view alone (graph.policies.base.Policy); a subclass whose plan
    # reads more sets this False
    plans_offline = True

    async def plan(self, view: View) -> PlanStep:
        q = view.question
        k = view.options.k
        calls = [ToolCall(tool="search_knowledge", args={"query": q, "k": k}, reason="question")]
        if view.options.mode == "hybrid":
            return PlanStep(calls=calls)
        named = named_titles(q, view.titles)[:MAX_QUESTION_LOOKUPS]
        idents = code_names(q)[: max(0, MAX_QUESTION_LOOKUPS - len(named))]
        entities = comparison_entities(q, view.titles)
        looked: set[str] = set()
        # The page a title names; the page that defines an identifier the question names
        # (ERR-4012); the page or entry that defines an option ("maxstring" ->
        # Repr.maxstring), when the index knows it: a compared value is stated there.
        for names, reason in (
            (named, "named in question"),
            (idents, "identifier in question"),
            (entities, "comparison entity"),
        ):
            for name in names:
                if name.casefold() not in looked:
                    looked.add(name.casefold())
                    calls.append(
                        ToolCall(
                            tool="lookup_entity",
                            args={"name": name, "limit": 1, "query": q},
                            reason=reason,
                        )
                    )
        if entities:
            said = [t for t in salient_terms(q) if not any(t in terms(e) for e in entities)]
            stated_by = EVENT_WORDS.get(analyse(q).event or "", ())
            rest = " ".join(dict.fromkeys([*said, *(w for w in stated_by if stem(w) not in said)]))
            for e in entities:
                calls.append(
                    ToolCall(
                        tool="search_knowledge",
                        args={
                            "query": f"{e} {rest}".strip(),
                            "k": k,
                            "legs": list(KEYWORD_SEARCH_LEGS),
                        },
                        reason="comparison entity",
                    )
                )
        # A composed question: search its innermost description first; assess reads the
        # bridge entity off what it finds and searches the question rewritten with it.
        first_hop = None if entities else innermost(q, view.titles)
        if first_hop is not None:
            # The question's dense leg looks near its two parts, both embedded in this
            # round's batch anyway (the first hop's search, the next hop's frame), instead
            # of embedding the whole question: the batch no longer pads to its length.
            # Measured against embedding the question: no recall lost, a shorter round.
            parts = [first_hop.query, _frame(first_hop)]
            calls[0] = calls[0].model_copy(update={"args": {**calls[0].args, "dense_parts": parts}})
            calls.append(
                ToolCall(
                    tool="search_knowledge",
                    args={"query": first_hop.query, "k": k},
                    reason=f"first hop: {first_hop.text}",
                )
            )
            return PlanStep(
                calls=calls,
                policy_state={"entities": entities, "chain": [q]},
                embed=[_frame(first_hop)],
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
        chain_calls, chain = self._chain(view)
        state = {**view.policy_state, "chain": chain}
        spent = not chain_calls and view.round >= LEAD_ROUNDS
        step = await self._assess(view, chained=bool(chain_calls), follow=not spent)
        if not chain_calls:
            return AssessStep(step.verdict, policy_state=state)
        v = step.verdict
        calls = [*chain_calls, *(c for c in v.next_calls if c not in chain_calls)]
        return AssessStep(
            Verdict(
                decision="next",
                reason=f"{len(chain_calls)} dependent sub-question calls; " + v.reason,
                missing=v.missing,
                next_calls=calls,
            ),
            policy_state=state,
        )

    def _chain(self, view: View) -> tuple[list[ToolCall], list[str]]:
        """The decomposition's next hop: read the bridge entity of each open question's
        innermost description off the passages its search found, substitute it, and
        search the shorter question (and its own innermost description, if any)."""
        calls: list[ToolCall] = []
        still_open: list[str] = []
        open_questions = list(view.policy_state.get("chain") or [])
        beam = CHAIN_BEAM if view.round <= 1 else 1
        for q in open_questions:
            sub = innermost(q, view.titles)
            if sub is None:
                continue
            # Passages that talk like instructions are read, never followed.
            found = [e for e in self._found_by(view, sub.query) if not instruction_like(e.text)]
            found = found[:CHAIN_PASSAGES]
            # The page of what the description names ("ticket TRK-311") states its
            # relations: it leads, wherever the searches ranked it.
            own_page = [
                e
                for e in view.ranked[: view.options.budget]
                if holds_names(sub, e, in_title=True) and not instruction_like(e.text)
            ]
            if own_page and own_page[0] not in found:
                found = [own_page[0], *found][:CHAIN_PASSAGES]
            if not any(holds_names(sub, e) for e in found):
                # None of them names what the description names: the best pool passage
                # that does (found by the question's own search, say) leads instead.
                named = [
                    e
                    for e in view.ranked[: view.options.budget]
                    if holds_names(sub, e) and not instruction_like(e.text)
                ]
                found = [*named[:1], *found][:CHAIN_PASSAGES]
            for lead, (entity, e) in enumerate(candidates(sub, found, view.titles, beam)):
                rewritten = sub.substitute(entity)
                nxt = innermost(rewritten, view.titles)
                if view.titles is not None and entity in view.titles.titles:
                    call = ToolCall(
                        tool="lookup_entity",
                        args={"name": entity, "limit": 1, "query": rewritten},
                        reason=f"bridge entity named in {e.id}",
                        parent=e.id,
                        lead=lead,
                    )
                    _add_new(calls, call, view.done_calls)
                queries = [rewritten] + ([nxt.query] if nxt is not None else [])
                for query in queries:
                    call = ToolCall(
                        tool="search_knowledge",
                        # Words find the bridge entity's passages. Meaning is sought near
                        # what the question asks of the entity (the question without the
                        # description, embedded with the first round's batch) and the
                        # passage that named it (feedback): the round embeds nothing.
                        # Measured against embedding each rewritten question: about
                        # the same recall, a faster round.
                        args={
                            "query": query,
                            "k": view.options.k,
                            "dense_query": _frame(sub),
                            "feedback": [e.id],
                        },
                        reason=f"next hop via {entity} ({e.id})",
                        parent=e.id,
                        lead=lead,
                        rewrite=query == rewritten,
                    )
                    _add_new(calls, call, view.done_calls)
                if nxt is not None and rewritten not in still_open:
                    still_open.append(rewritten)
        return calls, still_open

    @staticmethod
    def _found_by(view: View, query: str) -> list[Evidence]:
        """Pool passages a search for ``query`` returned, in that search's order."""
        hits: list[tuple[int, Evidence]] = []
        for e in view.ranked:
            ranks = [
                p.rank or 0
                for p in e.provenance
                if p.tool == "search_knowledge" and p.query == query
            ]
            if ranks:
                hits.append((min(ranks), e))
        return [e for _, e in sorted(hits, key=lambda h: h[0])]

    async def _assess(self, view: View, chained: bool = False, follow: bool = True) -> AssessStep:
        """``follow=False``: the lead rounds are spent and no sub-question is open; say what
        is missing and stop, without working out leads that would not be followed."""
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
        if not follow:
            reason = (
                f"leads followed for {view.round} rounds; no dependent sub-question left"
                if missing
                else "all question terms covered"
            )
            return AssessStep(Verdict(decision="enough", reason=reason, missing=missing))

        section_query = " ".join(missing) if missing else view.question
        frontier = self._frontier(view, steering, top)
        structure = self._structure_leads(view, frontier, section_query, chained)
        calls: list[ToolCall] = []
        # Follow the pages that the top passages - and the pages the last round opened by
        # following a mention (the chain's frontier) - mention: the bridge hop. A page is
        # followed even when some chunk of it is already in the pool: the lookup brings
        # the section that matches the question (the ownership line, not the intro).
        for e in frontier:
            mentioned = self._title_mentions(e, view.titles)
            mentioned += [
                t
                for t in by_proximity(e, view.question, self._mentions(e, view.titles))
                if t not in mentioned
            ]
            for lead, title in enumerate(mentioned):
                if len(calls) >= (CHAINED_HOP_LOOKUPS if chained else MAX_HOP_LOOKUPS):
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
                _add_new(calls, call, view.done_calls)
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
                _add_new(calls, call, view.done_calls)
        # Missing terms: search them beside the bridge entities of the best passages (the
        # names a passage mentions next to the question's own words). A decomposed
        # question searches its next sub-question instead.
        if missing and not chained:
            for e in top[:MAX_HOP_SEARCHES]:
                leads = bridge_entities(e, view.question)[:ENTITIES_PER_PASSAGE]
                for lead, entity in enumerate(leads):
                    query = f"{' '.join(missing)} {entity}".strip()
                    call = ToolCall(
                        tool="search_knowledge",
                        args={
                            "query": query,
                            "k": view.options.k,
                            "legs": list(KEYWORD_SEARCH_LEGS),
                        },
                        reason=f"missing: {', '.join(missing)}; via {entity} ({e.id})",
                        parent=e.id,
                        lead=lead,
                    )
                    _add_new(calls, call, view.done_calls)
        calls = [*structure, *(c for c in calls if c not in structure)]
        if not calls:
            reason = "all question terms covered" if not missing else "no new leads"
            return AssessStep(Verdict(decision="enough", reason=reason, missing=missing))
        if not missing and view.round >= 2:
            return AssessStep(
                Verdict(decision="enough", reason="all question terms covered", missing=[])
            )
        hops = ("lookup_entity", "get_links")
        decision: Decision = "next" if any(c.tool in hops for c in calls) else "more"
        return AssessStep(
            Verdict(
                decision=decision,
                reason=f"{len(calls)} leads from the top passages"
                + (f"; missing {', '.join(missing)}" if missing else ""),
                missing=missing,
                next_calls=calls,
            )
        )

    def _structure_leads(
        self, view: View, frontier: list[Evidence], section_query: str, chained: bool
    ) -> list[ToolCall]:
        """Hops the documents write down: the identifiers a passage names that the
        question does not (closest to the question's words first), each opened at the
        page that defines it, and the pages a top passage links to that hold what is
        still sought (get_links reads only the linked pages matching the query)."""
        calls: list[ToolCall] = []
        cap = 1 if chained else MAX_STRUCTURE_LEADS
        asked = {i.casefold() for i in code_names(view.question)}
        for e in frontier:
            own = {i.casefold() for i in identifiers(e.title)}
            found = [
                i
                for i in identifiers(e.text)
                if i.casefold() not in asked and i.casefold() not in own
            ]
            near = by_proximity(e, view.question, found)
            ordered = [*near, *(i for i in found if i not in near)]
            for lead, ident in enumerate(ordered[:IDENTS_PER_PASSAGE]):
                if len(calls) >= cap:
                    break
                call = ToolCall(
                    tool="lookup_entity",
                    args={"name": ident, "limit": 1, "query": section_query},
                    reason=f"identifier {ident} in {e.id}",
                    parent=e.id,
                    lead=lead,
                )
                _add_new(calls, call, view.done_calls)
        linking = view.titles.linking if view.titles is not None else None
        for e in frontier[:LINKED_PASSAGES]:
            if len(calls) >= cap + LINKED_PASSAGES:
                break
            if linking is not None and e.doc_id not in linking:
                continue  # the store knows this page links nowhere the caller can read
            call = ToolCall(
                tool="get_links",
                args={"doc": e.doc_id, "direction": "out", "limit": 1, "query": section_query},
                reason=f"linked from {e.id}",
                parent=e.id,
                lead=0,
            )
            _add_new(calls, call, view.done_calls)
        return calls

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
            # A page titled with a common word ("This", "Christian") is not a mention.
            return [
                t
                for t in named_titles(e.text, titles, exclude={e.title})
                if base_title(t).casefold() not in STOPWORDS
            ]
        return [p for p in proper_phrases(e.text) if p != e.title][:3]

    def rank(self, view: View) -> list[tuple[str, float]]:
        return rank_pool(view.question, view.ranked, view.titles, view.options.budget)

    async def synthesize(self, question: str, evidence: list[Evidence], on_token: OnToken) -> Any:
        return await extractive_answer_in_thread(question, evidence)
