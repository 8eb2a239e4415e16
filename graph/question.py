"""What kind of answer a question asks for, read from its structure, not its template.

- yes/no: the question opens with an auxiliary verb ("is", "were", "does", "can" ...);
- a choice: it names options joined by "or" ("X or Y", with or without a comma; "between
  X and Y"), and the answer is one of them;
- a comparison: a choice or a yes/no decided by an attribute both options carry, read
  from a comparative ("older", "first", "more ... than", "longer") and the event it is
  about ("born", "died", "released", "founded");
- otherwise a wh-question whose answer has a type: a person ("who"), a date ("when",
  "what year"), a number ("how many"), a duration ("how long"), a place ("where"), or the
  kind named after "which"/"what" ("which team", "what port").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from graph.text import SENTENCE_END, STOPWORDS, stem, terms, words

AnswerType = Literal[
    "yesno", "option", "person", "date", "number", "duration", "place", "value", "entity"
]
Direction = Literal["min", "max"]

_AUX = frozenset(
    """is are was were am do does did can could has have had will would should shall may
    might must isn't aren't wasn't weren't doesn't don't didn't""".split()
)
_WH = frozenset("what which who whom whose when where why how".split())
# Words that end a name or noun phrase when read outwards from " or " / " and ".
_PHRASE_STOP = (
    _AUX
    | _WH
    | frozenset(
        """between both either neither than then also first earlier later last more less
    older younger newer bigger larger smaller longer shorter taller higher lower""".split()
    )
)
_PERSON_KINDS = frozenset(
    """person people man woman actor actress singer musician writer author director producer
    composer player politician artist poet novelist founder leader owner engineer manager
    lead maintainer scientist""".split()
)
_PLACE_KINDS = frozenset(
    "city country state town county place region village location province nation".split()
)
_DATE_KINDS = frozenset("year date day month decade century birthday".split())
_NUMBER_KINDS = frozenset(
    """number amount count percentage percent total population attendance enrollment
    enrolment capacity""".split()
)

# The event a date comparison is about, by its cue words (stems).
EVENTS: dict[str, frozenset[str]] = {
    "birth": frozenset({"born", "birth", "older", "younger", "oldest", "youngest", "age"}),
    "death": frozenset({"died", "death", "die", "dead", "killed"}),
    "start": frozenset(
        """released release came come out published premiered founded formed established
        created built opened launched started began introduced added debuted aired issued
        incorporated organized written made produced recorded""".split()
    ),
}
# How a page states the event's date, whatever the question called it ("which came out
# first", "which showed up first"): a person's page writes "born"; a product's, a work's
# or an API's writes that it was released, added or introduced, in a year or "since
# version 3.8". A comparison's search for each option carries these words.
EVENT_WORDS: dict[str, tuple[str, ...]] = {
    "birth": ("born",),
    "death": ("died",),
    "lifespan": ("born", "died"),
    "start": ("released", "added", "introduced", "since", "version"),
}
_EARLY = frozenset("first earlier earliest older oldest before sooner previously".split())
_LATE = frozenset("later latest last younger youngest newer newest after recent".split())
_MORE = frozenset("more most larger largest bigger biggest higher highest greater".split())
_LESS = frozenset("less least fewer fewest smaller smallest lower lowest".split())
_LONGER = frozenset("longer longest taller tallest".split())
_SHORTER = frozenset("shorter shortest".split())
# An option parsed with a comparative in it ("earlier--the Battle of X") keeps it for the
# question: these words say which way, never whose name.
_DIRECTION_WORDS = _EARLY | _LATE | _MORE | _LESS | _LONGER | _SHORTER
# A comparative of size along one dimension, read as a length with its unit.
_DIMENSION = frozenset(
    "longer longest shorter shortest taller tallest higher highest deeper deepest".split()
)
# "lasted longer", "the longest career": a span of time, not a length.
_DURING = frozenset("last lasted lasts lasting career reign reigned tenure ran run".split())


