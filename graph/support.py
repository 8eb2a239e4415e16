"""Does the evidence support an answer? A sentence-level faithfulness check, no LLM.

Pooled word overlap says a page is *about* the question's words; it does not say that any
sentence *states* the answer. Here an answer is supported only when some sentence (read
with its page title, its section heading, its document's other passages in the evidence,
and the passages it was reached from by following a mention - its chain) covers:

- the question's names and identifiers (its *keys*: capitalised names, ids such as
  OPS-142 or geofence-watcher, numbers), each co-located with a supporting sentence (for a
  comparison, each entity with its own sentence);
- at least half of the rest of what the question asks about (its *constraints*), except
  the words that only name the answer's type ("which *firm*", "what *port*": an answer
  instantiates its type rather than mentioning it; such a word counts only when the
  sentence states a value for it, "Payout fee: 1.35%"), comparatives and past-tense
  predicates ("lasted", "performed"), which answers paraphrase ("Duration:", "by");
- and says something the question does not (a candidate answer).

A page that merely shares the question's words ("every payout and fee is a balanced
pair of entries" for "what payout fee did we negotiate with Baltic Freightways?") fails:
the fee sentence has no Baltic Freightways in its context, the Baltic sentence has no fee.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from graph.lexicon import prefetch, related
from graph.question import (
    SHARED_CUES,
    analyse,
    asked_phrase,
    default_idioms,
    options_terms,
    shared_subjects,
)
from graph.text import (
    STOPWORDS,
    acronyms,
    camel_case,
    identifier_parts,
    instruction_like,
    is_listing,
    key_terms,
    names_something,
    proper_phrases,
    sentences,
    terms,
)
from tools.evidence import Evidence
from tools.titles import base_title, code_names, has_words

# Share of the question's constraints a supporting sentence's context must cover (plain
# counts: weighting by rarity would make the paraphrased word - "lasted" for "Duration" -
# the heaviest one).
MIN_CONSTRAINT_COVERAGE = 0.5
_MAX_CHAIN_DEPTH = 3
_MAX_TYPE_WORDS = 3

COMPARATIVES = frozenset(
    """both same either neither compare compared older younger earlier later first more less
    larger smaller bigger higher lower longer shorter greater fewer largest smallest biggest
    highest lowest longest shortest greatest fewest""".split()
)
_WH_TYPE = re.compile(
    r"^\s*(?:(?:in|for|from|at|on|to|by|with|of)\s+)?(?:which|what|how many|how much)\s+(.+)",
    re.IGNORECASE,
)
# "how long", "how often": the adjective names the kind of answer (a duration, a period).
_HOW_ADJ = re.compile(
    r"\bhow\s+(long|often|old|far|big|large|soon|early|late|frequently)\b", re.IGNORECASE
)
# A value a type word can be stated with: "Payout fee: 1.35%", "port 8080", "`v2`".
_VALUE = re.compile(r"\d|`|\w[-_.]\w")
_VALUE_WINDOW = 4
_DETERMINERS = frozenset({"the", "a", "an", "that", "this", "its", "their"})


@dataclass
class QuestionParts:
    keys: list[str]  # names, ids, numbers: must be co-located with a supporting sentence
    constraints: list[str]  # the rest of what is asked about (share covered)
    answer_type: list[str]  # "which firm" -> ["firm"]: counted only when stated with a value
    all_terms: set[str] = field(default_factory=set)
    # constraints only the sentences before the ask write: the asker's situation
    situation: frozenset[str] = frozenset()


@dataclass
class Support:
    index: int  # 1-based position of the evidence item
    sentence: str
    order: int  # the sentence's position in its passage
    coverage: float  # share of the constraints its context covers
    keys: set[str]  # question keys its context holds
    direct: float  # share the sentence (with its title and heading) covers alone


@dataclass
class Verdict:
    supported: bool
    missing: list[str]  # what no supporting context holds (for the refusal message)
    supports: list[Support]


def answer_type(question: str) -> list[str]:
    """The words after "which"/"what"/"how many" that name the kind of thing sought."""
    ask = sentences(question)[-1] if sentences(question) else question
    out: list[str] = [m.group(1).casefold() for m in _HOW_ADJ.finditer(ask)]
    m = _WH_TYPE.match(ask)
    if not m:
        return out
    rest = re.findall(r"[\w'’-]+", m.group(1))
    for i, raw in enumerate(rest):
        w = raw.casefold()
        if w in STOPWORDS or (i > 0 and _verb_like(w)):
            break
        if i > 0 and i + 1 < len(rest) and rest[i + 1].casefold() in _DETERMINERS:
            break  # "what datastore holds the sessions": "holds" is the verb
        if i > 0 and i + 1 < len(rest) and names_something(rest[i + 1]):
            break  # "which team owns ledger-service": a verb before the name it governs
        out.extend(terms(raw))
        if len(out) >= _MAX_TYPE_WORDS:
            break
    return out


def _verb_like(word: str) -> bool:
    return len(word) > 4 and word.endswith("ed")


_USING_CODE = frozenset("call calling invoke invoked invoking pass passing passed".split())
# Verbs that only link a thing to what it works with ("what database does X use", "which
# python version does X need"): pages write "needs", "runs on", "backed by" as often.
_LINKING = frozenset("use used using need require requiring".split())
_PARTICLES = frozenset("back out off away".split())
# a command-line option ("passing -C", "with --force"): using a program, as code is used
_OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
# How a question cites its sources ("the CREATE INDEX docs say …", "the WAL page mentions
# …"): words about the documents speaking, which their text about its subject never needs.
_CITING = frozenset(
    terms("doc docs documentation page pages manual say says said mention mentions mentioned")
)


def question_parts(question: str) -> QuestionParts:
    q_terms = [t for t in terms(question) if t not in {"what", "which", "who", "whom", "whose"}]
    kind = set(answer_type(question))
    keys = [k for k in key_terms(question) if k not in kind]
    # The two names of "what do X and Y have in common" are names even where one opens the
    # sentence ("Cistus and Stapelianthus are both …"); "in common" is how the question
    # asks, not what a page says.
    pair = options_terms(shared_subjects(question))
    keys += [t for t in pair if t not in keys]
    asking = SHARED_CUES if pair else frozenset()
    *told, asked = re.split(r"[.!?]\s+", question.strip())
    # a linking verb in the ask is how it asks; in a statement before the ask ("timeit
    # uses a particular clock by default. when was …") it says what to find
    asking = asking | (_LINKING & set(terms(asked)) - set(terms(" ".join(told)))) | _CITING
    # the particle of a phrasal verb ("what do you get back", "when does it time out")
    # belongs to the verb's sense, which pages word their own way ("returns", "expires")
    asking = asking | _PARTICLES
    if code_names(question) or _OPTION.search(question):
        # "if I call str.index …", "if I don't pass nbytes": how one uses code, not words
        # its documentation writes
        asking = asking | _USING_CODE
    # "if I don't pass -C", "unless I rename it", "out of the box": how a question asks
    # for a default, which pages write "default"
    asking = asking | set(terms(" ".join(default_idioms(question))))
    # "going to be called": the future's auxiliary, not a word of the answer's page
    asking = asking | ({"going"} if re.search(r"\bgoing to\b", asked, re.I) else set())
    constraints = [
        t
        for t in q_terms
        if t not in keys
        and t not in kind
        and t not in COMPARATIVES
        and t not in asking
        and not _verb_like(t)
    ]
    # Sentences before the ask tell the asker's situation ("about to build httpd on a small
    # VM.", "our pages are one giant line and mod_substitute chokes on them."): its names
    # stay keys; its common words are the asker's, which the answer's page may not write.
    situation = frozenset(terms(" ".join(told))) - set(terms(asked)) - set(keys)
    # An acronym there ("a small VM", "one giant line of HTML") names a kind of thing, as
    # a common noun does; an identifier or a capitalised name stays a key the answer needs.
    common = set(terms(" ".join(re.findall(r"\b[A-Z]{2,5}\b", " ".join(told)))))
    situation |= {k for k in keys if k in common and k not in terms(asked)}
    return QuestionParts(keys, constraints, sorted(kind), set(q_terms), situation)


def heading_of(e: Evidence) -> str:
    """The passage's heading path as one string ("" when it has none)."""
    return " ".join(e.locator.heading_path) if e.locator and e.locator.heading_path else ""


