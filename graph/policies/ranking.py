"""Rank the evidence pool for the question and fill the synthesis budget.

Shared by both policies: a passage found for the question scores by its search rank, its
coverage of the question and whether the question names its page; a passage reached by a
hop inherits from the passage that stated the hop, less for every hop it stands from the
question. A passage that several calls found independently gains a little. The budget is
then filled so that it spans the chain (first hop, bridge, answer) and distinct documents
rather than near-duplicates of one hop.
"""

from __future__ import annotations

from graph.extractive import term_weights
from graph.text import terms
from tools.evidence import Evidence
from tools.titles import TitleIndex, named_titles

_PROTECTED_SHARE = 0.4  # share of the budget kept for the best direct question hits
_SEARCH_HOP_TRUST = 0.7  # a search hop's link strength relative to opening a named page
_CHAIN_SHARE = 0.2  # share kept for followed hops' best passages and their parents
# A hop's basis that was itself reached by a hop vouches for less: each hop further from
# the question discounts the link again (a page named by a page named by a hit is weak).
_DEPTH_DECAY = 0.75
_CORROBORATION = 0.1  # per further distinct call that found the same passage
_MAX_CORROBORATION = 3
# A search for the question rewritten with a bridge entity is a search for the question
# itself: its hits score like direct hits (search rank, coverage of the sub-question),
# weighted by how far the bridge is trusted.
_REWRITE_WEIGHT = 1.5
_LABEL_WORDS = 6  # a closing line this short, with no sentence end, is an entry's label


def _held_text(text: str) -> str:
    """The text a passage states: a chunk cut right after an entry's label ("Repr.maxstring"
    closing it) holds the label, not the entry, whose text opens the next chunk."""
    body, _, last = text.rstrip().rpartition("\n")
    last = last.strip()
    if body and last and len(last.split()) <= _LABEL_WORDS and last[-1] not in ".!?:;,":
        return body
    return text


def rank_pool(
    question: str, pool: list[Evidence], titles: TitleIndex | None, budget: int = 10
) -> list[tuple[str, float]]:
    """Score every pool item for the question; best first (ties by id, deterministic).

    A passage found for the question itself scores by its search rank, its coverage of the
    question and whether the question names its page. A passage reached by a hop scores
    from its parent: a chain is as strong as the passage that stated the hop, discounted
    by the hop's own rank, by how far the lead stood from the question's words and by how
    many hops the parent itself stands from the question. A passage found by several
    distinct calls (the question, a comparison entity, a hop) gains a little per call.
    """
    weights = term_weights(question, pool)
    total = sum(weights.values()) or 1.0
    q_named = {t.casefold() for t in named_titles(question, titles)}
    cov: dict[str, float] = {}
    covers: dict[str, set[str]] = {}  # the question's terms each passage holds
    held: dict[str, set[str]] = {}  # ... in what it states, less a closing entry label
    final: dict[str, float] = {}
    by_id = {e.id: e for e in pool}
    words: dict[str, set[str]] = {}
    for e in pool:
        have = words[e.id] = set(terms(f"{e.title} {e.text}"))
        covers[e.id] = {t for t in weights if t in have}
        stated = set(terms(f"{e.title} {_held_text(e.text)}"))
        held[e.id] = {t for t in covers[e.id] if t in stated}
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
    depth = _depths(by_round, by_id)
    for _ in range(2):
        for e in by_round:
            for p in e.provenance:
                if p.parent is None or p.parent == e.id or p.parent not in final:
                    continue
                hop = (1.0 / (p.rank or 1)) / (1 + 0.5 * (p.lead or 0))
                # Opening the page a passage names is a firmer link than searching the
                # question's missing words beside a name it mentions.
                firm = 1.0 if p.tool in ("lookup_entity", "get_links") else _SEARCH_HOP_TRUST
                decay = _DEPTH_DECAY ** depth[p.parent]
                derived = 0.9 * final[p.parent] * hop * firm * decay + 0.2 * cov[e.id]
                if p.rewrite:
                    sub = terms(p.query)
                    sub_cov = sum(t in words[e.id] for t in sub) / max(1, len(sub))
                    trust = min(1.0, final[p.parent]) / (1 + 0.5 * (p.lead or 0)) * decay
                    direct = 0.5 * sub_cov + 0.8 / (1 + (p.rank or 1))
                    derived = max(derived, _REWRITE_WEIGHT * trust * direct)
                final[e.id] = max(final[e.id], derived)
    # Independent calls that agree on a passage are evidence that it matters.
    for e in pool:
        calls = {(p.tool, p.query, p.parent) for p in e.provenance}
        final[e.id] += _CORROBORATION * min(_MAX_CORROBORATION, len(calls) - 1)
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
    # Every pass seats one passage per document; a document's further chunks take the
    # seats left over once every other document has had its turn.
    keep = [
        i
        for i, _ in sorted(base.items(), key=lambda kv: (-kv[1], kv[0]))[
            : max(1, int(budget * _PROTECTED_SHARE))
        ]
    ]
    head: list[str] = []
    seated_docs: dict[str, set[str]] = {}  # document -> question terms its seats hold
    best_chunk: dict[str, str] = {}  # a document's seat goes to its best-scored passage
    for i, _ in ranked:
        best_chunk.setdefault(by_id[i].doc_id, i)

    def take(i: str, again: bool = False) -> None:
        doc = by_id[i].doc_id
        if not again:
            if doc in seated_docs:
                # A further section of a seated page earns its own seat only by holding
                # question terms the page's seats lack (the answer's section, not a
                # repeat of the intro).
                if held[i] <= seated_docs[doc]:
                    return
            else:
                i = best_chunk[doc]
        if i in head or len(head) >= budget:
            return
        head.append(i)
        seated_docs.setdefault(doc, set()).update(held[i])

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
    for i, _ in ranked:
        take(i, again=True)
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


def _depths(by_round: list[Evidence], by_id: dict[str, Evidence]) -> dict[str, int]:
    """Hops from the question: 0 for a passage found for the question itself, else one
    more than its nearest parent in the pool."""
    depth: dict[str, int] = {}
    for _ in range(2):  # as for the scores: parents come from earlier rounds
        for e in by_round:
            best: int | None = None
            for p in e.provenance:
                if p.parent is None:
                    best = 0
                elif p.parent != e.id and p.parent in by_id:
                    d = depth.get(p.parent, 0) + 1
                    best = d if best is None else min(best, d)
            depth[e.id] = best or 0
    return depth