@dataclass
class QuestionShape:
    answer_type: AnswerType
    options: list[str] = field(default_factory=list)  # for a choice or a yes/no comparison
    # "birth", "death", "start", "lifespan", "quantity", "measure" (a length), "span" (time),
    # "frequency" (times a year)
    event: str | None = None
    direction: Direction | None = None
    kind: list[str] = field(default_factory=list)  # "which film" -> ["film"]
    same: bool = False  # "the same X", "both X": a shared-attribute yes/no
    attribute: list[str] = field(default_factory=list)  # "same nationality" -> ["nationality"]
    relation: list[str] = field(default_factory=list)  # "the director of X" -> ["director"]


# A sentence opens with a capital, or, as people type, with a lowercase question word:
# "the create index docs mention partial indexes. which version added them?"
_ASK_SPLIT = re.compile(
    rf"{SENTENCE_END}\s+(?=[A-Z0-9\"'“(]|(?:what|which|who|whose|whom|when|where|why|how|"
    r"is|are|was|were|does|do|did|can|could|should|will|would|has|have)\b)"
)


# How people ask for a default without the word: "if I don't pass -C", "without setting
# it", "unless I rename it", "out of the box", "left unset". The phrase says the value asked
# is the one that holds when nobody chooses another.
_USING = (
    r"(?:pass|passing|set|setting|specify|specifying|give|giving|supply|supplying|provide|"
    r"providing|change|changing|configure|configuring|touch|touching|override|overriding|"
    r"rename|renaming|add|adding|use|using|tell|telling|choose|choosing|pick|picking|"
    r"select|selecting)"
)
_DEFAULT_IDIOM = re.compile(
    r"\bout[- ]of[- ]the[- ]box\b"
    rf"|\b(?:if|when)\s+(?:i|you|we|one|they)\s+(?:don'?t|do\s+not|never)\s+(?:\w+\s+){{0,2}}?{_USING}\b"
    rf"|\b(?:don'?t|do\s+not|never)\s+bother\s+(?:to\s+)?{_USING}\b"
    rf"|\bwithout\s+(?:\w+\s+)?{_USING}\b"
    rf"|\bunless\s+(?:i|you|we|one|they|told)\b(?:\s+(?:\w+\s+){{0,2}}?{_USING}\b)?"
    r"|\bleft\s+(?:unset|alone|blank|empty|out)\b|\bnot\s+(?:set|specified|given|configured)\b"
    r"|\b(?:leave|leaving)\s+(?:it\s+|that\s+)?out\b|\bomit(?:s|ted|ting)?\b",
    re.IGNORECASE,
)


def default_idioms(question: str) -> list[str]:
    """The phrases by which ``question`` asks for a default without saying "default"."""
    return [m.group(0) for m in _DEFAULT_IDIOM.finditer(question)]


def ask_of(question: str) -> str:
    """The sentence that asks ("Ticket X spiked. Who leads ...?" -> "Who leads ...?")."""
    # Sentences, but an initial ("J. G. Farrell") does not end one.
    parts = [p.strip() for p in _ASK_SPLIT.split(question.strip()) if p.strip()]
    asks = [p for p in parts if p.rstrip().endswith("?")]
    return (asks or parts or [question])[-1].strip()


# Prepositions that open an adverbial put before a question's verb: "on a current build
# is X bigger than Y?", "in sqlite, can a view be indexed?".
_FRONTING = frozenset(
    "in on at for with without under since after before during from by as".split()
)
_MAX_FRONTED = 6


def _unfronted(ask: str) -> str:
    """The question from its auxiliary on, when a prepositional phrase stands before it
    and it asks no wh-word: English fronts circumstances ("in sqlite, is ...") without
    changing what is asked."""
    toks = words(ask)
    if not toks or toks[0] not in _FRONTING or _WH & set(toks):
        return ask
    comma = re.match(r"^[^,?]{1,80},\s*(.+)$", ask)
    if comma and words(comma.group(1))[:1] and words(comma.group(1))[0] in _AUX:
        return comma.group(1)
    for k, t in enumerate(toks[1 : _MAX_FRONTED + 1], start=1):
        if t in _AUX and len(toks) - k > 2:  # ("in sqlite the default page size is" asks a value)
            m = re.search(rf"(?i)\b{re.escape(t)}\b", ask)
            return ask[m.start() :] if m else ask
    return ask


