"""Which sentence states what the question asks: each sentence read in its own scope.

A page of documentation is a sequence of entries: a label line names a setting, a
function or a section ("port (integer)", "itertools.permutations(iterable, r=None)",
"Module functions") and the sentences under it speak about that thing until the next
label. "The default is 500000" under one setting's label is not the default of the setting
the question names, though both sit in one passage. So a sentence's subject is read from
its scope - its paragraph, the label it sits under (or, without one, the passage's text
before it), its section heading and its page title - and not from the whole page.

A sentence *states* the answer when the question's names are in its scope, most of what
the question asks about (weighted by how rare each word is in the evidence at hand) is in
its scope, and - for a question that asks for a value (a number, a duration, a date, a
default) - the sentence itself writes a value of that type that the question does not.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, TypeVar

from graph.lexicon import prefetch, related
from graph.measures import frequencies, quantity
from graph.question import QuestionShape, analyse, ask_of
from graph.support import chain_context, heading_of, question_parts
from graph.text import (
    NUMBER_WORDS,
    QUESTION_WORDS,
    STOPWORDS,
    acronyms,
    camel_case,
    identifier_parts,
    instruction_like,
    is_listing,
    sentences,
    stem,
    terms,
    words,
)
from tools.evidence import Evidence
from tools.titles import code_names

# A label is one short line with no sentence or clause ending.
_LABEL_MAX_WORDS = 12
_BLOCK = re.compile(r"\n[ \t]*\n")
_CLAUSE_END = (".", ",", ";", ":", "!", "?")
# Weighted share of the question's terms a stating sentence's scope must hold.
MIN_BOUND = 0.45
# How much a question term counts when met in the sentence's paragraph or the one
# before, or further away (an earlier paragraph of its entry, a page a hop came from),
# against 1 in the sentence, its label or its page's title and heading.
_NEAR = (0.9, 0.8)  # its own paragraph, the one before
_FAR = 0.6
# Paraphrase is asked only of the best-bound candidates (one batch of word vectors).
_PARAPHRASE_CANDIDATES = 40

# Multipliers ("million", "dozen") count only after a number: "$47 billion" is not "billion".
_TIME_UNITS = frozenset(
    "ms millisecond second sec minute min hour day week month year decade century".split()
)
_LITERALS = frozenset({"true", "false", "none", "null", "unlimited"})
# Units a quantity is written with ("64 megabytes", "4MB", "200ms"), stems.
_SIZE_UNITS = frozenset(
    "byte kb kib mb mib gb gib tb tib kilobyte megabyte gigabyte terabyte percent".split()
)
_QUANTITY_UNITS = _SIZE_UNITS | _TIME_UNITS
_NUM_WITH_UNIT = re.compile(r"^\d[\d,]*(?:\.\d+)?(?:[kKMGT]i?B|B|ms|s|min|h|d)$")


_NUM = re.compile(r"^[-+$€£]?\d[\d,]*(?:\.\d+)?%?$")
# A release note of an arrival ("New in version 3.11", "available since 3.2"); "Deprecated
# since version 3.4" is not one.
VERSION_NOTE = re.compile(
    r"\b(?:new|added|introduced|available|appeared)\s+(?:in\s+(?:version|release|v)?\s*"
    # "added to SQLite version 3.15.0", "first added to SQLite with release version 3.25.0"
    r"|(?:in|to|with|by)\s+(?:(?-i:[A-Z])[\w-]*\s+){0,2}(?:with\s+)?(?:release\s+)?(?:version|release)\s+)"
    r"(\d+(?:\.\d+)+)"
    r"|(?<!deprecated\s)(?<!removed\s)(?<!changed\s)\bsince\s+(?:version\s+)?(\d+(?:\.\d+)+)",
    re.IGNORECASE,
)
# Notes of the other events a release brings, by the words a question asks them with.
_EVENT_NOTES = (
    (
        frozenset("deprecate deprecates deprecated deprecation".split()),
        re.compile(r"\bdeprecated\s+(?:since|in)\s+(?:version\s+)?(\d+(?:\.\d+)+)", re.I),
    ),
    (
        frozenset("remove removes removed removal drop drops dropped".split()),
        re.compile(r"\bremoved\s+in\s+(?:version\s+|python\s+)?(\d+(?:\.\d+)+)", re.I),
    ),
)


def release_notes(sentence: str, question: str) -> list[str]:
    """The releases the sentence's notes give for the event the question asks about: a
    deprecation or a removal when it asks one ("which release removes X" is not answered
    by "New in version 3.2"), else an arrival."""
    asked = set(words(question))
    for cue, note in _EVENT_NOTES:
        if asked & cue:
            return [m.group(1) for m in note.finditer(sentence)]
    return [m.group(1) or m.group(2) for m in VERSION_NOTE.finditer(sentence)]


_YEAR = re.compile(r"^(1\d\d\d|20\d\d)s?$")
# A release named by its number: "nwr-sdk 3.2.0", "v2.4".
_RELEASE = re.compile(r"^v?\d+\.\d+\.\d+$|^v\d+(?:\.\d+)*$")
_CODE = re.compile(r"^`[^`]+`$|^[A-Za-z_][\w]*(?:[._][\w]+)+$|^[A-Z][A-Z0-9]*_[A-Z0-9_]+$")
# Words with which a question asks for a setting's value rather than a description.
_DEFAULT_WORDS = frozenset({"default", "defaults", "otherwise"})
# A span of years is not answered by one year.
_SPANS = frozenset({"century", "centuries", "decade", "decades", "era", "period"})
# Verbs with which a question asks when a thing arrived ("when was X added").
ARRIVAL = frozenset(
    """added introduced new introduce arrive arrived appear appeared get got gain gained
    since""".split()
)


# Share of terms two sentences hold in common to be one statement in two versions.
_SAME_STATEMENT = 0.6


class _Sentence(Protocol):
    @property
    def index(self) -> int: ...
    @property
    def sentence(self) -> str: ...


_S = TypeVar("_S", bound=_Sentence)


@dataclass(frozen=True)
class Statement:
    index: int  # 1-based position of the evidence item
    sentence: str
    bound: float  # weighted share of the question's terms its scope holds
    direct: float  # ... that the sentence itself (with its label) holds
    values: tuple[str, ...]  # values of the asked type the sentence writes
    # How many of the question's names the nearest sentence naming any of them holds
    # (this one, or one before it under the same label): "New in version 3.10" after
    # "itertools.pairwise(...)" is about pairwise, not about the "itertools.accumulate"
    # two sentences earlier.
    subject: int = 0


def superseded(supports: list[_S], evidence: list[Evidence]) -> list[_S]:
    """Two documents stating the same thing with different values (a policy and its
    replacement): the older document's statement is not support."""
    drop: set[int] = set()
    for i, a in enumerate(supports):
        for b in supports[i + 1 :]:
            ea, eb = evidence[a.index - 1], evidence[b.index - 1]
            if ea.doc_id == eb.doc_id or ea.timestamp == eb.timestamp:
                continue
            # compared without their numbers: a replacement differs exactly in its values
            ta, tb = _wording(a.sentence), _wording(b.sentence)
            if ta and tb and len(ta & tb) / len(ta | tb) >= _SAME_STATEMENT:
                drop.add(a.index if ea.timestamp < eb.timestamp else b.index)
    return [s for s in supports if s.index not in drop]


