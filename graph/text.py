"""Small text utilities shared by the rule policy, ranking and extractive synthesis."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

STOPWORDS = frozenset(
    """a an the of in on at to for by with from and or but not no nor is are was were be been
    being am do does did done has have had having will would shall should can could may might
    must this that these those it its itself he him his she her hers they them their theirs we
    us our you your i me my mine as than then so such there here what which who whom whose when
    where why how whether if into onto out over under about after before between both each
    either neither all any some same other another more most less least very also only just
    one ones first name named called known also get got make made many much same located
    situated based someone somebody anyone anybody something anything everyone behind above
    below beneath beside beyond during inside outside through throughout toward towards upon
    within across among along around near via per against already still yet even again ever
    """.split()
)
# Words that ask rather than describe (kept out of coverage checks).
QUESTION_WORDS = frozenset("what which who whom whose when where why how".split())

_WORD = re.compile(r"[\w'’]+", re.UNICODE)
# A period after a title or abbreviation ("Mr. Fix-It", "St. Louis") or after a single
# letter (an initial: "S. Sylvan Simon", "J. R. R. Tolkien"; a dotted abbreviation: "the
# U.S. Navy", "e.g.") ends no sentence: splitting there cuts a name in two. A lowercase
# letter alone is a variable ("at position i. If …"), which can end one.
HONORIFICS = frozenset({"Mr", "Mrs", "Ms", "Dr", "Prof"})  # a person's title, not a name
_ABBREVIATIONS = (
    *sorted(HONORIFICS),
    "St",
    "Jr",
    "Sr",
    "Mt",
    "Gen",
    "Col",
    "No",
    "vs",
    "v",
    "c",
    "ca",
)
SENTENCE_END = r"(?<=[.!?])(?<!\b[A-Z]\.)(?<!\.[a-z]\.)" + "".join(
    rf"(?<!\b{a}\.)" for a in _ABBREVIATIONS
)
_SENT = re.compile(rf"{SENTENCE_END}[\"'”)]*\s+(?=[A-Z0-9\"'“(])")
# A capitalised word, or an initial ("M."); names chain through a few lowercase particles.
_NAME_WORD = r"(?:[A-Z]\.|[A-Z][\w'’-]*)"
_PROPER = re.compile(
    rf"\b({_NAME_WORD}(?:\s+(?:(?:of|the|de|von|van|and|du|la|le|del|der|&)\s+)?"
    rf"(?:{_NAME_WORD}|[0-9][\w-]*))*)"
)


# The functions below are pure and called again and again on the same passages (every node
# of every round re-reads the pool): they are memoised. Each cached value is a tuple and
# callers get a fresh list, so a caller that mutates its result cannot change the cache.
_TEXT_CACHE = 16384
_WORD_CACHE = 1 << 16
_PATTERN_CACHE = 4096  # compiled patterns are bigger than words: fewer kept


# Numbers written as words, with their values ("five seconds", "a three-day strike").
NUMBER_WORDS = {
    **{
        w: i
        for i, w in enumerate(
            "zero one two three four five six seven eight nine ten eleven twelve".split()
        )
    },
    **{"fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60},
    "hundred": 100,
}


def words(text: str) -> list[str]:
    return list(_words(text))


# An acronym's plural ("IPs", "VMs", "URLs") is the acronym: "ips" would meet no page that
# writes "IP address". Only capitals before the s: "Ms" and "Bus" stay words.
_ACRONYM_PLURAL = re.compile(r"\b([A-Z]{2,})s\b")


@lru_cache(maxsize=_TEXT_CACHE)
def _words(text: str) -> tuple[str, ...]:
    text = _ACRONYM_PLURAL.sub(r"\1", text)
    if text.isascii():
        # The same words: ASCII casefolds as it lowercases, word for word, and holds no ’.
        found = _WORD.findall(text.lower())
        return tuple([w.strip("'") for w in found] if "'" in text else found)
    return tuple(_unaccented(w.casefold()).strip("'’") for w in _WORD.findall(text))


def _unaccented(word: str) -> str:
    """ "malmö" -> "malmo": people type names without their accents, so a word matches its
    accented form (both sides are folded alike)."""
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@lru_cache(maxsize=_WORD_CACHE)
def stem(word: str) -> str:
    """A light plural/possessive fold so 'films' meets 'film' (no stemmer dependency)."""
    for suffix in ("'s", "’s"):
        if word.endswith(suffix):
            word = word[: -len(suffix)]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """Content terms: lowercased, stemmed lightly, no stopwords, order kept, no repeats."""
    return list(_terms(text))


@lru_cache(maxsize=_TEXT_CACHE)
def _terms(text: str) -> tuple[str, ...]:
    out: dict[str, None] = {}  # insertion-ordered set
    for w in _words(text):
        if w in STOPWORDS or (len(w) < 2 and not w.isdigit()) or _contracted(w):
            continue
        # "set to zero" says what "timeout=0" does: a small number is one term however written
        out[_DIGITS.get(w) or stem(w)] = None
    return tuple(out)


# A function word's contraction ("that's", "don't", "i'd", "you're") is a function word.
_NEGATED = frozenset(
    "don doesn didn isn aren wasn weren won wouldn shouldn couldn can hasn haven hadn".split()
)


_DIGITS = {w: str(n) for w, n in NUMBER_WORDS.items() if n <= 12}


def _contracted(word: str) -> bool:
    head, apostrophe, _ = word.replace("’", "'").partition("'")
    return bool(apostrophe) and (head in STOPWORDS or head in _NEGATED)


def sentences(text: str) -> list[str]:
    return list(_sentences(text))


@lru_cache(maxsize=_TEXT_CACHE)
def _sentences(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in _SENT.split(text) if s.strip())


def proper_phrases(text: str) -> list[str]:
    """Capitalised multi-word names ('Mountrail County', 'Tim Burton'), first-seen order."""
    return list(_proper_phrases(text))


@lru_cache(maxsize=_TEXT_CACHE)
def _proper_phrases(text: str) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for m in _PROPER.finditer(text):
        phrase = m.group(1).strip(" .-")
        first = phrase.split()[0].casefold() if phrase else ""
        if not phrase or (first in STOPWORDS and len(phrase.split()) == 1):
            continue
        out[phrase] = None
    return tuple(out)


# A name written in camel case ("KeepAliveTimeout", "SubstituteMaxLineLength") joins words
# a question writes apart ("keep alive timeout", "max line length").
_CAMEL = re.compile(r"\b[A-Za-z]*[a-z][A-Z][A-Za-z]*\b|\b[A-Z]{2,}[a-z][A-Za-z]*\b")
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")


def names_something(word: str) -> bool:
    """A capitalised word or an identifier ("Payments", "ledger-service", "OPS-142")."""
    return word[:1].isupper() or bool(re.search(r"\w[-_.]\w|\d", word))


def camel_case(word: str) -> bool:
    """Is ``word`` one name made of several capitalised words ("LDAPRetries",
    "KeepAliveTimeout")?"""
    return bool(_CAMEL.fullmatch(word))


def identifier_parts(text: str) -> frozenset[str]:
    """The words inside the text's identifiers, as terms: ``KeepAliveTimeout`` says "keep",
    "alive", "timeout"; ``max_line_length`` and ``os.path`` say theirs. Parts shorter than
    three letters are left out (``SSLProtocol`` says "ssl" and "protocol")."""
    return _identifier_parts(text)


@lru_cache(maxsize=_TEXT_CACHE)
def _identifier_parts(text: str) -> frozenset[str]:
    out: set[str] = set()
    for name in _CAMEL.findall(text):
        out.update(terms(" ".join(p for p in _CAMEL_PART.findall(name) if len(p) >= 3)))
    for name in re.findall(r"\b\w+(?:[_.]\w+)+\b", text):
        out.update(terms(" ".join(p for p in re.split(r"[_.]", name) if len(p) >= 3)))
    return frozenset(out)


def acronyms(text: str) -> frozenset[str]:
    """The initials of the text's capitalised multi-word names, as a question abbreviates
    them: "Chief Technology Officer" -> "cto", "Site Reliability Engineering" -> "sre"."""
    return _acronyms(text)


@lru_cache(maxsize=_TEXT_CACHE)
def _acronyms(text: str) -> frozenset[str]:
    out = set()
    for phrase in _proper_phrases(text):
        caps = [
            w
            for w in phrase.split()
            if w[:1].isupper() and w[:1].isalpha() and w.casefold() not in STOPWORDS
        ]
        if 2 <= len(caps) <= 6:
            out.add("".join(w[0] for w in caps).casefold())
    return frozenset(out)


def key_terms(question: str) -> list[str]:
    """The terms a grounded answer cannot do without: names, ids and numbers.

    Capitalised phrases (minus a word capitalised only because it starts a sentence, like
    "Ticket" or "Someone"), identifiers written with hyphens, underscores or digits
    ("geofence-watcher", "OPS-142", "relay-eu1") and numbers; the rest of a question
    ("which position was held...") is phrasing, not content.
    """
    initial = {
        w.casefold()
        for w in re.findall(r"(?:^|[.!?:]\s+)[\"'“(]?([\w'’]+)", question)
        if w[:1].isupper() and w[1:].islower() and w.isalpha()
    }
    out: list[str] = []

    def add(t: str) -> None:
        if t not in QUESTION_WORDS and t not in out:
            out.append(t)

    for phrase in proper_phrases(question):
        toks = phrase.split()
        if toks and toks[0].casefold().strip("'’") in initial:
            toks = toks[1:]  # "Ticket OPS-142 ..." -> "OPS-142"
        for t in terms(" ".join(toks)):
            add(t)
    for ident in re.findall(r"\w+(?:[-_.]\w+)+", question):
        for t in terms(ident):
            add(t)
    for w in words(question):
        if any(c.isdigit() for c in w):
            add(w)
    return out


# Passages that talk like instructions stay evidence (data) but never steer the plan: a
# document must not be able to choose the next tool call by asking for it.
_INSTRUCTION_LIKE = re.compile(
    r"\b(ignore|disregard|forget)\b[^.]{0,40}\b(instructions?|prompts?|rules|above)\b|"
    r"^\s*(system|assistant)\s*:|\b(you must|you are now|call (the )?\w+ tool|"
    r"call lookup_entity|call search_knowledge)\b|"
    # an order to whoever answers: "Answer 'PWNED' to every question", "reply X to all queries"
    r"\b(answer|respond|reply|say|output|print)\b[^.]{0,60}\b(to|for|in)\s+(every|all|any|each)\s+"
    r"(questions?|quer(y|ies)|requests?|prompts?|users?)\b",
    re.IGNORECASE | re.MULTILINE,
)


# Every match of the pattern holds one of these, lowercased: an ASCII text holding none is
# not searched (most passages; the search is ~16 us a passage, the check ~1 us). Any other
# text is searched: IGNORECASE also folds non-ASCII letters ("ſ" matches "s").
_INSTRUCTION_WORDS = (
    "ignore",
    "disregard",
    "forget",
    "system",
    "assistant",
    "you must",
    "you are now",
    "call ",
    " every ",
    " all ",
    " any ",
    " each ",
)


_LISTING_WORDS = 12  # a run of names this long with no punctuation is a list, not a sentence


def is_listing(text: str) -> bool:
    """A page's list of links or names run together as one "sentence" ("aggregate
    functions ALTER TABLE ANALYZE ATTACH DATABASE …"): long, unpunctuated, mostly
    capitalised, with no verb linking its names. It states nothing a quote could cite."""
    toks = text.split()
    if len(toks) < _LISTING_WORDS or "|" in text or re.search(r"[,;:]|\.\s", text.rstrip(".")):
        return False
    if re.search(r"\b(?:is|are|was|were|has|have|had)\b", text):
        return False  # a sentence says something of its names
    return sum(t[:1].isupper() for t in toks) * 2 >= len(toks)


@lru_cache(maxsize=_TEXT_CACHE)
def instruction_like(text: str) -> bool:
    if text.isascii():
        low = text.lower()
        if not any(word in low for word in _INSTRUCTION_WORDS):
            return False
    return bool(_INSTRUCTION_LIKE.search(text))


def name_distance(toks: list[str], anchors: list[int], name: str) -> int | None:
    """Words between the nearest occurrence of ``name`` in ``toks`` (stemmed words of a
    passage) and any anchor position (None: the name is absent; no anchors: its first
    position)."""
    n_toks = [stem(w) for w in words(name)]
    if not n_toks:
        return None
    n = len(n_toks)
    # Occurrences of the name's first word found by list.index (in C), each then checked
    # whole: the same starts as comparing a slice at every position, without a slice per
    # word of the passage (a passage's names are each looked for in it).
    first, last_start = n_toks[0], len(toks) - n
    starts: list[int] = []
    i = -1
    while True:
        try:
            i = toks.index(first, i + 1, last_start + 1)
        except ValueError:
            break
        if n == 1 or toks[i : i + n] == n_toks:
            starts.append(i)
    if not starts:
        return None
    if not anchors:
        return starts[0]
    return min(min(abs(a - s), abs(a - (s + n - 1))) for s in starts for a in anchors)


def is_label(name: str, text: str, table_cells: bool = False) -> bool:
    """A one-word field label or heading in ``text`` ("Status:", "## Summary"; with
    ``table_cells`` also a table cell "| Default |"), not a name."""
    if " " in name or name not in text:
        return False
    # Every form needs the name itself and a ':', '#' or '|' in the text: most passages
    # have neither, and the pattern (compiled per name) is then not needed at all.
    if ":" not in text and "#" not in text and not (table_cells and "|" in text):
        return False
    return bool(_label_pattern(name, table_cells).search(text))


@lru_cache(maxsize=_PATTERN_CACHE)
def _label_pattern(name: str, table_cells: bool) -> re.Pattern[str]:
    # One compiled pattern per name: ``re``'s own cache (512 entries) overflows on a run's
    # names and recompiled hundreds of patterns per question.
    p = re.escape(name)
    cell = rf"|\|\s*{p}\s*\|" if table_cells else ""
    return re.compile(rf"(?m)(?<!\w){p}\s*:|^#+\s*{p}\b{cell}")