def analyse(question: str) -> QuestionShape:
    # "what's" asks as "what is" does.
    ask = re.sub(r"\b(what|who|where|when|how)[’']s\b", r"\1 is", ask_of(question), flags=re.I)
    ask = _unfronted(ask)
    toks = words(ask)
    first = toks[0] if toks else ""
    options = choice_options(ask)
    if first in _AUX and len(options) < 2:
        options = options or _subjects(ask)
    # The compared attribute is read from the question's own words, not its options' names
    # ("The Romantic Age" says nothing about anyone's birth).
    named = {w for opt in options for w in words(opt)} - _DIRECTION_WORDS
    event, direction = _comparison([t for t in toks if t not in named])
    kind = _kind(ask)
    if first in _AUX and len(choice_options(ask)) < 2:
        shape = QuestionShape("yesno", options=options)
        shape.same = bool({"same", "both", "different", "either"} & set(toks))
        skip = options_terms(shape.options)
        shape.attribute = _after(toks, ("same", "different"), skip) or _after(toks, ("both",), skip)
        if event:
            shape.event, shape.direction = event, direction
        shape.relation = _relation(toks, kind)
        return shape
    if len(options) >= 2:
        return QuestionShape(
            "option",
            options=options,
            event=event,
            direction=direction,
            kind=kind,
            relation=_relation(toks, kind),
        )
    return QuestionShape(_wh_type(toks, kind), kind=kind, relation=_relation(toks, kind))


def _wh_type(toks: list[str], kind: list[str]) -> AnswerType:
    head = [t for t in toks[:3] if t in _WH]
    wh = head[0] if head else next((t for t in toks if t in _WH), "")
    joined = " ".join(toks)
    if wh in {"who", "whom"} or (wh == "whose"):
        return "person"
    if wh == "when" or set(kind) & _DATE_KINDS:
        return "date"
    if re.search(r"\bhow (many|much)\b", joined) or set(kind) & _NUMBER_KINDS:
        return "number"
    if re.search(r"\bhow (long|old)\b", joined):
        return "duration" if "long" in toks else "number"
    if wh == "where" or set(kind) & _PLACE_KINDS:
        return "place"
    if set(kind) & _PERSON_KINDS:
        return "person"
    if kind:
        return "entity"
    return "value"


_KIND = re.compile(
    r"^\s*(?:(?:in|for|from|at|on|to|by|with|of)\s+)?(?:which|what)\s+"
    r"(?:(?:is|was|are|were)\s+the\s+)?([\w'’ -]+)",
    re.I,
)


# "… was born in what year?", "Tysons Galleria is located in what county?": the wh-phrase
# further on, when no question word opens the ask.
_KIND_INSIDE = re.compile(r"\b(?:which|what)\s+([\w'’ -]+)", re.I)
_OPENS_WH = re.compile(r"^\s*(?:\w+\s+)?(?:what|which|who|whom|whose|when|where|why|how)\b", re.I)


def _kind(ask: str) -> list[str]:
    """ "which film ..." -> ["film"]; "what year ..." -> ["year"]; "what is ..." -> []."""
    m = _KIND.match(ask) or (None if _OPENS_WH.match(ask) else _KIND_INSIDE.search(ask))
    if not m or (m.re is _KIND_INSIDE and _relative(m.group(1))):
        return []
    out: list[str] = []
    for w in words(m.group(1)):
        if w in STOPWORDS or w in _AUX or (out and (w.endswith("ed") or w.endswith("s"))):
            break
        out.append(stem(w))
        if len(out) >= 2:
            break
    return out


_OBJECT_OPENERS = frozenset("the a an his her their its this that".split())


def _relative(rest: str) -> bool:
    """ "the film which starred X", "the city which is…": a relative clause, no question."""
    first = words(rest)[:1]
    return not first or first[0] in _AUX or first[0] in STOPWORDS or first[0].endswith("ed")