def _wording(sentence: str) -> set[str]:
    return {t for t in terms(sentence) if not any(c.isdigit() for c in t)}


def asks_more_than_once(question: str) -> bool:
    """ "timeit uses a clock. when was that clock added?": the asked thing is defined by an
    earlier sentence, a hop the sentence's scope was not bound to."""
    return ask_of(question) != question or bool(re.search(r"\w[.!?]\s+\w", question.strip()))


# "that macro", "this option": a demonstrative determiner, after a word that no noun is
# ("what's that macro", "if that option is left alone"; not "the option that controls").
_DEMONSTRATIVE = re.compile(
    r"(?:^|\b(?:what|which|is|was|of|for|in|on|to|from|by|with|about|if|does|do|did|set)\s+)"
    r"(?:that|this|those|these)\s+(?!is\b|was\b|are\b|were\b)[a-z][\w-]*",
    re.IGNORECASE,
)


def refers_back(question: str) -> bool:
    """ "… a compile-time macro decides where temp tables go. what's that macro set to?":
    the ask names its thing only by pointing back at an earlier sentence, a hop whose
    name the question never writes."""
    ask = re.sub(r"[’']s\b", " is", ask_of(question))
    # (an ask that writes a setting's name asks of that setting: "… what is dirs_exist_ok
    # set to by default for this function?")
    named = any("_" in m.group(1) for m in _SETTING.finditer(ask))
    return asks_more_than_once(question) and not named and _DEMONSTRATIVE.search(ask) is not None


# A query that ends where its date would stand: "X added in", "deprecated since?".
_ENDS_ASKING_WHEN = re.compile(
    r"\b(?:added|introduced|new|available|deprecated|removed)\s+(?:in|since)\s*\??\s*$",
    re.IGNORECASE,
)


def asks_when(question: str) -> bool:
    """Does "when" ask ("when did X get Y?", "since when …?"), rather than join a clause
    ("what error do I get when …?")?"""
    return "when" in words(ask_of(question))[:2]


# "before 3.9", "prior to python 3.8", "used to", "previously": the value a change replaced
_BEFORE = re.compile(
    r"\b(?:before|prior\s+to|until|pre-?)\s*(?:python\s+|version\s+|v)?\d+(?:\.\d+)*\b"
    r"|\b(?:used\s+to|previously|originally|formerly|old(?:er)?\s+(?:default|versions?|releases?))\b",
    re.IGNORECASE,
)
# "from 10 to sys.getrecursionlimit()", "changed to PAX_FORMAT from GNU_FORMAT"
_FROM_TO = re.compile(r"\bfrom\s+(\S+(?:\s+\w+)?)\s+to\s+(\S+)", re.IGNORECASE)
_CHANGE_VERB = re.compile(
    r"\b(?:chang|rais|lower|increas|decreas|reduc|bump|switch|mov|upgrad|downgrad|grew|dropp)\w*",
    re.IGNORECASE,
)
_TO_FROM = re.compile(r"\bto\s+(\S+(?:\s+\w+)?)\s+from\s+(\S+)", re.IGNORECASE)


_VERSION = re.compile(r"^\d+(?:\.\d+)*\+?$")
_VERSION_OF = re.compile(
    r"\b([a-z][\w.+-]*)\s+(?=version\b)|\bversion\s+of\s+([a-z][\w.+-]*)", re.IGNORECASE
)


@lru_cache(maxsize=256)
def versioned_product(question: str) -> str | None:
    """The product whose version a question asks ("what python version does X need?",
    "which version of postgres"), unless it asks when."""
    if asks_when(question) or "year" in words(question):
        return None
    for m in _VERSION_OF.finditer(ask_of(question)):
        for product in (m.group(1), m.group(2)):
            low = (product or "").casefold()
            if low and low not in QUESTION_WORDS | STOPWORDS | _WHICH_VERSION:
                return low
    return None


# Words that pick a version, not a product: "the oldest version of windows", "the minimum
# version of openssl", "the latest release".
_WHICH_VERSION = frozenset(
    """oldest earliest newest latest minimum min maximum max first last current required
    supported lowest highest older newer recent minimal""".split()
)


@lru_cache(maxsize=256)
def asks_before(question: str) -> bool:
    """Does the question ask the value a change replaced ("before 3.9", "used to")?"""
    return bool(_BEFORE.search(question))


def change_of(sentence: str) -> tuple[str, str] | None:
    """(old, new) of a sentence that writes a change: "raised from A to B", "changed to B
    from A" (a range, "from 1 to 10", is no change)."""
    if not _CHANGE_VERB.search(sentence):
        return None
    if m := _FROM_TO.search(sentence):
        return m.group(1), m.group(2)
    if m := _TO_FROM.search(sentence):
        return m.group(2), m.group(1)
    return None


def _changed(values: list[str], change: tuple[str, str] | None, question: str) -> list[str]:
    """A sentence that writes a change ("raised from 10 to sys.getrecursionlimit()",
    "changed to PAX_FORMAT from GNU_FORMAT") states two values: the old one answers a
    question asking what was before, the new one any other; a value on neither side is
    not what the change states."""
    if change is None:
        return values
    side = change[0 if asks_before(question) else 1].casefold()
    # "60 seconds" is the side "60"; "sys.getrecursionlimit" the side "sys.getrecursionlimit()."
    return [v for v in values if v.casefold() in side or _lead(side) == _lead(v.casefold())]


def _lead(text: str) -> str:
    return (text.split() or [""])[0].strip(",.;:()[]\"'“”`")


def value_kind(question: str, shape: QuestionShape | None = None) -> str | None:
    """The type of value the question asks for, if it asks for one: "version" (when a
    thing arrived), "date", "number", "duration" or "literal" (a setting's default)."""
    shape = shape or analyse(question)
    toks = set(words(question))
    if shape.answer_type in {"yesno", "option", "person", "place"} or toks & _SPANS:
        return None
    if toks & {"often", "frequently"} and "how" in toks:
        return "duration"
    if shape.answer_type == "duration" and _HOW_LONG_A_THING_IS.search(question):
        return "number"
    if shape.answer_type in {"date", "number", "duration"}:
        return shape.answer_type
    if "version" in toks or _names_a_release(question) or (toks & ARRIVAL and asks_when(question)):
        return "date"
    if _ENDS_ASKING_WHEN.search(question):
        return "date"  # a search-box query: "contextlib.chdir added in"
    if toks & _DEFAULT_WORDS:
        return "literal"
    if asks_a_bound(question):
        return "number"
    if shape.answer_type == "value" and words(ask_of(question))[-1:] in ([m] for m in _MEASURED):
        return "number"  # a search-box query names the asked measure last: "X line length"
    return None