def _linked(child: Evidence, parent: Evidence, question: str) -> bool:
    """Did ``child`` follow from a mention in ``parent`` (a real chain link)?"""
    name = base_title(child.title).casefold()
    if name and len(name) >= 3 and name in parent.text.casefold():
        return True
    q = question.casefold()
    child_text = child.text.casefold()
    for phrase in proper_phrases(parent.text):
        p = phrase.casefold()
        if len(p) >= 4 and p not in q and p != base_title(parent.title).casefold():
            if has_words(p, child_text):
                return True
    return False


def chain_context(evidence: list[Evidence], question: str) -> tuple[list[set[str]], set[str]]:
    """Per item: the terms of its title, heading, its document's passages in the evidence and
    the passages it was reached from (followed back up to a few hops); and the ids of the
    items reached by following a mention."""
    by_id = {e.id: e for e in evidence}
    doc_terms: dict[str, set[str]] = {}
    for e in evidence:
        # As sets, the terms of "title heading text" are those of "title text" (the form
        # ranking and synthesis read too, memoised) and of the heading: no word spans a space.
        held = doc_terms.setdefault(e.doc_id, set())
        held.update(terms(f"{e.title} {e.text}"))
        held.update(terms(heading_of(e)))
        held.update(acronyms(e.text))
    parents: dict[str, set[str]] = {}
    first_round = {e.id: min((p.round for p in e.provenance), default=0) for e in evidence}
    for e in evidence:
        for p in e.provenance:
            parent = by_id.get(p.parent or "")
            if parent is None or parent.doc_id == e.doc_id:
                continue
            if p.tool in {"lookup_entity", "get_links"} or _linked(e, parent, question):
                parents.setdefault(e.id, set()).add(parent.id)
        # A planner that records no parent (the LLM's) still followed a mention when a
        # page named in an earlier round's passage was opened in a later round.
        name = base_title(e.title).casefold()
        if len(name) < 3:
            continue
        for a in evidence:
            if a.doc_id != e.doc_id and first_round[a.id] < first_round[e.id]:
                if has_words(name, a.text.casefold()):
                    parents.setdefault(e.id, set()).add(a.id)
    out = []
    for e in evidence:
        ctx = set(doc_terms[e.doc_id])
        frontier, seen = set(parents.get(e.id, ())), {e.id}
        for _ in range(_MAX_CHAIN_DEPTH):
            nxt: set[str] = set()
            for pid in frontier - seen:
                seen.add(pid)
                ctx |= doc_terms[by_id[pid].doc_id]
                nxt |= parents.get(pid, set())
            frontier = nxt
        out.append(ctx)
    return out, set(parents)