# Being somewhere, or existing, for longer: what started earlier.
_EXISTED = frozenset({"existed", "exist", "exists"})


def _been_there(toks: list[str]) -> bool:
    pairs = zip(toks, toks[1:], strict=False)
    been = any(t == "been" and n in {"in", "on", "around"} for t, n in pairs)
    return been or bool(_EXISTED & set(toks))


def _comparison(toks: list[str]) -> tuple[str | None, Direction | None]:
    have = set(toks)
    for i, t in enumerate(toks[:-1]):
        nxt = toks[i + 1]
        if t in {"before", "after"} and (nxt.endswith("ing") or nxt in _OBJECT_OPENERS):
            # "drunk before retiring to bed", "after the war": a preposition with its
            # object, no comparison ("released before X", "which came out before?" are)
            have.discard(t)
    direction: Direction | None = None
    if have & _EARLY:
        direction = "min"
    elif have & _LATE:
        direction = "max"
    if "lived" in have and have & {"longer", "longest"}:
        return "lifespan", "max"
    if "lived" in have and have & {"shorter", "shortest"}:
        return "lifespan", "min"
    if _been_there(toks) and have & {"longer", "longest", "shorter", "shortest"}:
        # "which has been in httpd longer": the earlier arrival
        return "start", "min" if have & {"longer", "longest"} else "max"
    for event, cues in EVENTS.items():
        if have & cues and direction:
            # "older" asks for the earlier birth; "younger" for the later one.
            return event, direction
    if have & {"often", "frequently", "frequent"} and have & (_MORE | _LESS):
        return "frequency", "max" if have & _MORE else "min"
    if have & _DIMENSION and have & _DURING:
        return "span", "max" if have & (_LONGER | _MORE) else "min"
    if have & _DIMENSION and not have & {"more", "most", "less", "fewer"}:
        return "measure", "max" if have & (_LONGER | _MORE) else "min"
    if have & (_MORE | _LONGER):
        return "quantity", "max"
    if have & (_LESS | _SHORTER):
        return "quantity", "min"
    if direction:
        return "start", direction  # "which came first": the earliest date each carries
    return None, None


_RELATION_NEXT = frozenset({"of", "who", "was", "is", "born", "died", "that", "from"})


def _relation(toks: list[str], kind: list[str]) -> list[str]:
    """Nouns naming a dependent thing the attribute belongs to: "the film whose director
    was born first" -> ["director"] (read from "the/whose/its X of/who/was")."""
    out: list[str] = []
    for i, t in enumerate(toks[:-1]):
        if t in {"the", "whose", "its", "their", "his", "her"} and i + 1 < len(toks):
            nxt = toks[i + 1]
            after = toks[i + 2] if i + 2 < len(toks) else ""
            if (
                nxt not in STOPWORDS
                and stem(nxt) in _PERSON_KINDS
                and stem(nxt) not in kind
                and (after in _RELATION_NEXT or t == "whose")
            ):
                out.append(stem(nxt))
    return out


def _after(toks: list[str], cues: tuple[str, ...], skip: set[str]) -> list[str]:
    """The noun after a cue ("same nationality", "both magazines"), not an option's word."""
    for i, t in enumerate(toks):
        if t in cues:
            rest = [
                stem(w)
                for w in toks[i + 1 : i + 4]
                if w not in STOPWORDS and w not in _AUX and stem(w) not in skip
            ]
            if rest:
                return rest[:1]
    return []


_VERSUS = re.compile(
    r"(?:^|[,:;]\s*)([^,:;]+?)\s+(?:vs\.?|versus)\s+([^,:;?]+?)"
    r"(?=\s*(?:[,:;?]|$)|\s+(?:which|who|what)\b)",
    re.IGNORECASE,
)