# Words after which "release" is a verb: the infinitive's "to", a subject pronoun, a modal
# or an auxiliary ("command to release stale locks", "how do i release a lock").
_BEFORE_A_VERB = frozenset(
    "to i you we they can could should would will must do does did not never".split()
)


def _names_a_release(question: str) -> bool:
    """ "which release added X", "the 2.4 release": "release" as a noun, not the verb."""
    toks = words(question)
    return any(
        t == "release" and (i == 0 or toks[i - 1] not in _BEFORE_A_VERB) for i, t in enumerate(toks)
    )


# Nouns that name a measure: a query that ends with one asks its number.
_MEASURED = frozenset("length size width height depth count limit number amount".split())


# "what's the maximum size", "the most worker processes ... can have": a bound is a number.
_BOUND_WORDS = re.compile(
    r"\b(?:maximum|minimum|max|min|upper limit|lower limit)\b"
    r"|\bthe (?:most|fewest|least)\s+(?:\w+\s+){0,2}\w+(?<!ss)(?<!ous)s\b"
    # "the smallest nonzero stack size": a superlative of a measure, not "the longest reign"
    r"|\b(?:smallest|largest|biggest|longest|shortest|highest|lowest)\s+(?:\w+\s+){0,2}?"
    r"(?:size|value|number|length|count|amount|limit|width|height|depth)\b"
    # "how long can a comment be?", "how big may the buffer get?": what is allowed
    r"|\bhow\s+(?:long|big|large|many|much)\b(?:\s+\w+)?\s+(?:can|may|could)\b"
    r"|\bhow\s+(?:many|much)\b.*\b(?:allowed|permitted)\b"
    # "how many payments fit in a batch?", "how much can a queue hold?": a capacity
    r"|\bhow\s+(?:many|much)\b.*\b(?:fit|fits|hold|holds)\b"
    r"|\b(?:smallest|largest|biggest|longest|shortest|highest|lowest)\b.*"
    r"\b(?:allowed|permitted|possible|accepted|supported)\b",
    re.IGNORECASE,
)
_BOUND_PHRASING = frozenset(
    """allow allowed permit permitted possible accepted supported maximum minimum max min limit
    most least smallest largest biggest longest shortest highest lowest""".split()
)
# "how long can the comment be?" asks a length, not a time
_HOW_LONG_A_THING_IS = re.compile(r"\bhow\s+long\s+(?:can|may|could|should|must)\b.*\bbe\b", re.I)


@lru_cache(maxsize=256)
def asks_a_bound(question: str) -> bool:
    # cached: values_in asks it of the same question for every sentence of the evidence
    return bool(_BOUND_WORDS.search(ask_of(question)))


# "at least 32,768", "a maximum of 50", "up to 8", "size > 32 KiB", "more than 5": a bound
# the value must keep, not the value a setting has.
_BOUND_BEFORE = frozenset("least most minimum maximum max min > < >= <= ≥ ≤".split())
# "must be 0 or at least 32,768": what a caller may pass, not what is used by default
_BOUND_PAIRS = frozenset(
    {("up", "to"), ("more", "than"), ("less", "than"), ("fewer", "than"), ("greater", "than")}
    | {("must", "be"), ("must", "not"), ("should", "be"), ("cannot", "exceed")}
    | {("longer", "than"), ("shorter", "than"), ("larger", "than"), ("smaller", "than")}
)


def bounded(toks: list[str], i: int) -> bool:
    """Does a bound ("at least", ">", "more than", "less than or equal to") or a requirement
    ("must be") stand just before the number at ``toks[i]``?"""
    before = [t.strip(",.;:()[]\"'").casefold() for t in toks[max(0, i - 6) : i]]
    if tuple(before[-3:]) == ("or", "equal", "to"):  # "less than or equal to 61"
        before = before[:-3]
    before = before[-3:]
    return bool(set(before) & _BOUND_BEFORE) or tuple(before[-2:]) in _BOUND_PAIRS


def counted_noun(question: str) -> str | None:
    """The noun "how many" or "the number of" counts ("how many replicas" -> "replica",
    "max number of vertices" -> "vertex"): of a compound, its
    head, the last noun before the verb ("how many component database files will …" ->
    "file")."""
    m = re.search(
        r"(?:\bhow many\s+(?:of\s+)?"
        # "the number of X", "max number of X"; not "the port number of the console"
        r"|(?:^|\b(?:the|max|maximum|min|minimum|total|largest|smallest)\s+)number\s+of\s+)"
        r"(?:(?:the|these|those|its|their)\s+)?"
        r"([\w-]+(?:\s+[\w-]+){0,3})",
        question,
        re.IGNORECASE,
    )
    if not m:
        return None
    run: list[str] = []
    for w in m.group(1).split():
        if w.casefold() in STOPWORDS:
            break
        run.append(w)
    # "how many" takes a plural: the compound's first plural is its head ("payments" of
    # "payments fit", "files" of "component database files")
    plural = [w for w in run if re.fullmatch(r"[A-Za-z-]{3,}[^s\W]s", w)]
    return stem((plural or run or m.group(1).split())[0].casefold())


def _word_after(value: str, sentence: str) -> list[str]:
    toks = [t.strip(",.;:()[]`'\"") for t in sentence.split()]
    return [toks[i + 1] for i, tok in enumerate(toks[:-1]) if tok == value]


def is_counted(word: str, counted: str) -> bool:
    """Is ``word`` the counted noun or a near synonym of it?"""
    w = stem(word.casefold())
    return w == counted or related(counted, [w])


def counting(value: str, sentence: str, counted: str) -> bool:
    """Is the word right after ``value`` the counted noun or a near synonym?"""
    return any(is_counted(w, counted) for w in _word_after(value, sentence))


def closes_sentence(value: str, sentence: str) -> bool:
    """Is ``value`` written only as the sentence's last word ("… database files to nine.")?"""
    return not _word_after(value, sentence)


def counts_another(value: str, sentence: str, counted: str) -> bool:
    """Does ``value`` count another noun than ``counted`` everywhere the sentence writes it
    ("two hex digits" when bytes are counted)? A bare number ("a default of 128") does
    not."""
    after = _word_after(value, sentence)
    return bool(after) and all(
        w.isalpha() and w.casefold() not in STOPWORDS and not is_counted(w, counted) for w in after
    )


@lru_cache(maxsize=256)
def _asked_compounds(question: str) -> tuple[str, ...]:
    """Two neighbouring content words of the question run together ("recursion limit" ->
    "recursionlimit"), as a code name writes them."""
    ws = [w.casefold() for w in re.findall(r"[A-Za-z]{3,}", question)]
    ws = [w for w in ws if w not in STOPWORDS and w not in QUESTION_WORDS]
    return tuple(a + b for a, b in zip(ws, ws[1:], strict=False))