def _stated_types(sentence: str, kinds: set[str]) -> set[str]:
    """Answer-type words the sentence states a value for ("Payout fee: 1.35%")."""
    # Each token's first term is one of the sentence's terms: most sentences name no kind.
    if not kinds or kinds.isdisjoint(terms(sentence)):
        return set()
    toks = re.findall(r"[\w'’.%`-]+", sentence)
    out: set[str] = set()
    for i, tok in enumerate(toks):
        t = terms(tok)
        if t and t[0] in kinds:
            near = toks[i + 1 : i + 1 + _VALUE_WINDOW]
            if any(_VALUE.search(x) for x in near):
                out.add(t[0])
    return out


def _unsupported(parts: QuestionParts, supports: list[Support]) -> bool:
    covered = set().union(*(s.keys for s in supports)) if supports else set()
    return not supports or any(k not in covered for k in parts.keys)


# Adjectives grade or pick among an attribute's values ("the main flavor", "the original
# name", "the uppermost age"); a page states the value without them.
_ADJECTIVE_END = re.compile(r"(?:al|ous|ive|most|ic|ful|less|able|ible|ary|ent|ant|est|ian)$")
_ADJECTIVES = frozenset("main first last current new old full real actual exact total top".split())


def noun_modifiers(phrase: str | None, constraints: list[str]) -> list[str]:
    """The nouns that narrow an asked attribute: "memory" of "the memory limit of X" (a
    batch limit is another attribute of X), not its head nor an adjective."""
    toks = (phrase or "").split()[:-1]
    keep = [w for w in toks if w not in _ADJECTIVES and not _ADJECTIVE_END.search(w)]
    return [t for t in terms(" ".join(keep)) if t in constraints]


