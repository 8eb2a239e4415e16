"""Rule-based decomposition of a composed question into dependent sub-questions.

"What is the seat of the county where Van Hook Township is located?" nests a description
("the county where Van Hook Township is located") inside the outer question. The innermost
description that holds a name is the first hop: searched on its own, its answer (the
bridge entity, "Mountrail County") is read off the passages it finds and substituted
back, which yields the next, shorter question ("What is the seat of Mountrail County?").
Repeated, this walks chains of three and four hops, one hop per round.

Descriptions are found by their shape, not their meaning: "the N of X", "the N who/that/
where ... X", "the N containing X", and the possessive "X's N". Their extent runs to the
last name they hold (plus a trailing "is located", "is a member of").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graph.text import STOPWORDS, is_label, name_distance, stem, terms, words
from tools.evidence import Evidence
from tools.titles import TitleIndex, base_title, name_spans, named_titles

# A capitalised word or an initial; a name chains through a few lowercase particles.
_NAME_WORD = r"(?:[A-Z]\.|[A-Z](?:[\w-]|['’](?!s\b)|\.(?=\w))*|[0-9][\w-]*)"
_NAME = re.compile(
    rf"{_NAME_WORD}(?:\s+(?:(?:of|the|de|von|van|and|du|la|le|del|der|&)\s+)*{_NAME_WORD})*"
)
_IDENT = re.compile(r"\b\w+(?:[-_.]\w+)+\b|\b\w*\d\w*\b")
# What links a head noun to the description's content.
_CONNECTOR = (
    r"in which|of which|by which|on which|at which|for which|to which|from which|"
    r"who|whom|whose|that|which|where|when|of|"
    r"[a-z]+ing|[a-z]+ed\s+(?:by|after|in|to|for|from|on|at|with|as)"
)
_FUNCTION = "|".join(sorted(STOPWORDS, key=len, reverse=True))
_HEAD_WORD = rf"(?!(?:{_FUNCTION})\b)[a-z][a-z-]*"
_OPENER = re.compile(
    rf"\b(?P<det>(?i:the))\s+"
    rf"(?P<head>{_HEAD_WORD}(?:\s+{_HEAD_WORD}){{0,2}}?)\s+(?P<conn>{_CONNECTOR})\b"
)
_POSSESSIVE = re.compile(
    rf"['’]s\s+(?P<head>{_HEAD_WORD}(?:\s+(?:of\s+)?(?![a-z]+ed\b){_HEAD_WORD}){{0,2}})\b"
)
# Words that may close a description after its last name: "... is located", "... is a
# member of", "... played for".
_TRAILING = frozenset(
    "is was are were has had been located based situated named after from on in at of a an "
    "part member played for".split()
)
_DANGLING = frozenset("a an the in at on from of".split())  # never the last word
_LINKING = re.compile(r"(?:\s+|,\s*|\s+(?:in|of|on|at|from|for|by|with|to|and|the|a|an)\s+)+")
# Heads that are not descriptions of an entity ("the one who", "the time when").
_NOT_HEADS = STOPWORDS | frozenset(
    "time year way reason end beginning start middle top bottom rest side".split()
)
# Descriptions of a person: the bridge is a person's name.
PERSON_HEADS = frozenset(
    """person man woman people actor actress star singer performer artist author writer poet
    composer creator producer director founder leader president king queen ruler monarch
    husband wife spouse father mother son daughter child sibling brother sister parent
    player member candidate physicist scientist owner publisher architect designer painter
    voice narrator host character chairman ceo manager coach""".split()
)
MAX_SUB_QUERY_WORDS = 24
OWN_TITLE_DISTANCE = 8  # a page is about its title, wherever the text names it
_AUX = frozenset("do does did".split())


@dataclass(frozen=True)
class Span:
    start: int
    end: int


@dataclass(frozen=True)
class SubQuestion:
    """The innermost description of a question: what to search, and what it stands for."""

    question: str
    start: int  # the description's extent in ``question``
    end: int
    head: str  # "county", "husband": the kind of entity it names
    query: str  # the description as a search ("county where Van Hook Township is located")
    # Where the question names something (``anchors``), worked out once: the bridge hop
    # checks every passage it reads against the names inside the description.
    names: tuple[Span, ...] = ()

    @property
    def text(self) -> str:
        return self.question[self.start : self.end]

    def substitute(self, entity: str) -> str:
        """The outer question with the description replaced by its answer."""
        out = f"{self.question[: self.start]}{entity}{self.question[self.end :]}"
        return re.sub(r"\s+", " ", out).strip()

    @property
    def wants_person(self) -> bool:
        return stem(self.head.split()[-1].casefold()) in PERSON_HEADS


def anchors(question: str, titles: TitleIndex | None) -> list[Span]:
    """Where the question names something: known page titles, capitalised names (not the
    question's first word), identifiers and numbers. Sorted, non-overlapping."""
    found: list[Span] = []
    for title in named_titles(question, titles):
        name = base_title(title)
        for start, end in name_spans(name, question):
            found.append(Span(start, end))
    if titles is not None:
        # Lowercase mentions of multi-word pages ("avengers age of ultron").
        for title in titles.mentions(question):
            name = base_title(title)
            if len(name.split()) < 2 or not terms(name):
                continue
            pattern = r"(?<!\w)" + r"\W+".join(re.escape(w) for w in re.findall(r"\w+", name))
            for m in re.finditer(pattern + r"(?!\w)", question, re.IGNORECASE):
                found.append(Span(m.start(), m.end()))
    for m in _NAME.finditer(question):
        start, text = m.start(), m.group(0)
        # A sentence's first word is capitalised anyway: "What", "In True Grit" -> "True Grit".
        parts = text.split()
        while parts and (parts[0].casefold() in STOPWORDS or parts[0].casefold() in _NOT_HEADS):
            start += len(parts[0]) + 1
            parts = parts[1:]
            while start < m.end() and question[start] == " ":
                start += 1
        if parts:
            found.append(Span(start, m.end()))
    for m in _IDENT.finditer(question):
        found.append(Span(m.start(), m.end()))
    found.sort(key=lambda s: (s.start, -s.end))
    merged: list[Span] = []
    for s in found:
        if merged and s.start < merged[-1].end:
            if s.end > merged[-1].end:
                merged[-1] = Span(merged[-1].start, s.end)
            continue
        merged.append(s)
    return merged


@dataclass(frozen=True)
class _Opener:
    start: int
    tail: int  # where the description's content begins
    head: str


def _openers(question: str, names: list[Span]) -> list[_Opener]:
    def inside_name(i: int) -> bool:
        return any(s.start <= i < s.end for s in names)

    out: list[_Opener] = []
    for m in _OPENER.finditer(question):
        head = m.group("head")
        head_words = head.split()
        if head_words[-1] in _NOT_HEADS or head_words[0] in _NOT_HEADS:
            continue
        if inside_name(m.start("head")):
            continue
        conn = m.group("conn")
        if conn.endswith("ing") and conn in STOPWORDS:
            continue
        out.append(_Opener(m.start(), m.end(), head))
    for s in names:
        pm = _POSSESSIVE.match(question, s.end)
        if pm and pm.group("head").split()[0] not in STOPWORDS:
            out.append(_Opener(s.start, s.start, pm.group("head")))
    out.sort(key=lambda o: o.start)
    return out


def _extent(question: str, opener: _Opener, names: list[Span], openers: list[_Opener]) -> int:
    """End of a description: its first name, then on through names linked by small words
    ("played Susan Walker in Miracle on 34th Street"); when the outer question does not
    wait for a verb after it, on to its last name ("where UN troops approached the Yalu
    River"); then a trailing "is located" / "is a member of"."""
    pending = bool(re.search(r"\b(?:do|does|did)\s*$", question[: opener.start], re.IGNORECASE))
    if opener.tail == opener.start:  # possessive: "Anna Benson's husband"
        m = _POSSESSIVE.match(question, next(s.end for s in names if s.start == opener.start))
        if not m:
            return -1
        end = m.end()
        inner = [s for s in names if s.start >= end]
        pending = True
    else:
        inner = [s for s in names if s.start >= opener.tail]
        if not inner:
            return -1
        end = inner[0].end
        inner = inner[1:]
    limit = min((o.start for o in openers if o.start >= end), default=len(question))
    linked = end
    for s in inner:
        if s.end > limit:
            break
        if _LINKING.fullmatch(question[linked : s.start]):
            linked = s.end
    end = linked
    if not pending:
        fits = [s.end for s in inner if s.end <= limit]
        end = max([end, *fits])
    # Possessive right after the last name belongs to it ("the wife of X's brother").
    m = _POSSESSIVE.match(question, end)
    if m and not any(o.start == end for o in openers):
        end = m.end()
    pos = end
    for w in re.finditer(r"\s*([\w'’]+)", question[end:]):
        if w.group(1).casefold() not in _TRAILING:
            break
        if w.group(1).casefold() not in _DANGLING:
            pos = end + w.end()
    # A dangling "of" / "on" that ends the question closes the description too.
    close = re.match(r"^(?:\s+(?:a|an|the|in|at|on|of))+(?=\s*\?\s*$)", question[pos:])
    if close:
        pos += close.end()
    if question[pos : pos + 1] in {'"', "”", "’"}:
        pos += 1
    # "the person who issued the Tamworth manifesto": a word or two left before the end
    # belong to the description, unless the outer question waits for a verb ("what did
    # the actor of X receive?", "when was X crowned?").
    tail = re.match(r"^([^?,.;:]*)[?.]?\s*$", question[pos:])
    if tail and opener.start > 0 and not pending:
        rest = tail.group(1).split()
        if 1 <= len(rest) <= 2 and terms(" ".join(rest)):
            if not any(w.casefold().endswith("ed") for w in rest):
                pos += len(tail.group(1).rstrip())
    return pos


def innermost(question: str, titles: TitleIndex | None) -> SubQuestion | None:
    """The innermost description that holds a name, or None for a one-hop question."""
    names = anchors(question, titles)
    if not names:
        return None
    openers = _openers(question, names)
    spans: list[tuple[_Opener, int]] = []
    for o in openers:
        end = _extent(question, o, names, openers)
        if end > o.start:
            spans.append((o, end))
    if not spans:
        return None

    def first_name_after(o: _Opener) -> int:
        return min((s.start for s in names if s.start >= o.tail), default=len(question))

    # Start from the leftmost description; descend into a description nested as its
    # complement ("the sibling of [the actress who ...]"), i.e. one that starts before
    # the outer one's first name.
    current = spans[0]
    while True:
        o, end = current
        bound = first_name_after(o)
        nested = [
            (n, e)
            for n, e in spans
            if n.start > o.start and n.start <= bound and e <= max(end, e) and n is not o
        ]
        if o.tail == o.start:  # possessive: the name itself is the complement
            nested = [(n, e) for n, e in spans if n.start > o.start and e <= o.start]
        if not nested:
            break
        current = nested[0]
    o, end = current
    text = question[o.start : end]
    query = re.sub(r"^(?:the|a|an|its|his|her|their)\s+", "", text, flags=re.IGNORECASE)
    if len(words(query)) > MAX_SUB_QUERY_WORDS or query.casefold() == question.casefold():
        return None
    # A description that is the whole question adds nothing ("Who is the author of X?"
    # is already one hop): the question's own search covers it.
    outer = (question[: o.start] + question[end:]).strip()
    if not set(terms(outer)) - {"who", "what", "which", "whom", "where", "when", "how"}:
        return None
    return SubQuestion(question, o.start, end, o.head, query, tuple(names))


def holds_names(sub: SubQuestion, e: Evidence, in_title: bool = False) -> bool:
    """Whether a passage (or, ``in_title``, its title) mentions every name the
    description holds."""
    have = set(terms(e.title if in_title else f"{e.title} {e.text}"))
    for s in sub.names:
        if s.start >= sub.start and s.end <= sub.end:
            need = set(terms(sub.question[s.start : s.end]))
            if need and not need <= have:
                return False
    return True


def candidates(
    sub: SubQuestion,
    passages: list[Evidence],
    titles: TitleIndex | None,
    limit: int = 2,
) -> list[tuple[str, Evidence]]:
    """Bridge entities: the names the sub-question's passages give for the description.

    A name counts when the question does not already hold it; it ranks higher when it
    stands close to the description's own words in a better passage, when it is of the
    kind the description asks for ("Mountrail County" for "the county ..."; a person's
    name for "the actress who ..."), and when it is a known page. A name that most of
    the passages mention ("United States") says little about this description.
    """
    q_fold = sub.question.casefold()
    # Multi-word names of the question (a single word may be a surname the answer shares).
    q_names = [
        sub.question[s.start : s.end].casefold()
        for s in sub.names
        if " " in sub.question[s.start : s.end].strip()
    ]
    q_terms = set(terms(sub.question))
    sub_terms = set(terms(sub.query))
    head = stem(sub.head.split()[-1].casefold())
    scored: dict[str, tuple[float, str, Evidence]] = {}
    for rank, e in enumerate(passages):
        weight = 1.0 / (1 + 1.5 * rank)
        # A passage that lacks one of the description's own names is about something
        # else (another incident, a namesake): its names are weaker leads.
        if not holds_names(sub, e):
            weight *= 0.25
        for name, dist in _names_by_distance(e, sub_terms, titles, rank):
            fold = name.casefold()
            if len(name) < 3 or fold in q_fold or fold in STOPWORDS or _date_like(name):
                continue
            if is_label(name, e.text, table_cells=True):
                continue
            if any(n in fold for n in q_names):  # the question's own subject, restated
                continue
            name_terms = terms(name)
            if not name_terms or set(name_terms) <= sub_terms:
                continue
            score = weight / (1 + dist / 8)
            if head in name_terms:
                score *= 2.5
            elif sub.wants_person:
                score *= 1.6 if _person_like(name) else 0.6
            if titles is not None and name in titles.titles:
                score *= 1.15
            if len(name.split()) == 1:
                score *= 0.85
            if set(name_terms) & q_terms:
                score *= 0.8
            if fold not in scored or scored[fold][0] < score:
                scored[fold] = (score, name, e)
    # Names that every passage mentions are background, not the answer.
    for fold, (score, name, e) in list(scored.items()):
        n = sum(name.casefold() in f"{p.title} {p.text}".casefold() for p in passages)
        if len(passages) >= 3 and n == len(passages) and head not in terms(name):
            scored[fold] = (score * 0.7, name, e)
    best = sorted(scored.values(), key=lambda v: (-v[0], v[1]))
    out: list[tuple[str, Evidence]] = []
    for _, name, e in best:
        fold = name.casefold()
        if any(fold in o.casefold() or o.casefold() in fold for o, _ in out):
            continue
        out.append((name, e))
        if len(out) >= limit:
            break
    return out


_MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)