def _names_the_asked(tok: str, question: str) -> bool:
    """Is the code name ``tok`` the asked thing itself? "defaults to sys.getrecursionlimit()"
    says where the recursion limit is kept, not what it is; "pickle.DEFAULT_PROTOCOL" is
    made of the words of "what pickle protocol is the default" alone."""
    tok = tok.strip("`")
    folded = re.sub(r"[^a-z]", "", tok.casefold())
    if any(c in folded for c in _asked_compounds(question)):
        return True
    parts = [stem(p) for p in re.split(r"[._\-]+", tok.casefold()) if p]
    return len(parts) >= 2 and set(parts) <= {stem(w) for w in words(question)}


@lru_cache(maxsize=256)
def _numbered_words(question: str) -> frozenset[str]:
    """Words the question writes a number after ("python 3.11", "protocol 4")."""
    toks = [t.strip(",.;:()?!\"'").casefold() for t in question.split()]
    return frozenset(a for a, b in zip(toks, toks[1:], strict=False) if b and _NUM.match(b))


_CONDITION = frozenset({"if", "unless"})


def in_condition(raw: list[str]) -> list[bool]:
    """For each whitespace token, whether it stands inside a condition ("if max_workers is 0
    or less, ...", "unless the option is given"): from "if"/"unless" up to its comma."""
    flags: list[bool] = []
    conditional = False
    for i, tok in enumerate(raw):
        closed = bool(i) and raw[i - 1].endswith((",", ";"))
        low = tok.strip(",.;:()[]\"'“”").casefold()
        conditional = low in _CONDITION or (conditional and not closed)
        flags.append(conditional)
    return flags


_COMPACT_DURATION = re.compile(r"^\d+(?:\.\d+)?(?:ms|s|m|h|d)$")


def designated(toks: list[str], i: int, question: str) -> bool:
    """Does the word before the number at ``toks[i]`` make it a release's designation, not
    a quantity: "version 3.2", a name ("Linux 3.17", "Python 3.4"; not the sentence's
    first word), or a word the question itself writes a number after ("what protocol does
    python 3.11 use" is not answered by "python 3.4")?"""
    if i < 1:
        return False
    prev = toks[i - 1].strip(",.;:()[]\"'“”")
    low = prev.casefold()
    named = i > 1 and prev[:1].isupper() and prev.isalpha()
    return named or low == "version" or low in _numbered_words(question)


def values_in(sentence: str, kind: str, question: str) -> tuple[str, ...]:
    """Values of ``kind`` the sentence writes that the question does not (nor a code name
    of the asked thing itself)."""
    asked = {w.casefold() for w in question.split()} | set(words(question))
    # a question about a setting's value is not answered by a bound it must keep
    bounds = asks_a_bound(question)
    out: list[str] = []
    if kind == "date":
        # A release note dates a thing in documentation ("New in version 3.11").
        out = release_notes(sentence, question)
    owned = _owned_defaults(sentence) if kind in {"literal", "number", "duration"} else []
    if owned:
        # "Optional argument n (default 3) ... cutoff (default 0.6)": each default is its
        # own name's; the asked name's, or none of them
        q_words = expand_terms(question) | {stem(w) for w in words(question)}
        return tuple(
            v
            for name, v in owned
            if {stem(p) for p in re.split(r"[._]", name.casefold()) if p} <= q_words
        )
    if kind in {"number", "duration"} and _DEFAULT_FIELD.search(sentence):
        # a reference entry's "Default:" field ("Default: | LDAPRetries 3") states the
        # entry's value after its name, as its syntax writes it: a number there is the
        # value, not a release's designation ("Python 3")
        said = default_said(sentence, question)
        if said and said[:1].isdigit():
            return (said,)
    change = change_of(sentence)
    if (
        kind != "date"
        and change is None
        and asks_before(question) != bool(_BEFORE.search(sentence))
    ):
        # "before 3.8, what format …" is not answered by what is so now ("This is
        # currently PAX_FORMAT."): only by a change or what a sentence says was before;
        # and what was before ("Prior to version 1.19.10, the default value was 100.") is
        # not what is so now
        return ()
    raw = sentence.split()
    toks = [t.strip(",.;:()[]\"'“”") for t in raw]
    counted = counted_noun(question)  # "how many bytes": the number alone
    # Inside a condition ("unless the QUOTE_NONNUMERIC option is given", "if max_workers
    # is 0 or less, ..."), up to its comma: what must hold, not what the sentence states.
    # A default may be written in an "if" clause ("If exist_ok is False (the default)").
    condition = in_condition(raw)
    product = versioned_product(question) if kind == "date" else None
    for i, tok in enumerate(toks):
        low = tok.casefold()
        conditional = condition[i]
        # a value marked as the default counts even inside a condition ("If exist_ok is
        # False (the default)", "if timeout is None (the default), block …")
        if not tok or low in asked or (conditional and not _marked_default(raw, i)):
            continue
        after = toks[i + 1].casefold() if i + 1 < len(toks) else ""
        named = designated(toks, i, question)
        is_num = (bool(_NUM.match(tok)) or low in NUMBER_WORDS) and (bounds or not bounded(toks, i))
        numeric = bool(_NUM.match(tok)) or low in NUMBER_WORDS
        unit_in = bool(_NUM_WITH_UNIT.match(tok)) and (bounds or not bounded(toks, i))
        measured = not counted and (unit_in or stem(after) in _QUANTITY_UNITS)
        # "timeout is None (the default)": no bound is a duration's and a number's value too
        marks = kind == "literal" or (
            kind in {"number", "duration"} and (numeric or low in _LITERALS)
        )
        if marks and _marked_default(raw, i):
            # "A value of zero (the default) disables the timeout", "off (the default)":
            # the value the text itself marks as the default, in whatever form it is written
            out.append(tok.strip("`"))
        elif kind == "date":
            if _RELEASE.match(tok) or (_YEAR.match(tok) and not product):
                out.append(tok)  # a version asked is no year ("in March 2024")
            elif product and i and toks[i - 1].casefold() == product and _VERSION.match(tok):
                out.append(tok.rstrip("+"))  # "what python version": "Python 3.11 or newer"
        elif kind == "duration":
            if is_num and stem(after) in _TIME_UNITS:
                out.append(f"{tok} {toks[i + 1]}")
            elif _COMPACT_DURATION.match(tok.strip("`")) and (bounds or not bounded(toks, i)):
                out.append(tok.strip("`"))  # "75s", "500ms", "1h" as configuration writes them
        elif kind in {"number", "literal"} and measured and not named and (is_num or unit_in):
            # a quantity is its number with its unit: "4MB", "four megabytes", "64 kB"
            out.append(tok if unit_in else f"{tok} {toks[i + 1]}")
        elif kind == "number":
            if is_num and not named and not _YEAR.match(tok):
                out.append(tok)
        elif kind == "literal":
            if (is_num and not named and _NUM.match(tok)) or _literal_word(tok, raw, i):
                out.append(tok.strip("`"))
            elif _CODE.match(tok) and not _names_the_asked(tok, question):
                out.append(tok.strip("`"))
    if kind == "duration" and not out and {"often", "frequently"} & set(words(question)):
        # "how often": "it ran hourly", "runs nightly"; not "every day" for "these days"
        out += [f for f in frequencies(sentence) if (terms(f) or [""])[-1] not in terms(question)]
    if kind in {"duration", "number"} and not out and (m := _NO_BOUND.search(sentence)):
        out.append(m.group(0))  # "the socket module has no timeout", "blocks indefinitely"
    if kind == "literal" and not out and (said := default_said(sentence, question)):
        out.append(said)  # "The default is WARNING.", "The default value is localhost, which …"
    # "four megabytes (4MB)": one quantity written twice is one value
    seen: set[float] = set()
    kept: list[str] = []
    for v in _changed(list(dict.fromkeys(out)), change, question):
        q = quantity(v)
        if q is None or q not in seen:
            kept.append(v)
        if q is not None:
            seen.add(q)
    return tuple(kept)