def unstated_attribute(question: str, evidence: list[Evidence]) -> list[str]:
    """The nouns narrowing the asked attribute ("memory" of "what's the memory limit of
    X") that no passage writes, nor a word close to one: the attribute is not stated, and
    another attribute of X ("a batch holds at most 5,000") is no answer."""
    parts = question_parts(question)
    attribute = noun_modifiers(asked_phrase(question), parts.constraints)
    if not attribute:
        return []
    everything = set().union(*(set(terms(f"{e.title} {e.text}")) for e in evidence))
    absent = [t for t in attribute if t not in everything]
    if absent:
        prefetch([*absent, *everything])
    return [t for t in absent if not related(t, everything)]


def _writing_code(question: str, evidence: list[Evidence]) -> set[str]:
    """The passages about the code the question names: those whose page, or a page they
    were reached from, writes one of its code names whole ("http.server", "mod_md"). The
    parts of such a name are common words ("http", "server") that pages about other code
    write too. All passages when the question names no such code."""
    names = _whole_code_names(question)
    if not names:
        return {e.id for e in evidence}
    by_id = {e.id: e for e in evidence}
    docs: dict[str, str] = {}
    for e in evidence:
        docs[e.doc_id] = f"{docs.get(e.doc_id, '')}\n{e.title}\n{heading_of(e)}\n{e.text}"
    written = {d for d, text in docs.items() if any(_writes(text, n) for n in names)}
    return {
        e.id
        for e in evidence
        if e.doc_id in written
        or any(by_id[p.parent].doc_id in written for p in e.provenance if p.parent in by_id)
    }


def _whole_code_names(question: str) -> list[str]:
    """The question's code names whose parts are words of their own (dotted, snake case)."""
    return [c for c in code_names(question) if re.search(r"[._]", c)]


def _writes(text: str, name: str) -> bool:
    """Is ``name`` written in ``text`` as a whole name, or by its own last part where that
    is itself code: snake case ("Fraction.limit_denominator" as "limit_denominator") or
    camel case ("asyncio.TaskGroup" as "TaskGroup"; the module is a key the supporting
    passage still needs)? A last part that is a plain word ("server" of "http.server") is a
    word every page may write."""
    folded = text.casefold()

    def written(n: str) -> bool:
        return bool(re.search(rf"(?<![\w.]){re.escape(n.casefold())}(?![\w])", folded))

    head, _, last = name.rpartition(".")
    if written(name):
        return True
    if not head:
        return False
    if "_" in last:
        return written(last)
    return camel_case(last) and written(last)