def choice_options(ask: str) -> list[str]:
    """The options of "…, X or Y?", "is X or Y …", "between X and Y": the phrases on each
    side of the conjunction, read outwards until punctuation or a word that cannot be in
    a name (an auxiliary, a wh-word, a comparative). With no punctuation to end it, the
    longer side is cut to the length of the shorter one (options are parallel)."""
    text = ask.rstrip(" ?.!")
    m = re.search(r"\bbetween\s+(.+?)\s+and\s+(.+?)(?:,|\?|$|\s+(?:which|who|what)\b)", text, re.I)
    if m:
        return [_trim(m.group(1)), _trim(m.group(2))]
    # "os.memfd_create vs os.pidfd_open, which is older?", "which is faster: json versus
    # pickle": when "which" asks, the phrases either side of "vs", each to its punctuation
    m = _VERSUS.search(text) if re.search(r"\bwhich\b", text, re.I) else None
    # ("Kramer vs. Kramer was directed by whom?", "which studio made Kramer vs. Kramer?"
    # name a film: no choice is asked, or an option would hold the ask's own words)
    # ("In the python vs rust rewrite, which …": a fronted phrase is no option either)
    if m and not _PHRASE_STOP & set(words(m.group(1))) and words(m.group(1))[0] not in _FRONTING:
        return [_trim(m.group(1)), _trim(m.group(2))]
    idx = [m.start() for m in re.finditer(r"\s+or\s+", text)]
    if not idx:
        # "Which genus has more species, Bactris and Epigaea?": "and" after a comma.
        # Options are names: a clause after the comma ("…, has a set of books about X
        # and Y") lists no options.
        m = re.search(r",\s*([^,]+?)\s+and\s+([^,]+)$", text)
        named = m is not None and _outward(m.group(1).split(), True) == m.group(1).split()
        if m and named and words(text)[:1] and words(text)[0] in _WH:
            return [_trim(m.group(1)), _trim(m.group(2))]
        return []
    if len(idx) != 1:
        return []
    i = idx[0]
    left, right = text[:i], re.sub(r"^\s+or\s+", "", text[i:])
    l_closed = bool(re.search(r"[,:;]", left))
    lpart = re.split(r"[,:;]\s*", left)[-1]
    lw = _outward(lpart.split(), reverse=True)
    if l_closed and lw == lpart.split():
        # "…, X or Y?" / "…, X or Y, verb …": the right option runs to the next comma
        # that is not inside a number ("3,000"), or to the end.
        rm = re.match(r"(.+?)(?:,(?!\d)|$)", right)
        rw = (rm.group(1) if rm else right).split()
    else:
        rw = _outward(right.split(), reverse=False)
        if len(rw) > len(lw):
            rw = rw[: len(lw)]  # no punctuation ends it: options are parallel
    if not lw or not rw:
        return []
    return [_trim(" ".join(lw)), _trim(" ".join(rw))]


def _outward(toks: list[str], reverse: bool) -> list[str]:
    seq = list(reversed(toks)) if reverse else list(toks)
    out: list[str] = []
    for t in seq:
        low = t.casefold().strip("\"'“”()")
        if low in _PHRASE_STOP and not (t[:1].isupper() and out and reverse is False):
            break
        out.append(t)
    return list(reversed(out)) if reverse else out


def _trim(phrase: str) -> str:
    phrase = phrase.strip(" \"'“”,;")
    phrase = re.sub(r"^(?:the|a|an)\s+(?=[a-z])", "", phrase)
    return phrase.strip()


def _subjects(ask: str) -> list[str]:
    """The two things a yes/no question compares: "Are X and Y both …", "Is X taller than
    Y": the phrase after the auxiliary (and "both") up to "and"/"than", and the name that
    opens the rest (capitalised words, a parenthesis, an identifier)."""
    m = re.match(r"\s*\w+\s+(?:both\s+)?(.+?)\s+(and|than)\s+(.+)$", ask.rstrip(" ?"))
    if not m:
        return []
    # "Is X older than Y", "Is X numerically lower than Y": the comparative is not X's name
    toks = m.group(1).split()
    if m.group(2) == "than" and len(toks) > 1:
        toks.pop()  # the word before "than" is the comparative: "faster", "more"
    while len(toks) > 1 and (toks[-1] in _PHRASE_STOP or toks[-1].endswith("ly")):
        toks.pop()
    left = _trim(" ".join(toks))
    right = _leading_name(m.group(3), len(left.split()))
    return [left, right] if left and right else []