# "The default is WARNING.", "The default value for this parameter is "$user", public.",
# "It defaults to on": what a sentence says the default is, up to the clause's end.
_DEFAULT_IS = re.compile(
    r"\b(?:(?:the\s+)?default(?:\s+[\w-]+){0,4}?\s+is"
    r"|defaults\s+to)\s+(?:typically\s+|usually\s+|normally\s+)?"
    r"(.+?)\s*(?:[;.]\s|[;.]?$|,\s*(?:which|but|so|meaning|unless|if|and\s+(?:can|may|is))\b)",
    re.IGNORECASE,
)
_SAID_MAX_WORDS = 6


# A reference entry's field line: "Default: keepalive_timeout 75s;", "Default value: 8".
_DEFAULT_FIELD = re.compile(
    r"^[\s*_|]*defaults?(?:\s+value)?[*_]*\s*[:|=](?:\s*\|)?\s*[*_`]*(.+?)[*_`]*\s*;?\s*$",
    re.IGNORECASE | re.MULTILINE,
)


# Inline, as a list of properties writes it: "(higher is slower, default: 5, valid: 4 to
# 17)", "default=30".
_DEFAULT_INLINE = re.compile(r"\bdefault\s*[:=]\s*`?([^,;()`\s][^,;()`]*?)`?\s*(?:[,;)]|$)", re.I)


def default_said(sentence: str, question: str) -> str | None:
    m = (
        _DEFAULT_IS.search(sentence)
        or _DEFAULT_FIELD.search(sentence)
        or _DEFAULT_INLINE.search(sentence)
    )
    if m is None:
        return None
    said = m.group(1).strip().strip("`")
    toks = said.split()
    if m.re is _DEFAULT_FIELD and len(toks) > 1 and (_CODE.match(toks[0]) or camel_case(toks[0])):
        # the entry's name repeated before its value, as a directive's syntax writes it
        said = " ".join(toks[1:])
    first = said.split()[0].casefold() if said else ""
    if len(said.split()) > _SAID_MAX_WORDS or (len(first) > 3 and first.endswith("ed")):
        return None  # a clause, not a value ("is used when …")
    if first in {"to", "that", "not", "set", "used", "determined"}:
        return None  # "the default behaviour is to …", "the default is not …"
    if set(words(said)) <= set(words(question)) or said[:1] in "(":
        return None
    if _names_the_asked(said.split()[0].strip(",.;:()"), question):
        return None  # "defaults to sys.getrecursionlimit()": where it is kept, not what
    return said


# A measure written as its absence: "has no timeout", "there is no limit", "waits forever".
_NO_BOUND = re.compile(
    r"\bno\s+(?:time\s+)?(?:timeout|time-out|limit)\b|\b(?:indefinitely|forever)\b",
    re.IGNORECASE,
)


# "n (default 3)", "cutoff (default: 0.6)", "timeout (defaults to 10 seconds)": the value is
# the default of the name written right before the bracket.
_OWNED_DEFAULT = re.compile(
    r"([A-Za-z_][\w.]*)\s+\((?:the\s+)?defaults?(?:\s+(?:is|to))?\s*[:=]?\s*([^()\s][^()]*)\)",
    re.IGNORECASE,
)


def _owned_defaults(sentence: str) -> list[tuple[str, str]]:
    return [
        (m.group(1), m.group(2).strip().strip("`'\"")) for m in _OWNED_DEFAULT.finditer(sentence)
    ]


_DEFAULT_MARK = re.compile(r"^\((?:the\s+)?default\)", re.IGNORECASE)


def _marked_default(raw: list[str], i: int) -> bool:
    """Is the word at ``raw[i]`` followed by "(the default)" or "(default)"?"""
    return bool(_DEFAULT_MARK.match(" ".join(raw[i + 1 : i + 3])))


# Words after which a lowercase true / false / none is a value ("defaults to false",
# "enabled: true"), not an adjective in prose ("hold true", "a true value").
_VALUE_AFTER = frozenset("is are was be to default defaults".split())


def _literal_word(tok: str, raw: list[str], i: int) -> bool:
    low = tok.casefold()
    if low not in _LITERALS:
        return False
    if tok[:1].isupper() or raw[i].startswith("`"):
        return True  # True, None, `false`: written as the value itself
    before = raw[i - 1] if i else ""
    return before.endswith((":", "=")) or before.casefold() in _VALUE_AFTER


def _blocks(text: str) -> list[str]:
    return [b for b in _BLOCK.split(text) if b.strip()]


def _is_label(block: str) -> bool:
    line = block.strip("\n")
    if "\n" in line or line[:1].isspace():
        return False
    line = line.strip()
    return (
        0 < len(line.split()) <= _LABEL_MAX_WORDS
        and not line.endswith(_CLAUSE_END)
        and not line.startswith(("#", "-", "*", ">", "|"))
        or line.startswith("#")
    )


def scoped(text: str, label: str = "") -> list[tuple[str, str, list[str]]]:
    """(sentence, label, scope) for each sentence of a passage: the label it sits under
    (``label``, the entry it continues, or "" when the passage opens mid-entry) and the
    paragraphs from that label (or the passage's start) to the sentence's own, nearest
    first."""
    out: list[tuple[str, str, list[str]]] = []
    blocks = _blocks(text)
    start = 0
    for i, block in enumerate(blocks):
        if _is_label(block):
            start, label = i + 1, block.strip().lstrip("#").strip()
            continue
        scope = blocks[start : i + 1][::-1]
        out.extend((s, label, scope) for s in _statements_of(block))
    return out


# Operating systems a question may restrict a value to ("on linux", "on macOS"), each with
# the names documentation writes it under.
_PLATFORMS = {
    "linux": {"linux"},
    "windows": {"window"},
    "macos": {"maco", "mac", "darwin", "osx"},
    "mac": {"maco", "mac", "darwin", "osx"},
    "unix": {"unix", "posix"},
    "freebsd": {"freebsd", "bsd"},
    "android": {"android"},
    "ios": {"ios"},
}
_ON_PLATFORM = re.compile(rf"\bon\s+({'|'.join(_PLATFORMS)})\b", re.IGNORECASE)