def _date_like(name: str) -> bool:
    toks = name.casefold().split()
    return bool(toks) and all(t.isdigit() or t in _MONTHS for t in toks)


def _names_by_distance(
    e: Evidence, sub_terms: set[str], titles: TitleIndex | None, rank: int = 0
) -> list[tuple[str, int]]:
    """The passage's names with their distance (in words) to the description's words: the
    pages it names and its capitalised names; its own title (what the page is about)
    counts as a middling distance when the text does not repeat it."""
    names: list[str] = []
    for t in named_titles(e.text, titles, exclude={e.title}):
        if t not in names and base_title(t).casefold() not in STOPWORDS:
            names.append(t)
    for m in _NAME.finditer(e.text):
        parts = m.group(0).split()
        while parts and (
            parts[0].casefold() in STOPWORDS
            or parts[0].casefold() in _MONTHS
            or parts[0][:1].isdigit()
        ):
            parts = parts[1:]
        while parts and (parts[-1].casefold() in STOPWORDS or parts[-1][:1].isdigit()):
            parts = parts[:-1]
        name = " ".join(parts).strip(" .,")
        if name and name not in names:
            names.append(name)
    toks = [stem(w) for w in words(e.text)]
    at = [i for i, t in enumerate(toks) if t in sub_terms]
    out: list[tuple[str, int]] = []
    own = base_title(e.title) if e.title else ""
    for name in names:
        d = name_distance(toks, at, base_title(name))
        if d is not None:
            out.append((name, d))
    seen = {n for n, _ in out}
    subject = OWN_TITLE_DISTANCE // 2 if rank == 0 else OWN_TITLE_DISTANCE
    if own and own not in names:
        # The best passage's page is the likeliest answer ("the repository defining X"
        # finds the repository's page first).
        out.append((own, subject))
    # Pages the passage's own title names ("Postmortem INC-1: tracking-ingest outage" is
    # about tracking-ingest).
    for t in named_titles(e.title, titles, exclude={e.title}):
        if t not in seen and base_title(t).casefold() not in STOPWORDS:
            out.append((t, subject))
    return out


def _person_like(name: str) -> bool:
    parts = name.split()
    return 2 <= len(parts) <= 4 and all(p[:1].isupper() or p in {"de", "van", "von"} for p in parts)