def assess_support(
    question: str, evidence: list[Evidence], parts: QuestionParts | None = None
) -> Verdict:
    parts = parts or question_parts(question)
    kinds = set(parts.answer_type)
    anchors = set(parts.keys) | set(parts.constraints) | kinds
    contexts, linked = chain_context(evidence, question)
    writing = _writing_code(question, evidence)
    supports: list[Support] = []
    # Sentences with the question's subject that fall short on exact words only: asked
    # again with paraphrase when exact words support no answer.
    pending: list[tuple[Support, set[str], list[bool], int]] = []
    for n, (e, ctx) in enumerate(zip(evidence, contexts, strict=True), start=1):
        if e.id not in writing:
            continue  # about other code than the question names
        frame = set(terms(f"{e.title} {heading_of(e)}")) | identifier_parts(heading_of(e))
        # On a page reached by following a mention, a sentence about the page's subject
        # (the bridge entity) is about the question too.
        about = anchors | (set(terms(base_title(e.title))) if e.id in linked else set())
        for i, sent in enumerate(sentences(e.text)):
            if instruction_like(sent) or is_listing(sent):
                continue  # data that talks like an instruction never supports an answer
            own = set(terms(sent)) | acronyms(sent) | identifier_parts(sent)
            if not (own - parts.all_terms):
                continue  # says nothing the question does not: no candidate answer
            if not (own & about or frame & anchors):
                continue  # not about the question at all
            full = own | ctx
            keys = {k for k in parts.keys if k in full}
            if parts.keys and not keys:
                continue
            # An answer-type word stated with a value counts as one more thing covered.
            stated = len(_stated_types(sent, kinds))
            need = len(parts.constraints) + stated
            met = [t in full for t in parts.constraints]
            cov = (sum(met) + stated) / need if need else 1.0
            direct = (
                (sum(t in own | frame for t in parts.constraints) + stated) / need if need else 1.0
            )
            support = Support(n, sent, i, cov, keys, direct)
            if cov >= MIN_CONSTRAINT_COVERAGE:
                supports.append(support)
            elif keys:
                pending.append((support, own | frame, met, stated))
    if pending and _unsupported(parts, supports):
        # Paraphrase: "woman" is met by "actress", "team" by "group" (one batch of words).
        prefetch([*parts.constraints, *set().union(*(near for _, near, _, _ in pending))])
        for support, near, met, stated in pending:
            met = [m or related(t, near) for t, m in zip(parts.constraints, met, strict=True)]
            support.coverage = (sum(met) + stated) / (len(parts.constraints) + stated)
            if support.coverage >= MIN_CONSTRAINT_COVERAGE:
                supports.append(support)
        supports.sort(key=lambda x: (x.index, x.order))
    covered_keys = set().union(*(s.keys for s in supports)) if supports else set()
    missing_keys = [k for k in parts.keys if k not in covered_keys]
    if supports and missing_keys:
        # A choice names its options apart: each has its own pages, and the asked
        # attribute may hold for one only ("Who was also an actor, X or Y?"). An option
        # is met by a passage about it; the attribute, by the supports. So is each of two
        # things asked what they share.
        shape = analyse(question)
        pair = (
            shape.options if shape.answer_type in {"option", "yesno"} else shared_subjects(question)
        )
        if len(pair) == 2:
            present = set().union(*contexts)
            named = options_terms(pair)
            missing_keys = [k for k in missing_keys if not (k in named and k in present)]
    supported = bool(supports) and not missing_keys
    if supported:
        return Verdict(True, [], supports)
    if parts.situation & {*parts.constraints, *parts.keys}:
        # Asked again without the situation's words: a passage that states what the ask
        # asks supports the answer though it does not retell the asker's situation (the
        # situation's words still pick the sentences when some passage has them too).
        asked = replace(
            parts,
            keys=[k for k in parts.keys if k not in parts.situation],
            constraints=[t for t in parts.constraints if t not in parts.situation],
            situation=frozenset(),
        )
        return assess_support(question, evidence, asked)
    everything = set().union(*contexts) if contexts else set()
    # what no passage writes at all; words written, but never together, are reported as
    # the statement that is missing
    missing = [t for t in missing_keys + parts.constraints if t not in everything]
    if evidence and not writing:  # the code the question names, written by no page
        missing = _whole_code_names(question) + missing
    if not missing:  # every word is somewhere, but never together
        missing = [
            "a passage that states "
            + " ".join(parts.answer_type + parts.constraints + parts.keys or ["the answer"])
        ]
    return Verdict(False, list(dict.fromkeys(missing)), supports)