_LEAD_NAME = re.compile(
    r"(?:the\s+)?((?:[A-Z0-9][\w'’.:&-]*|\([^)]*\))(?:\s+(?:(?:of|the|de|and|&|in|on|for|"
    r"von|van|la|le|du)\s+){0,2}(?:[A-Z0-9][\w'’.:&-]*|\([^)]*\)))*)"
)


def _leading_name(text: str, parallel: int) -> str:
    m = _LEAD_NAME.match(text.strip())
    if m:
        return _trim(m.group(1))
    # Lowercase names ("pg_dump and pg_restore"): as many words as the other side, an
    # article not counted.
    toks = _outward(
        re.sub(r"^(?:the|a|an)\s+", "", text.strip(), flags=re.I).split(), reverse=False
    )
    return _trim(" ".join(toks[: max(parallel, 1)]))


def option_terms(option: str) -> set[str]:
    return set(terms(option))


# "X and Y": two capitalised names joined by "and".
_PAIR = re.compile(
    r"((?:[A-Z][\w'’.-]*\s+)*[A-Z][\w'’.-]*)\s+and\s+((?:[A-Z][\w'’.-]*)(?:\s+[A-Z][\w'’.-]*)*)"
)
# Words that ask what two things have in common.
SHARED_CUES = frozenset({"both", "common", "share", "shared", "same"})


def paired_names(ask: str) -> list[str]:
    """The two names of "… X and Y …", a capitalised question word trimmed ("What Henry
    Roth and Ann Lee …" -> ["Henry Roth", "Ann Lee"]); [] when there is no such pair."""
    m = _PAIR.search(ask)
    if not m:
        return []
    toks = m.group(1).split()
    while toks and toks[0].casefold() in _WH | STOPWORDS:
        toks.pop(0)
    names = [" ".join(toks), m.group(2).strip()]
    return names if all(names) else []


def shared_subjects(question: str) -> list[str]:
    """The two things a question asks a shared attribute of ("What professions did X and
    Y have in common?", "X and Y are both forms of what?"), or []."""
    ask = ask_of(question)
    return paired_names(ask) if SHARED_CUES & set(words(ask)) else []


def options_terms(options: list[str]) -> set[str]:
    """Every term the options name (a question's other words are what it asks about)."""
    return set().union(*(option_terms(o) for o in options)) if options else set()


# "what is the county seat of", "who was the first president of", "what's X's capital?"
_ASKED_OF = re.compile(
    r"^(?:what|who|which)\s+(?:is|was|are|were)\s+the\s+((?:[a-z][\w-]*\s+){0,2}?[a-z][\w-]*)"
    r"\s+(?:of|for|in|at)\b",
    re.IGNORECASE,
)
_ASKED_OWN = re.compile(
    r"^(?:what|who|which)\s+(?:is|was|are|were)\s+.{2,80}?['’]s?\s+"
    r"((?:[a-z][\w-]*\s+){0,2}?[a-z][\w-]*)\s*\?*$",
    re.IGNORECASE,
)


def asked_phrase(question: str) -> str | None:
    """The noun phrase a question asks the value or holder of: "what is the county seat
    of X" -> "county seat", "what's the memory limit of X" -> "memory limit", "what was
    Acme's parent company?" -> "parent company"; None for other questions."""
    ask = " ".join(ask_of(question).replace("’", "'").split())
    ask = re.sub(r"^(what|who|which)'s\b", r"\1 is", ask, flags=re.IGNORECASE)
    m = _ASKED_OF.match(ask) or _ASKED_OWN.match(ask)
    return m.group(1).casefold() if m else None


# "the institution that X is part of", "the county where X is located", "the team that owns
# X": a thing the question describes by its relation to a named one.
DESCRIBED = re.compile(r"\bthe\s+(?:[a-z-]+\s+){1,3}?(?:that|which|who|whom|whose|where)\b")