def asked_platform(question: str) -> set[str]:
    """The terms of the platform a question restricts its value to ("on linux" ->
    {"linux"}), empty when it names none: a value stated for no platform in particular
    does not answer "how much stack does a new thread get on linux?"."""
    m = _ON_PLATFORM.search(question)
    return set(_PLATFORMS[m.group(1).casefold()]) if m else set()


def carried_labels(evidence: list[Evidence]) -> list[str]:
    """Per passage, the label of the entry it continues: a passage cut from the middle of
    an entry ("New in version 3.11." after the entry's example) sits under the label in
    force where it begins in the passage just before it in the same document, when that
    one is in the evidence: the last label of that passage, or, where the two overlap, the
    last label before the overlap (a label inside the overlap is read in this passage)."""
    out: list[str] = []
    for e in evidence:
        start, label = e.locator.char_start, ""
        before = [
            p
            for p in evidence
            if start is not None
            and p.doc_id == e.doc_id
            and p.locator.char_start is not None
            and p.locator.char_end is not None
            and p.locator.char_start < start <= p.locator.char_end + _CHUNK_GAP
        ]
        if before and start is not None:
            prev = max(before, key=lambda p: p.locator.char_start or 0)
            labels = [
                b.strip().lstrip("#").strip()
                for b in _whole_blocks(prev.text, start - (prev.locator.char_start or 0))
                if _is_label(b)
            ]
            label = labels[-1] if labels else ""
        out.append(label)
    return out


# Characters a chunker may leave between two neighbouring passages (a paragraph break).
_CHUNK_GAP = 2


def _whole_blocks(text: str, end: int) -> list[str]:
    """The blocks of ``text`` that end by character ``end`` (a block cut there is left
    out: its head is no label)."""
    out: list[str] = []
    pos = 0
    for block in _blocks(text):
        at = text.find(block, pos)
        pos = at + len(block) if at >= 0 else pos
        if at >= 0 and pos <= end:
            out.append(block)
    return out


_ITEM = re.compile(r"^\s*(?:[-*•+]\s|\d+[.)]\s|\|)")
# Reference text starts a sentence with a lowercase name: "... in version 3.2.
# itertools.pairwise(iterable) Return ...".
_CODE_START = re.compile(r"(?<=[a-z0-9]\.)\s+(?=[a-z_]\w*(?:\.\w+)*\()")


def _statements_of(block: str) -> list[str]:
    """A paragraph's sentences; a list or a table says one thing per item or row."""
    out: list[str] = []
    for sent in (part for whole in sentences(block) for part in _CODE_START.split(whole)):
        lines = [ln for ln in sent.splitlines() if ln.strip()]
        items = sum(bool(_ITEM.match(ln)) or " | " in ln for ln in lines)
        if len(lines) > 1 and items >= len(lines) - 1:
            out.extend(_ITEM.sub("", ln).strip(" |") for ln in lines)
        else:
            out.append(sent)
    return out


# "New in version 3.6: Added the fold argument.": a release note, and what it is about.
_RELEASE_NOTE = re.compile(
    r"^\W*(?:new|added|changed|deprecated|removed)\s+in\s+(?:version\s+)?\d+(?:\.\d+)*\W*(.*)",
    re.IGNORECASE | re.DOTALL,
)


def _notes_the_subject(
    sentence: str, need: list[str], keys: list[str], reach: dict[str, float]
) -> bool:
    """A release note dates what it is about: the thing its clause names ("Added the fold
    argument"), else - a bare "New in version 3.7." - the entry it closes, so the
    question's names must stand in that entry, not pages away."""
    m = _RELEASE_NOTE.match(sentence)
    if m is None:
        return True
    about = m.group(1).strip()
    if about:
        return bool(expand_terms(about) & set(need))
    return all(reach.get(k, 0.0) >= _NEAR[1] for k in keys)


# The code name a reference label opens with: "Repr.maxlevel", "class asyncio.TaskGroup",
# "shutil.copytree(src, dst, ...)".
# a name with one of these endings names a file, not code: "robots.txt", "setup.cfg"
_FILE_SUFFIXES = frozenset("txt cfg ini toml json yaml yml md rst html xml csv log conf py".split())
_LABEL_CODE = re.compile(r"^(?:[a-z]+\s+)?([A-Za-z_]\w*(?:\.\w+)+|[a-z]+_\w+)")


def entry_code(label: str) -> str | None:
    """The code name an entry's label documents: "class asyncio.TaskGroup" ->
    "asyncio.TaskGroup", "importlib.resources.files(package)" -> "importlib.resources.files";
    None for a label that is no code entry ("Using importlib.metadata")."""
    m = _LABEL_CODE.match(label.strip())
    return m.group(1) if m else None


def labels_another(label: str, question: str) -> bool:
    """Is ``label`` the entry of a code name the question neither names nor describes?
    Under "Repr.maxlevel", "The default is 6." is the default of Repr.maxlevel; a question
    that names no code ("python's default recursion limit") is answered by it only if its
    words name a part of that code name ("level" of maxlevel), as "shared buffers" does
    shared_buffers."""
    m = _LABEL_CODE.match(label.strip())
    if m is None:
        return False
    named = [n.casefold() for n in code_names(question)]
    low, own = label.casefold(), m.group(1).casefold()
    # "queue.get" is not answered under "Lock.acquire(blocking=True, timeout=-1)"; a
    # parameter is named in its function's signature ("dirs_exist_ok=False")
    if any(n in low or n.rsplit(".", 1)[-1] == own.rsplit(".", 1)[-1] for n in named):
        return False
    parts = {p for p in re.split(r"[._]", own) if len(p) >= 3}
    asked = expand_terms(question)
    # The question's words describe the entry: a part written whole ("shared", "buffers")
    # or inside a word ("mem" of "memory", "level" of "maxlevel", "site" of "Sitemap"). A
    # question naming other code ("robots.txt") may still describe the entry so; one that
    # names its entry's code ("queue.get") is not answered under another's.
    described = any(
        stem(p) in asked or any(a in p or p in a for a in asked if len(a) >= 4) for p in parts
    )
    return not described or any("." in n and n.split(".")[-1] not in _FILE_SUFFIXES for n in named)


def expand_terms(text: str) -> set[str]:
    """The terms of ``text`` with the parts of its identifiers (``max_workers``,
    ``KeepAliveTimeout``)."""
    return _expand(set(terms(text))) | identifier_parts(text)


def _expand(ts: set[str]) -> set[str]:
    """Terms with the parts of identifiers: max_workers also says "max" and "worker"."""
    out = set(ts)
    for t in ts:
        if "_" in t or "." in t:
            out.update(stem(p) for p in re.split(r"[_.]", t) if len(p) >= 3)
    return out


def _weights(q_terms: list[str], evidence: list[Evidence]) -> dict[str, float]:
    """Rarer in the evidence at hand weighs more: a word every passage shares says little."""
    df: Counter[str] = Counter()
    for e in evidence:
        have = expand_terms(f"{e.title} {e.text}")
        df.update(t for t in q_terms if t in have)
    n = max(len(evidence), 1)
    return {t: math.log(1 + n / (1 + df[t])) + 0.1 for t in q_terms}


def _count_keys(text: str, keys: list[str]) -> int:
    have = expand_terms(text)
    return sum(k in have for k in keys)


# A parameter list's item: "port (int) – The TCP port.", "timeout: seconds to wait".
_PARAMETER_ITEM = re.compile(
    r"^[ \t*•-]*`?([A-Za-z_]\w*)`?[ \t]*(?:\([^)]{1,40}\))?[ \t]*(?:[–—:]|[ \t]-)[ \t]+(?=\S)",
    re.MULTILINE,
)


def _another_parameter(paragraph: str, items: set[str], asked: str) -> bool:
    """Is ``paragraph`` a parameter item ("port (int) – … Defaults to 5432.") while the
    question names another parameter of the same list ("the default host")?"""
    m = _PARAMETER_ITEM.match(paragraph)
    if m is None:
        return False
    named = {i for i in items if _names_parameter(i, asked)}
    return bool(named) and m.group(1).casefold() not in named


def _names_parameter(name: str, question: str) -> bool:
    """Does the question name parameter ``name`` as one ("the default host", "sslmode
    default", "nbytes"), not as a word of its own ("wait on a locked database")?"""
    if "_" in name:
        return name in question.casefold()
    n = re.escape(name)
    return bool(re.search(rf"\bdefaults?\s+(?:\w+\s+)?{n}\b|\b{n}\s+defaults?\b", question, re.I))


def statements(
    question: str, evidence: list[Evidence], unasked: frozenset[str] = frozenset()
) -> list[Statement]:
    """Sentences whose scope binds the question's names and most of its terms, best first;
    for a question asking a value, only sentences that write one. ``unasked``: terms left
    out of the binding (the asker's situation, when nothing binds it too)."""
    shape = analyse(question)
    kind = value_kind(question, shape)
    parts = question_parts(question)
    # Words naming the answer's type ("which python version", "what port") are met by the
    # value itself, and a release note says "new in" for "added": they weigh only as a
    # tie-break.
    typed = set(parts.answer_type) | (ARRIVAL | {"version", "release"} if kind == "date" else set())
    if asks_a_bound(question):
        # "how many connections are allowed?": the bound is asked, in whatever words the
        # entry writes it ("the maximum number of concurrent connections")
        typed |= _BOUND_PHRASING
    counted = counted_noun(question) if kind == "number" else None
    q_terms = [t for t in dict.fromkeys(terms(question)) if t not in QUESTION_WORDS]
    need = [t for t in q_terms if t not in typed and t not in unasked]
    if not need:
        return []
    weight = _weights(q_terms, evidence)
    total = sum(weight[t] for t in need)
    contexts, linked = chain_context(evidence, question)
    found: list[tuple[Statement, set[str]]] = []
    carried = carried_labels(evidence)
    names_code = bool(code_names(question))
    platform = asked_platform(question)
    items = [{m.group(1).casefold() for m in _PARAMETER_ITEM.finditer(e.text)} for e in evidence]
    for n, e in enumerate(evidence, start=1):
        frame = expand_terms(f"{e.title} {heading_of(e)}")
        # Names the question holds may be met on the page a hop came from.
        chain = contexts[n - 1] if e.id in linked else set()
        held, under = 0, None
        read = scoped(e.text, carried[n - 1])
        # An entry speaks of one thing throughout: what its later paragraphs say (a
        # directive's description under its "Default:" line) is in each sentence's reach.
        entries: list[set[str]] = []
        for i, (_, label, _) in enumerate(read):
            if i == 0 or label != read[i - 1][1]:
                entries.append(set())
            if label:  # a passage under no label is no entry: its sentences stay apart
                entries[-1] |= expand_terms(read[i][0])
        entry = -1
        for i, (sent, label, scope) in enumerate(read):
            if i == 0 or label != read[i - 1][1]:
                entry += 1
            if label != under:
                under, held = label, _count_keys(label, parts.keys)
            held = _count_keys(sent, parts.keys) or held
            if instruction_like(sent) or is_listing(sent):
                continue
            own = (
                _expand(set(terms(f"{label} {sent}")) | frame)
                | identifier_parts(f"{label} {sent}")
                | acronyms(label)
                | acronyms(sent)
            )
            # How near each term is: in the sentence, its label or its page's frame; in
            # its paragraph; in an earlier paragraph of its entry or a page a hop came from.
            reach = {t: _FAR for t in expand_terms(" ".join(scope[2:])) | chain | entries[entry]}
            for block, factor in reversed(list(zip(scope, _NEAR, strict=False))):
                reach.update({t: factor for t in expand_terms(block)})
            reach.update({t: 1.0 for t in own})
            if not all(k in reach for k in parts.keys):
                continue
            vals = values_in(sent, kind, question) if kind else ()
            if counted:  # "how many bytes" is not answered by "two hex digits"
                vals = tuple(v for v in vals if not counts_another(v, sent, counted))
            if kind and not vals:
                continue
            if (kind or names_code) and labels_another(label, question):
                continue  # another named thing's entry
            if kind and _another_parameter(scope[0] if scope else sent, items[n - 1], question):
                continue  # "port (int) – … Defaults to 5432." is no default of host
            if kind and platform and not platform & reach.keys():
                continue  # "on linux" asked, and nothing in its scope says which platform
            if kind == "date" and not _notes_the_subject(sent, need, parts.keys, reach):
                continue
            if not set(terms(sent)) - set(q_terms) and not vals:
                continue  # says nothing the question does not
            bound = sum(weight[t] * reach.get(t, 0.0) for t in need) / total
            direct = sum(weight[t] for t in q_terms if t in own) / total
            if not direct and not _RELEASE_NOTE.match(sent):
                # shares no word with the question: bound by its context alone (a bare
                # release note is judged by the entry it closes, above)
                continue
            found.append((Statement(n, sent, bound, direct, vals, held), set(reach)))
    found.sort(key=lambda x: (-x[0].bound, -x[0].direct, -x[0].subject, x[0].index))
    # Paraphrase for the words the best candidates miss ("locked" ... "giving up").
    top = found[:_PARAPHRASE_CANDIDATES]

    def gap(st: Statement, near: set[str]) -> list[str]:
        """The words worth a paraphrase: this candidate misses them, and could pass
        MIN_BOUND if all were met (else its words need no vectors)."""
        unmet = [t for t in need if t not in near]
        reach = st.bound + _FAR * sum(weight[t] for t in unmet) / total
        return unmet if reach >= MIN_BOUND else []

    gaps = [gap(st, near) for st, near in top]
    open_ = [near for (_, near), unmet in zip(top, gaps, strict=True) if unmet]
    if open_:
        prefetch([*{t for unmet in gaps for t in unmet}, *set().union(*open_)])
    out: list[Statement] = []
    for (st, near), unmet in zip(top, gaps, strict=True):
        # a word met only by its paraphrase counts as one met further away
        extra = _FAR * sum(weight[t] for t in unmet if related(t, near))
        out.append(
            Statement(
                st.index, st.sentence, st.bound + extra / total, st.direct, st.values, st.subject
            )
        )
    out = [s for s in out if s.bound >= MIN_BOUND]
    out.sort(key=lambda s: (-round(s.bound, 6), -s.direct, -s.subject, s.index))
    if not out and not unasked and kind and parts.keys and parts.situation - set(parts.keys):
        # the sentences before the ask told the asker's situation ("our directory server
        # times out every now and then."); a value stated without retelling it still
        # answers, in an entry that names what the question names (a value: who or what
        # the situation leads to is read through it, "Ticket X reports Y. Who leads …?")
        retold = statements(question, evidence, parts.situation - set(parts.keys))
        return [st for st in retold if st.subject]
    return out


# A setting or parameter the question names, and the value a text assigns it: a
# signature's "dirs_exist_ok=False", a config file's "port = 5432".
_SETTING = re.compile(r"`?\b([A-Za-z_]\w*(?:[._]\w+)+|[A-Za-z]+_\w*)\b`?")
_ASSIGNED = r"(?<![\w.]){name}\s*=\s*([-+]?[\w.'\"]+)"
# Values a signature gives to mean "not given": what is then used is decided elsewhere
# ("port=0": "If port is zero, the standard SMTP-over-SSL port (465) is used").
_SENTINELS = frozenset({"None", "null", "nil", "undefined", "NULL", "...", "", "0", "-1"})
# A metavariable standing for the value a reader chooses: "=N", "=X", "=NNN", "=<size>".
_PLACEHOLDER = re.compile(r"[A-Z]|([A-Z])\1+|<[^<>]*>|\.\.\.")
_ARGUMENTS = re.compile(r"([\w.]+)\(([^()]*=[^()]*)\)")  # a signature: name, arguments


# A named constant ("IMAP4_SSL_PORT", "DEFAULT_FORMAT"): it refers to a value.
_NAMED_CONSTANT = re.compile(r"(?:\w+\.)*[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def assigned_value(question: str, evidence: list[Evidence]) -> tuple[int, str, str] | None:
    """(evidence n, line, value) where a passage assigns a value to a setting the question
    names (its last dotted part: "os.makedirs exist_ok" names exist_ok), when every such
    assignment in the evidence agrees. A plain word the question writes counts as a name
    where a signature of the code it names assigns it: "default sslmode for connect" reads
    connect(host, port=5432, sslmode='prefer'), not close(timeout=None)."""
    names = {m.group(1).rsplit(".", 1)[-1] for m in _SETTING.finditer(question)}
    names = {x for x in names if "_" in x}
    named = {c.rsplit(".", 1)[-1].casefold() for c in code_names(question)}
    signatures = [
        (n, m.group(0))
        for n, e in enumerate(evidence, start=1)
        for m in _ARGUMENTS.finditer(e.text)
        if not named or m.group(1).rsplit(".", 1)[-1].casefold() in named
    ]
    plain = {
        w
        for w in dict.fromkeys(words(question))
        if len(w) > 2
        and w not in STOPWORDS
        and w not in names
        and any(re.search(_ASSIGNED.format(name=re.escape(w)), sig) for _, sig in signatures)
    }
    seen: dict[str, tuple[int, str]] = {}

    def read(name: str, n: int, line: str) -> None:
        for m in re.finditer(_ASSIGNED.format(name=re.escape(name)), line):
            value = m.group(1).strip("'\"")
            if name in plain and value in _SENTINELS:
                # "protocol=None", "port=0": not given, and then decided elsewhere
                continue
            if _PLACEHOLDER.fullmatch(value):
                continue  # "SQLITE_MAX_SCHEMA_RETRY=N": the form of a setting, not a value
            if _NAMED_CONSTANT.fullmatch(value) and name.casefold() in value.casefold().split("_"):
                # "port=IMAP4_SSL_PORT": a constant named for the setting holds its value,
                # stated elsewhere; an enum-like constant is the value ("compression=ZIP_STORED")
                continue
            seen.setdefault(value, (n, line.strip()))

    for name in names:
        for n, e in enumerate(evidence, start=1):
            for line in e.text.splitlines():
                read(name, n, line)
    for name in plain:
        for n, sig in signatures:
            read(name, n, sig)
    if len(seen) != 1:
        return None
    value, (n, line) = next(iter(seen.items()))
    return n, line, value


_ROW = re.compile(r"^\s*\|?(.+?)\|?\s*$")
_RULE = re.compile(r"^[\s|:-]+$")


def _cells(line: str) -> list[str]:
    m = _ROW.match(line)
    return [c.strip() for c in m.group(1).split("|")] if m else []


def tables(evidence: list[Evidence]) -> list[tuple[int, list[str], list[list[str]]]]:
    """(evidence n, header cells, row cells) of each pipe table the passages hold."""
    out: list[tuple[int, list[str], list[list[str]]]] = []
    for n, e in enumerate(evidence, start=1):
        for block in _blocks(e.text):
            lines = [ln for ln in block.splitlines() if ln.strip()]
            if len(lines) < 2 or not all("|" in ln for ln in lines):
                continue
            rows = [_cells(ln) for ln in lines[1:] if not _RULE.match(ln)]
            out.append((n, _cells(lines[0]), rows))
    return out


def row_text(header: list[str], row: list[str]) -> str:
    """A table row as the table says it: "Level: L4; ...; Midpoint: €77,000"."""
    return "; ".join(f"{h}: {c}" for h, c in zip(header, row, strict=True) if c)


def table_value(question: str, evidence: list[Evidence]) -> tuple[int, str, str] | None:
    """(evidence n, the row, the cell) where a table answers: the row a name of the question picks
    out ("L4") and the column its header names ("Midpoint"). When several headers are
    named ("salary band midpoint"), the compound's head - its last noun - is the column."""
    parts = question_parts(question)
    if not parts.keys:
        return None
    order = {t: i for i, t in enumerate(terms(question))}
    kind = value_kind(question)
    found: dict[str, tuple[int, str]] = {}
    for n, header, rows in tables(evidence):
        # a column is named by a question word in its header (not the row's name)
        named = {
            c: max(order[t] for t in terms(h) if t in order)
            for c, h in enumerate(header)
            if any(t in order and t not in parts.keys for t in terms(h))
        }
        for row in rows:
            if len(row) != len(header):
                continue
            picked = [c for c, cell in enumerate(row) if set(terms(cell)) & set(parts.keys)]
            cols = [c for c in named if c not in picked]
            if not picked or not cols:
                continue
            last = max(named[c] for c in cols)
            heads = [c for c in cols if named[c] == last]
            cell = row[heads[0]] if len(heads) == 1 else ""
            # a question asking a version or a number is not answered by a cell of words
            if cell and (kind is None or kind == "literal" or values_in(cell, kind, question)):
                found.setdefault(cell, (n, row_text(header, row)))
    if len(found) != 1:
        return None
    value, (n, line) = next(iter(found.items()))
    return n, line, value
