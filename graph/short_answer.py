"""The asked fact alone, read off the evidence without an LLM, or nothing.

Precision first: a wrong value stated as the answer is worse than none, so every path
returns None unless the evidence determines one value.

- a choice ("which came first, X or Y?") is decided by the compared attribute read from
  each option's own passages (or from the passage its dependent description points at:
  "the film whose director was born first" reads the director's page);
- a yes/no by the attribute both subjects carry ("same nationality", "both magazines");
- a wh-question by the one value of the asked type (a date, a number, a name, a place)
  that stands right after the question's cue (its event or outermost relation: "born
  in", "the spouse of") on the page where the chain closes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from graph.agent_answer import agent_answer
from graph.class_answer import DEFINING, LISTED, class_answer
from graph.fields import asks_a_name, named_answer
from graph.lexicon import related
from graph.measures import group_size, length_m, per_year, quantity, span_s
from graph.question import (
    DESCRIBED,
    EVENTS,
    QuestionShape,
    analyse,
    ask_of,
    options_terms,
    paired_names,
)
from graph.relation_answer import relation_answer
from graph.statements import (
    ARRIVAL,
    VERSION_NOTE,
    Statement,
    asks_a_bound,
    asks_more_than_once,
    asks_when,
    assigned_value,
    bounded,
    carried_labels,
    change_of,
    closes_sentence,
    counted_noun,
    counting,
    default_said,
    designated,
    entry_code,
    in_condition,
    is_counted,
    refers_back,
    row_text,
    scoped,
    statements,
    superseded,
    table_value,
    tables,
    value_kind,
)
from graph.support import Support, answer_type, chain_context, heading_of, question_parts
from graph.text import (
    HONORIFICS,
    NUMBER_WORDS,
    STOPWORDS,
    identifier_parts,
    key_terms,
    sentences,
    stem,
    terms,
    words,
)
from tools.catalog import SEARCH_KNOWLEDGE
from tools.evidence import Evidence, Provenance
from tools.titles import base_title, code_names, has_words, identifiers, whole_word_spans

_MONTHS = {
    m: i
    for i, m in enumerate(
        "january february march april may june july august september october november "
        "december".split(),
        start=1,
    )
}
_MON = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_DATE = re.compile(
    rf"\b(?:(?P<d1>\d{{1,2}})\s+(?P<m1>{_MON})\s+(?P<y1>\d{{3,4}})"
    rf"|(?P<m2>{_MON})\s+(?P<d2>\d{{1,2}}),?\s+(?P<y2>\d{{3,4}})"
    rf"|(?P<m3>{_MON})\s+(?P<y3>\d{{4}})"
    rf"|(?P<y4>(?:1[0-9]|20)\d{{2}}))\b"
)


@dataclass
class Found:
    value: str | None  # None: the supporting sentences are found, the value is not determined
    support: list[tuple[int, str]] = field(default_factory=list)  # (evidence n, sentence)


# -- dates and numbers ---------------------------------------------------------------


@dataclass(frozen=True)
class DateValue:
    year: int
    month: int = 0
    day: int = 0

    def key(self) -> tuple[int, int, int]:
        return (self.year, self.month, self.day)


def dates_in(text: str) -> list[tuple[int, DateValue]]:
    """(position, date) for every date written in ``text``."""
    out: list[tuple[int, DateValue]] = []
    for m in _DATE.finditer(text):
        g = m.groupdict()
        y = g["y1"] or g["y2"] or g["y3"] or g["y4"]
        mon = g["m1"] or g["m2"] or g["m3"]
        d = g["d1"] or g["d2"]
        out.append(
            (m.start(), DateValue(int(y), _MONTHS[mon.casefold()] if mon else 0, int(d or 0)))
        )
    return out


def _event_date(event: str, text: str) -> DateValue | None:
    """The date of a person's birth or death, or of a thing's start, as a page states it."""
    found = dates_in(text)
    if not found:
        return None
    span = re.search(r"\(([^()]*\d{3,4}[^()]*)\)", text)  # "(born 1 May 1920)", "(1920–1990)"
    if event in {"birth", "death"}:
        cue = {"birth": r"\b(?:born|b\.)", "death": r"\b(?:died|d\.|death)"}[event]
        for m in re.finditer(cue, text):
            after = [d for pos, d in found if m.end() <= pos <= m.end() + 60]
            if after:
                return after[0]
        if span:
            inside = dates_in(span.group(1))
            if len(inside) >= 2 and re.search(r"[–—-]", span.group(1)):
                return inside[0][1] if event == "birth" else inside[-1][1]
            if len(inside) == 1 and event == "birth" and "died" not in span.group(1):
                return inside[0][1]
        return None
    for cue in [*sorted(_START_CUES), *sorted(_ORIGIN_CUES)]:
        for m in re.finditer(rf"\b{cue}\w*", text, re.I):
            near = [d for pos, d in found if abs(pos - m.end()) <= 60]
            if near:
                return near[0]
    # "X is a 1994 American film": a work's or an organisation's page opens with its year.
    lead = sentences(text)[:1]
    first = dates_in(lead[0]) if lead else []
    return first[0][1] if first else None


_START_CUES = frozenset(
    """released publish premiere found formed establish created built opened launched
    started began introduced debuted aired incorporated""".split()
)
# How a thing that is not released came to be ("the game system was invented … in 1987"):
# read only when no start above is written.
_ORIGIN_CUES = frozenset("invented designed developed discovered composed coined".split())


def _lifespan(text: str) -> float | None:
    born, died = _event_date("birth", text), _event_date("death", text)
    if born is None or died is None:
        return None
    return (died.year - born.year) * 12 + (died.month - born.month)


_MEMBERS = frozenset({"member", "people", "person", "musician", "player"})


def _quantity(text: str, nouns: set[str]) -> float | None:
    """A count stated next to the question's noun ("five members", "250 species"); for
    members, also the size the page gives its group ("a rock duo", a people list)."""
    toks = re.findall(r"[\w,.]+", text)
    for i, tok in enumerate(toks):
        if stem(tok.casefold().strip(",.")) in nouns:
            for j in range(max(0, i - 3), i):
                v = _number(toks[j])
                if v is not None:
                    return v
    if nouns & _MEMBERS:
        size = group_size(text)
        return float(size) if size is not None else None
    return None


def _number(tok: str) -> float | None:
    tok = tok.casefold().strip(",.")
    if tok in NUMBER_WORDS:
        return float(NUMBER_WORDS[tok])
    try:
        return float(tok.replace(",", ""))
    except ValueError:
        return None


# -- which passages speak of what ------------------------------------------------------


def _pages_of(name: str, evidence: list[Evidence]) -> list[int]:
    """Evidence positions (1-based) about ``name``: its own page first, then mentions."""
    key = name.casefold()
    own = [
        n
        for n, e in enumerate(evidence, start=1)
        if base_title(e.title).casefold() == key or e.title.casefold() == key
    ]
    if own:
        return own
    own = [
        n
        for n, e in enumerate(evidence, start=1)
        if key in e.title.casefold() or base_title(e.title).casefold() in key
        if len(base_title(e.title)) >= 3
    ]
    if own:
        return own
    return [n for n, e in enumerate(evidence, start=1) if has_words(name, e.text)]


def _related_page(pages: list[int], relation: list[str], evidence: list[Evidence]) -> int | None:
    """The page a dependent description points at: in the option's page, the titled page
    whose name stands nearest to the relation word ("directed by Tim Burton")."""
    best: tuple[int, int] | None = None
    for n in pages:
        text = evidence[n - 1].text
        low = text.casefold()
        anchors = [
            m.start() for r in relation for m in re.finditer(rf"\b{re.escape(r[:6])}\w*", low)
        ]
        if not anchors:
            continue
        for m_i, e in enumerate(evidence, start=1):
            if m_i in pages:
                continue
            name = base_title(e.title)
            if len(name) < 3:
                continue
            for s, _ in whole_word_spans(name, text):
                dist = min(abs(s - a) for a in anchors)
                if best is None or dist < best[0]:
                    best = (dist, m_i)
    return best[1] if best and best[0] <= 80 else None


def _subject_pages(
    name: str, shape: QuestionShape, evidence: list[Evidence]
) -> tuple[list[int], list[int]]:
    """(pages the value is read from, all pages of the chain) for one option."""
    pages = _pages_of(name, evidence)
    if not pages:
        return [], []
    if shape.relation:
        hop = _related_page(pages, shape.relation, evidence)
        return ([hop], [pages[0], hop]) if hop else ([], pages[:1])
    return pages[:2], pages[:1]


# -- deciding ---------------------------------------------------------------------------


def _value_of(
    shape: QuestionShape, question: str, pages: list[int], evidence: list[Evidence]
) -> tuple[float | tuple[int, int, int], int] | None:
    nouns = _quantity_nouns(question, shape)
    for n in pages:
        text = evidence[n - 1].text
        if shape.event == "lifespan":
            life = _lifespan(text)
            if life is not None:
                return life, n
        elif shape.event == "quantity":
            q = _quantity(text, nouns) if nouns else None
            if q is not None:
                return q, n
        elif shape.event in {"measure", "span", "frequency"}:
            read = {"measure": length_m, "span": span_s, "frequency": per_year}[shape.event]
            size = read(text)
            if size is not None:
                return size, n
        elif shape.event:
            d = _event_date(shape.event, text)
            if d is not None:
                return d.key(), n
    return None


def _quantity_nouns(question: str, shape: QuestionShape) -> set[str]:
    skip = options_terms(shape.options)
    toks = words(question)
    out: set[str] = set()
    for i, t in enumerate(toks):
        if t in {"more", "most", "fewer", "less", "many", "number"} and i + 1 < len(toks):
            nxt = toks[i + 1]
            if nxt not in STOPWORDS and stem(nxt) not in skip:
                out.add(stem(nxt))
    return out


def _sentence_with(text: str, needle: str | None = None) -> str:
    """The first sentence that writes ``needle`` as a whole ("0" is not written by
    "version 3.10"), else the first sentence."""
    sents = sentences(text)
    if needle:
        whole = re.compile(rf"(?<![\w.,]){re.escape(needle)}(?!\w|[.,]\d)", re.IGNORECASE)
        for s in sents:
            if whole.search(s):
                return s
    return sents[0] if sents else text


def choose(shape: QuestionShape, question: str, evidence: list[Evidence]) -> Found | None:
    if len(shape.options) != 2:
        return None
    if not shape.event or not shape.direction:
        found = _choose_by_property(shape, question, evidence)
    elif (by_default := _compare_defaults(shape, question, evidence)) is not None:
        found = Found(shape.options[by_default[0]], by_default[1])
    else:
        compared = _compare(shape, question, evidence)
        if compared is None:
            return None
        pick, options, support = compared
        found = Found(options[pick], support)
    if found is not None and found.value:
        found.value = _named_in_full(found.value, evidence)
    return found


# A page's opening names its subject in full: "Howard Melvin Fast (November 11, 1914 - ...)
# was an American novelist", "Prof Bhabananda Deka is ...".
_OPENING_NAME = re.compile(
    r"^((?:[A-Z][\w'’.-]*\s+){1,6}[A-Z][\w'’.-]*)\s*(?:\(|,?\s+(?:is|was|were|are)\b)"
)


def _named_in_full(option: str, evidence: list[Evidence]) -> str:
    """The chosen option as its own page names it in its opening, when that name holds
    the option's words in order and ends as it does ("Howard Fast" -> "Howard Melvin
    Fast"); else the option as asked."""
    pages = _pages_of(option, evidence)
    if not pages:
        return option
    lead = (sentences(evidence[pages[0] - 1].text) or [""])[0]
    m = _OPENING_NAME.match(lead)
    if not m:
        return option
    full, own = m.group(1).split(), option.split()
    if full[0] in {"The", "A", "An"}:
        full = full[1:]  # an article opens the sentence, not the name
    while full and full[0].rstrip(".") in HONORIFICS:
        full = full[1:]  # "Dr. Ulf Dietrich Merbold": a title, not part of the name
    words_left = iter(full)
    in_order = all(any(w == x for x in words_left) for w in own)
    if len(full) > len(own) and full[-1] == own[-1] and in_order:
        return " ".join(full)
    return option


_DEFAULT_OF = re.compile(r"^(?:the\s+)?defaults?\s+(?:value\s+)?(?:of|for)\s+", re.IGNORECASE)


def _compare_defaults(
    shape: QuestionShape, question: str, evidence: list[Evidence]
) -> tuple[int, list[tuple[int, str]]] | None:
    """ "Which has a larger default, work_mem or maintenance_work_mem?": (the option picked,
    the passages that decide it) by each option's own stated default ("four megabytes
    (4MB)", "64MB"), compared as quantities in one unit; a default not found, not a
    quantity, or equal decides nothing."""
    if not set(words(question)) & {"default", "defaults"}:
        return None
    read: list[tuple[float, list[tuple[int, str]]]] = []
    for opt in shape.options:
        name = _DEFAULT_OF.sub("", opt)  # "is the default of X bigger than Y?"
        stated = stated_value(f"what is the default {name}?", evidence)
        if stated is None or stated.value is None:
            return None
        amount = quantity(stated.value)
        if amount is None and (amount := _number(stated.value)) is None:
            return None
        read.append((amount, stated.support))
    (a, support_a), (b, support_b) = read
    if a == b:
        return None
    pick = 0 if (a < b) == (shape.direction == "min") else 1
    return pick, list(dict.fromkeys([*support_a, *support_b]))


def _compare(
    shape: QuestionShape, question: str, evidence: list[Evidence]
) -> tuple[int, list[str], list[tuple[int, str]]] | None:
    """(the option the comparison picks, the options, the passages that decide it): each
    option's value of the compared attribute read from its own pages; a tie or a missing
    value decides nothing."""
    values: list[tuple[str, Any]] = []  # (what was read, its value)
    support: list[tuple[int, str]] = []
    options = [_expand(opt, question, evidence) for opt in shape.options]
    tabled = _table_compare(options, question, evidence, shape.direction == "min")
    if tabled is not None:
        return tabled[0], options, tabled[1]
    for opt in options:
        pages, chain = _subject_pages(opt, shape, evidence)
        got = _value_of(shape, question, pages, evidence)
        if got is not None:
            values.append(("value", got[0]))
            for n in dict.fromkeys([*chain, got[1]]):
                support.append((n, _sentence_with(evidence[n - 1].text)))
            continue
        # Software documentation dates an API by the release that added it.
        release = _release_of(opt, evidence) if shape.event in {"start", "birth"} else None
        if release is None:
            return None
        values.append(("release", release[0]))
        support.append((release[1], release[2]))
    (kind_a, a), (kind_b, b) = values
    if kind_a != kind_b or a == b:
        return None  # a year against a release number compares nothing
    pick = 0 if (a < b) == (shape.direction == "min") else 1
    return pick, options, list(dict.fromkeys(support))


# A cell that is a number, perhaps with a sign, a currency or a unit: "30", "€77,000", "5 s".
_CELL_NUMBER = re.compile(r"^[^\w\s-]{0,2}\s*(-?\d[\d,]*(?:\.\d+)?)\s*[^\W\d]{0,5}%?$")


def _cell_number(cell: str) -> float | None:
    m = _CELL_NUMBER.match(cell.strip())
    return float(m.group(1).replace(",", "")) if m else None


def _table_compare(
    options: list[str], question: str, evidence: list[Evidence], smaller: bool
) -> tuple[int, list[tuple[int, str]]] | None:
    """Both options rows of one table ("DEBUG | 10", "INFO | 20"): compared by the column
    the question names, else by the one column numeric in both rows."""
    asked = set(terms(question))
    for n, header, rows in tables(evidence):
        picked: list[list[str]] = []
        for opt in options:
            hits = [r for r in rows if len(r) == len(header) and r[0] and _names_whole(r[0], opt)]
            if len(hits) != 1:
                break
            picked.append(hits[0])
        else:
            numeric = [
                c
                for c in range(1, len(header))
                if all(_cell_number(r[c]) is not None for r in picked)
            ]
            named = [c for c in numeric if set(terms(header[c])) & asked]
            cols = named or numeric
            if len(cols) != 1:
                continue
            a, b = (_cell_number(r[cols[0]]) for r in picked)
            if a is None or b is None or a == b:
                return None  # a tie decides nothing
            support = [(n, row_text(header, r)) for r in picked]
            return (0 if (a < b) == smaller else 1), support
    return None


def _release_of(option: str, evidence: list[Evidence]) -> tuple[tuple[int, ...], int, str] | None:
    """(release as numbers, evidence n, the note) of the note that follows the option's
    own name ("TaskGroup ... Added in version 3.11")."""
    names = [option, option.rsplit(".", 1)[-1]] if "." in option else [option]
    # "window functions": "Window function support was first added …"
    singular = option[:-1] if re.search(r"[a-z][^s\W]s$", option) else None
    labels = carried_labels(evidence)
    for n, e in enumerate(evidence, start=1):
        note = _note_after(names, e.text) or (singular and _note_after([singular], e.text))
        if note is None:
            continue
        sentence = _sentence_with(e.text, note)
        label = next(
            (
                lb
                for sent, lb, _ in scoped(e.text, labels[n - 1])
                if any((m.group(1) or m.group(2)) == note for m in VERSION_NOTE.finditer(sent))
            ),
            "",
        )
        # under "importlib.resources.files(...)" a note dates that member, and outside any
        # entry the page's own module ("importlib.resources.abc — ..."), not the module
        # importlib.resources
        if _another_entry(entry_code(label) or entry_code(e.title), option):
            continue
        return tuple(int(x) for x in note.split(".")), n, sentence
    return None


def _another_entry(code: str | None, option: str) -> bool:
    """Is ``code`` (an entry's code name) another thing than ``option``? The same name,
    or the same last part ("TaskGroup" for "asyncio.TaskGroup"), is the option's own."""
    if code is None:
        return False
    a, b = code.casefold(), option.casefold()
    return a != b and a.rsplit(".", 1)[-1] != b.rsplit(".", 1)[-1]


# Share of the question's other words an option's own page must hold to carry the asked
# property: a page paraphrases some of them ("for the night" for "to bed").
_MOST_OF = 0.75


def _choose_by_property(
    shape: QuestionShape, question: str, evidence: list[Evidence]
) -> Found | None:
    """ "Which novelist was German, X or Y?": the option whose own page states the asked
    property (most of the question's other words), when the other's page holds at most
    half as many."""
    options = [_expand(opt, question, evidence) for opt in shape.options]
    skip = options_terms(options) | set(shape.kind)
    prop = [t for t in terms(ask_of(question)) if t not in skip and t not in _WH_WORDS]
    if not prop:
        return None
    shares: list[float] = []
    support: list[tuple[int, str]] = []
    for opt in options:
        pages = _pages_of(opt, evidence)[:2]
        have = {t for n in pages for t in terms(evidence[n - 1].text)}
        shares.append(sum(t in have for t in prop) / len(prop) if pages else -1.0)
        if pages:
            best = max(
                sentences(evidence[pages[0] - 1].text),
                key=lambda x: sum(t in set(terms(x)) for t in prop),
            )
            support.append((pages[0], best))
    if min(shares) < 0:
        return None
    hi = 0 if shares[0] > shares[1] else 1
    if shares[hi] >= _MOST_OF and shares[1 - hi] <= shares[hi] / 2:
        return Found(options[hi], support)
    return None


def _expand(option: str, question: str, evidence: list[Evidence]) -> str:
    """An option cut at a comma inside its name ("Sweet Emma" of "Sweet Emma, Dear Böbe")
    grows to the longest page title that holds it and that the question spells out."""
    q = question.casefold()
    best = option
    for e in evidence:
        t = base_title(e.title)
        if len(t) > len(best) and option.casefold() in t.casefold() and t.casefold() in q:
            best = t
    return best


_DEMONYM = re.compile(r"\b[A-Z][a-z]+(?:an|ian|ese|ish|ch|sh|ic|i|ine)\b")


def _demonyms(text: str, own: set[str]) -> list[str]:
    """The nationality adjectives ``text`` writes, first occurrence order, none of them
    a word of the subject's own name (``own``)."""
    return list(
        dict.fromkeys(
            m.group(0) for m in _DEMONYM.finditer(text) if m.group(0).casefold() not in own
        )
    )


def _lead_attribute(text: str, name: str, attribute: list[str]) -> set[str] | None:
    """What a page's opening says a thing is: its nationality adjectives for
    "nationality"/"country"/"from", else whether it names the attribute noun."""
    lead = " ".join(sentences(text)[:2])
    own = set(words(name))
    if set(attribute) & {"nationality", "country", "national", "citizenship", "origin"}:
        found = set(_demonyms(lead, own))
        return found or None
    return None


def yes_no(shape: QuestionShape, question: str, evidence: list[Evidence]) -> Found | None:
    if len(shape.options) == 2 and shape.event and shape.direction and not shape.same:
        # "Is X older than Y?": the comparison "which is older, X or Y?" decides, yes when
        # it picks the first.
        by_default = _compare_defaults(shape, question, evidence)
        if by_default is not None:
            return Found("yes" if by_default[0] == 0 else "no", by_default[1])
        compared = _compare(shape, question, evidence)
        return Found("yes" if compared[0] == 0 else "no", compared[2]) if compared else None
    if not shape.options:
        return _default_is(question, evidence)
    if len(shape.options) != 2 or not shape.same:
        return None
    support: list[tuple[int, str]] = []
    if shape.attribute and set(shape.attribute) & {
        "nationality",
        "country",
        "national",
        "citizenship",
        "origin",
    }:
        got: list[set[str]] = []
        for opt in shape.options:
            pages, chain = _subject_pages(opt, shape, evidence)
            if not pages:
                return None
            n = pages[0]
            attr = _lead_attribute(evidence[n - 1].text, opt, shape.attribute)
            if attr is None:
                return None
            got.append(attr)
            support.extend((c, _sentence_with(evidence[c - 1].text)) for c in dict.fromkeys(chain))
            support.append((n, _sentence_with(evidence[n - 1].text)))
        same = bool(got[0] & got[1])
        return Found("yes" if same else "no", list(dict.fromkeys(support)))
    if {"same", "different"} & set(words(ask_of(question))) and shape.attribute:
        return _same_value(shape, question, evidence)
    # "Are X and Y both magazines?": class membership, read from what each page's opening
    # sentence says its subject is. The whole class phrase there: yes for that subject;
    # another nationality where the class names one, or not even its head noun: no;
    # anything between is not determined.
    options = [_own_name(opt, evidence) for opt in shape.options]
    klass, demonym = _class_terms(question, options)
    if not klass:
        return None
    verdicts: list[bool | None] = []
    for opt in options:
        pages = _pages_of(opt, evidence)
        if not pages:
            return None
        n = pages[0]
        lead = sentences(evidence[n - 1].text)[:1]
        have = {stem(w) for w in words(lead[0])} if lead else set()
        page = {stem(w) for m in pages for w in words(evidence[m - 1].text)}
        nationality = _nationality(demonym, lead[0] if lead else "", opt) if demonym else None
        rest = set(klass) - {stem(demonym.casefold())} if demonym else set(klass)
        verdict: bool | None = None
        if set(klass) <= have or (nationality and rest <= have):
            verdict = True
        elif nationality is False:
            verdict = False  # "an Irish film director" asked as "American"
        elif klass[-1] not in page and not related(klass[-1], page):
            verdict = False  # never called anything of the kind, anywhere on the page (a
            # "professor" is a "teacher")
        elif klass[-1] in have and not set(klass[:-1]) <= page:
            verdict = False  # called one of another sort ("flowering plants" asked as "ice plants")
        verdicts.append(verdict)
        support.append((n, lead[0] if lead else evidence[n - 1].text))
    if False in verdicts:
        # one that is not settles "both": only its page is the evidence
        return Found("no", [s for s, v in zip(support, verdicts, strict=True) if v is False])
    if all(verdicts):
        return Found("yes", support)
    return None


# A setting's switch values: the words for on, and for off.
_SWITCH_ON = frozenset({"on", "true", "enabled"})
_SWITCH_OFF = frozenset({"off", "false", "disabled"})
_BY_DEFAULT = re.compile(r"\b(?:by\s+default|defaults?\s+to)\b", re.IGNORECASE)


def _default_is(question: str, evidence: list[Evidence]) -> Found | None:
    """ "Is fsync on by default?", "does autocommit default to true?": yes when the stated
    default is the asked switch value, no when it is its opposite ("The default is off.");
    anything else decides nothing."""
    asked = [w for w in words(question) if w in _SWITCH_ON | _SWITCH_OFF]
    if len(asked) != 1 or not _BY_DEFAULT.search(question):
        return None
    subject = _BY_DEFAULT.sub("", re.sub(rf"\b{asked[0]}\b", "", question, flags=re.I))
    stated = stated_value(f"what is the default of {subject.strip(' ?')}?", evidence)
    if stated is None or stated.value is None:
        return None
    said = stated.value.casefold()
    if said not in _SWITCH_ON | _SWITCH_OFF:
        return None
    same = (said in _SWITCH_ON) == (asked[0] in _SWITCH_ON)
    return Found("yes" if same else "no", stated.support)


def _own_name(option: str, evidence: list[Evidence]) -> str:
    """An option read as far as the page it names: in "Are both X and Y American?" the
    words after Y's name belong to the class, not to the name ("Neil Jordan American" ->
    "Neil Jordan" when a page is titled so)."""
    titles = {base_title(e.title).casefold() for e in evidence}
    if option.casefold() in titles:
        return option
    toks = option.split()
    for cut in range(len(toks) - 1, 0, -1):
        head = " ".join(toks[:cut]).strip(_QUOTES)  # 'Vibe" magazines' -> Vibe
        if head.casefold() in titles:
            return head
    return option


_QUOTES = "\"'“”‘’"

# A relation ("based in Massachusetts", "located in England"), not a class: a page that
# does not repeat the place may still be in it.
_RELATION_WORDS = frozenset("in at on from by with to into near under within".split())


def _class_terms(question: str, options: list[str]) -> tuple[list[str], str | None]:
    """The class a "both" question asks about and the nationality it names, if any:
    "Are X and Y both rock bands?" -> (["rock", "band"], None); "Are both X and Y
    American?" -> (["american"], "American")."""
    ask = ask_of(question).rstrip(" ?")
    m = re.search(r"\bboth\s+(.+)$", ask)
    if not m:
        return [], None
    tail = m.group(1)
    last = options[-1] if options else ""
    at = tail.casefold().rfind(last.casefold()) if last else -1
    if at >= 0:
        tail = tail[at + len(last) :]  # "both X and Y <class>"
    tail = re.sub(r"^\W*(?:(?:a|an|the|considered|described as|types? of|kinds? of)\s+)*", "", tail)
    raw = words(tail)
    if set(raw) & _RELATION_WORDS:
        return [], None
    klass = [stem(w) for w in raw if w not in STOPWORDS and w not in _AUX_WORDS]
    skip = options_terms(options)
    if not klass or set(klass) & skip or len(klass) > 3 or any(_verb_or_number(t) for t in klass):
        return [], None  # "both X and Y …": the options, not a class
    demonym = next((d.group(0) for d in _DEMONYM.finditer(tail)), None)
    return klass, demonym


def _nationality(asked: str, lead: str, name: str) -> bool | None:
    """Does the opening call its subject by the asked nationality (or a form of it:
    "Argentine" for "Argentinian")? None when it names no nationality."""
    own = set(words(name))
    said = _demonyms(lead, own)
    if not said:
        return None
    return any(_same_stem(asked.casefold(), d.casefold()) for d in said)


def _same_stem(a: str, b: str) -> bool:
    return a.startswith(b) or b.startswith(a) or (a[:6] == b[:6] and min(len(a), len(b)) >= 6)


def _verb_or_number(term: str) -> bool:
    return term[:1].isdigit() or (len(term) > 4 and term.endswith("ed"))


_AUX_WORDS = frozenset("is are was were be been considered described known".split())


def _same_value(shape: QuestionShape, question: str, evidence: list[Evidence]) -> Found | None:
    """ "Are X and Y owned by the same team?": the name each page writes next to the
    attribute ("Owner: Platform team"), compared."""
    attr = shape.attribute[0]
    q_words = set(words(question))
    values: list[str] = []
    support: list[tuple[int, str]] = []
    for opt in shape.options:
        pages = _pages_of(opt, evidence)
        got: tuple[int, str, int, str] | None = None
        for n in pages[:2]:
            for sent in sentences(evidence[n - 1].text):
                toks = re.findall(r"[\w'’.-]+", sent)
                at = [i for i, t in enumerate(toks) if stem(t.casefold()) == attr]
                for i, t in enumerate(toks):
                    if not t[:1].isupper() or t.casefold() in q_words or t.casefold() in STOPWORDS:
                        continue
                    dist = min((abs(i - a) for a in at), default=99)
                    if dist <= 3 and (got is None or dist < got[0]):
                        got = (dist, t, n, sent)
        if got is None:
            return None
        values.append(got[1].casefold())
        support.append((got[2], got[3]))
    answer = values[0] == values[1]
    if "different" in words(ask_of(question)):
        answer = not answer
    return Found("yes" if answer else "no", support)


# -- what two things have in common ------------------------------------------------------

# "What profession do X and Y have in common?", "X and Y are both located in which
# country?", "What nationality were X and Y?": the value of the asked kind that both
# subjects' own pages state. Kinds read off a page's defining sentence ("X is an American
# poet and novelist"): what it is (its head nouns), its nationality, its genre (the words
# before the head noun both pages share); a place is any name both pages write.
_TRADE_KINDS = frozenset("profession occupation job career trade".split())
_NATION_KINDS = frozenset({"nationality", "citizenship"})
_PLACE_AREA_KINDS = frozenset("country state city county province region continent island".split())
_GENRE_KINDS = frozenset({"genre", "style"})
_ASKED_KIND = re.compile(r"\b(?:which|what|this)\s+([a-z]+)", re.I)


def shared_value(question: str, evidence: list[Evidence]) -> Found | None:
    ask = ask_of(question).rstrip(" ?")
    kinds = [stem(m.group(1).casefold()) for m in _ASKED_KIND.finditer(ask)]
    kind = next((k for k in kinds if k not in STOPWORDS and k not in _AUX_WORDS), None)
    if kind is None or not (
        {kind} & (_TRADE_KINDS | _NATION_KINDS | _PLACE_AREA_KINDS | _GENRE_KINDS)
    ):
        return None
    names = paired_names(ask)
    if not names:
        return None
    found: list[list[str]] = []
    support: list[tuple[int, str]] = []
    own = {w for name in names for w in words(name)}
    asked = set(words(ask))
    for name in names:
        pages = _pages_of(name, evidence)
        if not pages or not base_title(evidence[pages[0] - 1].title).casefold().startswith(
            name.casefold()[:4]
        ):
            return None  # only a subject's own page says what it is
        n = pages[0]
        lead = (sentences(evidence[n - 1].text) or [""])[0]
        # a value the question itself names ("which city in Kansas": Kansas) is no answer
        values = [
            v
            for v in _kind_values(kind, lead, evidence[n - 1].text, own)
            if not set(words(v)) <= asked
        ]
        if not values:
            return None
        found.append(values)
        support.append((n, lead))
    common = [v for v in found[0] if any(v.casefold() == w.casefold() for w in found[1])]
    if not common or (kind in _PLACE_AREA_KINDS | _NATION_KINDS and len(common) != 1):
        return None
    return Found(_listed(common), support)


def _kind_values(kind: str, lead: str, text: str, own: set[str]) -> list[str]:
    if kind in _PLACE_AREA_KINDS:
        opening = " ".join(sentences(text)[:2])
        return list(
            dict.fromkeys(
                m.group(0)
                for m in re.finditer(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*", opening)
                if not set(words(m.group(0))) & (own | STOPWORDS)
                and not _DEMONYM.fullmatch(m.group(0))
            )
        )
    if kind in _NATION_KINDS:
        return _demonyms(lead, own)
    m = DEFINING.search(lead)
    if not m:
        return []
    items = [i.strip() for i in LISTED.split(m.group(1))]
    items = [i for i in items if i and i.split()[-1][:1].islower()]
    if kind in _TRADE_KINDS:
        return list(dict.fromkeys(i.split()[-1] for i in items))
    # a genre: the words before the head noun of the first thing the page says it is
    first = items[0].split() if items else []
    return [w for w in first[:-1] if w[:1].islower() and w not in STOPWORDS]


def _listed(values: list[str]) -> str:
    if len(values) <= 2:
        return " and ".join(values)
    return ", ".join(values[:-1]) + " and " + values[-1]


# -- wh-questions ------------------------------------------------------------------------

# How far (in words) after its cue a value may stand: "born in Brooklyn", "directed by
# Ann Lee", "has two replicas", "listens on port 5432 by default".
_WINDOW = 8
_PLACE_PREP = frozenset({"in", "at", "near", "from"})
_NUM = re.compile(r"^\d{1,3}(?:,\d{3})+$|^\d+(?:\.\d+)?%?$")
_DURATION_UNITS = frozenset("second minute hour day week month year decade century".split())
_EVENT_OF_CUE = {cue: event for event, cues in EVENTS.items() for cue in cues}


_EVENT_VERBS = {"birth": ("born",), "death": ("died",)}


def _cues(question: str, shape: QuestionShape) -> list[str]:
    """What the answer stands next to in its passage: the question's events ("born",
    "died", "founded") and its outermost relation ("the spouse of ..."), else its other
    content words. Inner relations ("… of the director of film X") were the hops."""
    toks = words(ask_of(question))
    keys = {t for t in key_terms(question)}
    out: list[str] = []
    for t in toks:
        if t in _EVENT_OF_CUE:
            out.append(t)
            # "place of birth" is written "born in": the event's verb is a cue too
            out.extend(v for v in _EVENT_VERBS.get(_EVENT_OF_CUE[t], ()) if v not in out)
    for i, t in enumerate(toks[:-1]):
        if toks[i + 1] == "of" and t not in STOPWORDS and stem(t) not in keys:
            out.append(t)
            break
    if out:
        return out
    return [
        t
        for t in toks
        if t not in STOPWORDS
        and t not in _WH_WORDS
        and stem(t) not in keys
        and stem(t) not in set(shape.kind)
    ]


# A setting, symbol or code a technical question names: json.dumps, max_connections,
# PYTHONDONTWRITEBYTECODE, `--jobs`, ERR-4012.
_IDENTIFIER = re.compile(
    r"`[^`]+`|\b\w+[._]\w+\b|\b[A-Z][A-Z0-9_]{3,}\b|(?<!\w)--?\w[\w-]*|\b[A-Z]+-\d+\b"
)
_WH_WORDS = frozenset("what which who whom whose when where why how".split())


def _typed_after(
    kind: str, toks: list[str], start: int, own: set[str], bounds: bool = False, question: str = ""
) -> list[tuple[int, str]]:
    """(distance, value) of each value of the asked type in the window after ``start``; a
    number a bound word stands before ("at least 32,768") only when ``bounds`` is asked; a
    release's designation ("version 3.2", "Linux 3.17") never."""
    out: list[tuple[int, str]] = []
    window = toks[start + 1 : start + 1 + _WINDOW]
    i = 0
    while i < len(window):
        t = window[i]
        bare = t.strip(",.;:()\"'")
        if kind in {"person", "place"} and bare[:1].isupper() and bare.casefold() not in STOPWORDS:
            j = i
            name: list[str] = []
            while j < len(window):
                w = window[j].strip(",.;:()\"'")
                if w[:1].isupper() or (name and w in {"of", "de", "von", "van"}):
                    owner = re.sub(r"['’]s$", "", w)
                    name.append(owner)
                    # "Oregon's Umpqua valley": a possessive ends the name (Oregon)
                    if owner != w or window[j].endswith((",", ".", ";", ")")):
                        break
                    j += 1
                else:
                    break
            while name and name[-1] in {"of", "de", "von", "van"}:
                name.pop()
            prev = window[i - 1].casefold() if i > 0 else toks[start].casefold()
            ok = bool(name) and not {w.casefold() for w in name} <= own
            if kind == "place" and name and name[0].casefold() in _MONTHS:
                ok = False  # "died in June 1968": a date, not a place
            if kind == "place":
                ok = ok and prev in _PLACE_PREP
            else:
                ok = ok and 2 <= len(name) <= 4 and prev not in _PLACE_PREP
            if ok:
                out.append((i, " ".join(name)))
            i = max(j, i + 1)
            continue
        if kind in {"number", "duration", "value"} and _NUM.match(bare):
            if not bounds and bounded(toks, start + 1 + i):
                i += 1
                continue
            if designated(toks, start + 1 + i, question):
                i += 1
                continue
            unit = window[i + 1].strip(",.;:()").casefold() if i + 1 < len(window) else ""
            if kind == "duration":
                if stem(unit) in _DURATION_UNITS:
                    out.append((i, f"{bare} {unit}"))
            elif not _DATE.fullmatch(bare):
                out.append((i, bare))
        elif kind == "number" and bare.casefold() in NUMBER_WORDS:
            out.append((i, bare))
        elif kind == "value" and ("`" in t or "_" in bare):
            out.append((i, bare.strip("`")))
        i += 1
    return out


# A value written as code or an identifier: `telematics.pings.v2`, lake-readers, 5432.
_CODE_LIKE = re.compile(r"^`[^`]+`$|^[\w]+(?:[-_.:/][\w]+)+$|^\d+(?:\.\d+)+$|^\d+$")


def _asks_version(question: str) -> bool:
    """ "When was tomllib added?", "which version introduced X?", "since which version...":
    the answer is the release that brought it."""
    toks = set(words(question))
    return bool(toks & ARRIVAL) and (
        bool(toks & {"version", "release", "since"}) or asks_when(question)
    )


def assigned(question: str, evidence: list[Evidence]) -> Found | None:
    """The default a signature or a config line assigns to the setting a question about a
    default names ("dirs_exist_ok=False")."""
    if value_kind(question) != "literal" or refers_back(question):
        return None  # (a default assigned to a name the question writes is not the hop's)
    found = assigned_value(question, evidence)
    if found is None:
        return None
    n, line, value = found
    return Found(value, [(n, line)])


# A runner-up this close to the best statement, stating another value, leaves the value
# undetermined.
_CLOSE = 0.05


def stated_value(question: str, evidence: list[Evidence]) -> Found | None:
    """For a question that asks a value (a number, a duration, a date, a default): the
    sentence that writes one and whose scope best binds the question, quoted alone, when
    it writes exactly one value and no nearly as well bound sentence writes another. A
    default assigned to the setting the question names ("dirs_exist_ok=False") is read
    first."""
    kind = value_kind(question)
    if kind is None:
        return None
    if kind == "literal" and (given := assigned(question, evidence)) is not None:
        return given
    found = superseded(statements(question, evidence), evidence)
    if asks_a_bound(question) and code_names(question) and kind != "literal":
        # "what is the maximum max_connections?" asks the setting's bound, which its
        # default ("The default is typically 100 connections") is not
        found = [st for st in found if default_said(st.sentence, "") is None]
    counted = counted_noun(question)

    def values(s: Statement) -> tuple[str, ...]:
        # "how many replicas": of "one primary and two replicas", the number that counts
        # replicas; a sentence counting something else states no rival
        if counted:
            # a number closing a sentence that names the counted noun counts it: "limit the
            # number of open database files to nine" (not "bytes 4 through 7 of …"), as
            # does a setting named for it: "Default: LimitRequestFields 100"
            said = [*words(s.sentence), *identifier_parts(s.sentence)]
            names_it = any(is_counted(w, counted) for w in said)
            return tuple(
                v
                for v in s.values
                if counting(v, s.sentence, counted) or (names_it and closes_sentence(v, s.sentence))
            )
        return s.values

    if counted:
        # the statement read is the best bound one that counts the asked noun
        found = [st for st in found if values(st)]
    if not found:
        return None
    best = found[0]
    bound = asks_a_bound(question)
    rivals = {
        v
        for s in found[1:]
        # a default is no rival to a bound asked ("the default is five minutes" beside
        # "the valid range is between 30 seconds and one day")
        if not (bound and default_said(s.sentence, "") is not None)
        and s.bound >= best.bound - _CLOSE
        and s.direct >= best.direct - _CLOSE
        and s.subject >= best.subject
        and len(values(s)) == 1
        for v in values(s)
    }
    own = values(best)
    if len(own) == 2 and asks_a_bound(question) and (end := _range_end(question)) is not None:
        # "The valid range is between 30 seconds and one day": the low end for the
        # smallest allowed, the high end for the largest
        between = re.search(
            rf"\bbetween\s+{re.escape(own[0])}\b.*\band\s+{re.escape(own[1])}", best.sentence
        )
        own = (own[end],) if between else own
    if len(own) > 1:
        # "a population of 3,384,569 …, with annual growth rate of 3.8%": of several
        # values, the one right beside a word the question asks about, if only one is
        own = tuple(v for v in own if _beside_asked(v, best.sentence, question, _NEXT_TO)) or own
    value = own[0] if len(own) == 1 and rivals <= set(own) else None
    if value is None or asks_more_than_once(question):
        # Undetermined, or the question's last hop ("... that clock") is not what the
        # scope was bound to: the supporting sentences are quoted instead.
        return None
    if counted:
        value = _measured(value, counted)
    elif (
        not _noted(value, best.sentence)
        and not _beside_asked(value, best.sentence, question)
        and default_said(best.sentence, question) != value
        # a side of a change the sentence states ("changed to PAX_FORMAT from GNU_FORMAT")
        and not any(value.casefold() in side.casefold() for side in change_of(best.sentence) or ())
        # "how often": the period after "every" ("copies … every 15 minutes")
        and not (
            _HOW_OFTEN.search(question)
            and (_every(value).search(best.sentence) or per_year(value) is not None)
        )
    ):
        return None  # the value stands apart from every word the question asks about
    return Found(value, [(best.index, best.sentence)])


_HOW_OFTEN = re.compile(r"\bhow\s+(?:often|frequently)\b", re.IGNORECASE)


def _every(value: str) -> re.Pattern[str]:
    return re.compile(rf"\bevery\s+{re.escape(value)}\b", re.IGNORECASE)


# An exception's name as documentation writes it: IndexError, dataclasses.FrozenInstanceError
_EXCEPTION_NAME = re.compile(
    r"(?<![\w.])(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit)\b"
)
# "raises the Empty exception": a class named as an exception
_NAMED_EXCEPTION = re.compile(r"(?<![\w.])((?:[a-z_]\w*\.)*[A-Z]\w*)\s+exception\b")
_RAISES = re.compile(r"\b(?:raise[sd]?|raising|thrown?)\b", re.IGNORECASE)
_ASKS_AN_ERROR = frozenset({"error", "exception", "warning"})


def raised_answer(shape: QuestionShape, question: str, evidence: list[Evidence]) -> Found | None:
    """ "what error do I get if …?", "what does X raise when …?", "what happens if …?": the
    one exception the best-bound sentence says is raised; none, two, or a nearly as well
    bound sentence raising another is no answer."""
    ask = ask_of(question)
    if not (set(shape.kind) & _ASKS_AN_ERROR or _RAISES.search(ask) or "happen" in shape.kind):
        return None
    found = statements(question, evidence)
    if not found:
        return None

    def raised(st: Statement) -> set[str]:
        if not _RAISES.search(st.sentence):
            return set()
        said = _EXCEPTION_NAME.findall(st.sentence) + _NAMED_EXCEPTION.findall(st.sentence)
        return {n for n in said if n not in question}

    best = raised(found[0])
    rivals = set().union(*(raised(st) for st in found[1:] if st.bound >= found[0].bound - _CLOSE))
    if len(best) != 1 or not rivals <= best:
        return None
    return Found(next(iter(best)), [(found[0].index, found[0].sentence)])


_LOW_END = frozenset("smallest lowest shortest fewest least minimum min".split())
_HIGH_END = frozenset("largest highest longest biggest greatest most maximum max".split())


def _range_end(question: str) -> int | None:
    """0 when the question asks a range's low end, 1 its high end, None when neither."""
    toks = set(words(question))
    low, high = bool(toks & _LOW_END), bool(toks & _HIGH_END)
    return None if low == high else (0 if low else 1)


def _noted(value: str, sentence: str) -> bool:
    """Is the value a release note's ("New in version 3.11")? The note is its own cue."""
    return any(value in (m.group(1), m.group(2)) for m in VERSION_NOTE.finditer(sentence))


# A unit of measure is part of a quantity ("5 minutes"); a counted thing is not ("3").
_MEASURES = frozenset(
    """second minute hour day week month year ms millisecond byte kilobyte megabyte
    gigabyte kb mb gb tb kib mib gib percent""".split()
)


def _measured(value: str, counted: str) -> str:
    return f"{value} {counted}s" if counted in _MEASURES and value not in {"1", "one"} else value


_BESIDE = 4
_NEXT_TO = 2
_DEFAULT_CUES = frozenset({"default", "defaults", "otherwise", "unless"})


_BOUND_CUES = frozenset(
    stem(w) for w in "most least maximum minimum max min than exceed range between".split()
)


def _beside_asked(value: str, sentence: str, question: str, within: int = _BESIDE) -> bool:
    """Is the value within a few words of a word the question asks about, or of the word
    documentation states an unset value with ("Default five seconds")?"""
    toks = [stem(t.strip(",.;:()[]`'\"").casefold()) for t in sentence.split()]
    first = stem(value.split()[0].strip(",.;:()[]`'\"").casefold())
    asked = set(terms(question)) | _DEFAULT_CUES
    if asks_a_bound(question):  # "must be less than or equal to 61" states the bound
        asked |= _BOUND_CUES
    spots = [i for i, t in enumerate(toks) if t == first]
    return any(
        toks[j] in asked
        for i in spots
        for j in range(max(0, i - within), min(len(toks), i + within + 1))
        if j != i
    )


def _version_added(
    question: str, evidence: list[Evidence], supports: list[Support]
) -> Found | None:
    """The release a passage about the question's subject says the subject arrived in:
    the note nearest after the subject's name, in the best-ranked passage naming it."""
    idents = [m.group(0).strip("`") for m in _IDENTIFIER.finditer(question)]
    # "itertools.pairwise" is written "pairwise" in its own section
    names = idents + [i.rsplit(".", 1)[-1] for i in idents if "." in i] + key_terms(question)
    asked = [t for t in terms(question) if t not in ARRIVAL and t not in _WH_WORDS]
    order = [s.index for s in sorted(supports, key=lambda x: (-(x.direct + x.coverage), x.index))]
    order += [n for n in range(1, len(evidence) + 1) if n not in order]
    for n in order[:5]:
        text = evidence[n - 1].text
        low = f"{evidence[n - 1].title} {text}".casefold()
        # The subject: a name the question writes as one, else a question word the
        # page's title holds ("when was tomllib added": the page titled "tomllib — ...").
        title_terms = set(terms(evidence[n - 1].title))
        if not any(name.casefold() in low for name in names) and not (
            not names and title_terms & set(asked)
        ):
            continue
        version = _note_after(names, text, anywhere=True)
        if version is not None:
            return Found(version, [(n, _sentence_with(text, version))])
    return None


def _note_after(names: list[str], text: str, anywhere: bool = False) -> str | None:
    """The release note that follows the most specific of ``names`` the text writes ("a
    section lists several APIs, each with its note after its description"); with
    ``anywhere``, the first note when the text writes none of them."""
    notes = [(m.start(), m.group(1) or m.group(2)) for m in VERSION_NOTE.finditer(text)]
    if not notes:
        return None
    # the name itself, not a longer name it begins ("importlib.resources" of
    # "importlib.resources.abc")
    found = [
        re.search(rf"(?<!\w){re.escape(x)}(?!\w|\.\w)", text, re.IGNORECASE)
        for x in sorted(names, key=len, reverse=True)
    ]
    spot = next((m.start() for m in found if m), None)
    if spot is None:
        return notes[0][1] if anywhere else None
    after = [v for pos, v in notes if pos >= spot]
    return after[0] if after else (notes[0][1] if anywhere else None)


def _named_value(
    shape: QuestionShape, question: str, evidence: list[Evidence], supports: list[Support]
) -> Found | None:
    """ "Which Kafka topic ...?", "what port ...?": in technical text the kind's value is
    written as code or an identifier right beside the kind's noun ("Kafka topic
    `telematics.pings.v2`", "PagerDuty schedule: `platform-primary`", "the lake-readers
    group"). One such value in the supporting sentences is the answer; two are not."""
    head = shape.kind[-1]
    found: dict[str, tuple[int, int, str]] = {}
    q_low = question.casefold()
    ranked = sorted(supports, key=lambda s: (-(s.direct + s.coverage), s.index))
    # a value sits in the kind's own line: a support that runs on past a label line
    # ("… support it.\n\ncheckpoint_timeout (integer)\n\nMaximum time …"), or a field
    # block ("Default: keepalive_requests 1000;\nContext: http"), is read a line at a time
    paragraphs = [
        (sup, line.split()) for sup in ranked[:_MAX_SUPPORTS] for line in sup.sentence.splitlines()
    ]
    for sup, toks in paragraphs:
        # "If single-thread mode is selected, ...": a condition names no fact
        condition = in_condition(toks)
        if condition and condition[-1]:
            condition = [False] * len(toks)  # a condition never closed: its end is unknown
        for i, t in enumerate(toks):
            if condition[i] or stem(t.strip(",.;:()*").casefold()) != head:
                continue
            for j in range(max(0, i - 2), min(len(toks), i + 3)):
                raw = toks[j].strip(",.;()*|")
                v = raw.rstrip(":")
                if j == i or not _CODE_LIKE.match(v) or v.strip("`").casefold() in q_low:
                    continue
                value = v.strip("`")
                dist = abs(j - i)
                if dist > 1 and not re.search(r"`|[_./:]", v):
                    continue  # a plain word or number counts only right beside the kind
                if value not in found or dist < found[value][0]:
                    found[value] = (dist, sup.index, sup.sentence)
    if not found:
        return None
    best = sorted(found.items(), key=lambda kv: kv[1][0])
    if len(best) > 1 and best[1][1][0] == best[0][1][0]:
        return None
    value, (_, n, sent) = best[0]
    return Found(value, [(n, sent)])


_MAX_SUPPORTS = 6


def _hop_pages(question: str, evidence: list[Evidence], supports: list[Support]) -> list[int]:
    """Where a chain closes: pages reached by following a mention, best ranked first, then
    the pages holding the supporting sentences."""
    _, linked = chain_context(evidence, question)
    hops = [n for n, e in enumerate(evidence, start=1) if e.id in linked]
    rest = sorted({s.index for s in supports} - set(hops))
    return hops + rest


def wh_answer(
    shape: QuestionShape, question: str, evidence: list[Evidence], supports: list[Support]
) -> Found | None:
    kind = shape.answer_type
    version = _asks_version(question)
    if version and asks_more_than_once(question):
        # "X uses a clock. When was that clock added?": the scope read is not the hop's;
        # the note after the named subject is
        return _version_added(question, evidence, supports)
    # "what is the maximum max_connections?" asks a number whatever its wh-phrase says
    bound = kind in {"entity", "value"} and asks_a_bound(question)
    if version or bound or (kind in {"number", "duration"} and value_kind(question) == kind):
        # Sentences that write a value of the asked type (a release note, a number) in the
        # scope of the question's names decide, determined or not; a value a few words
        # after any of its words elsewhere ("glibc 2.27") is no better reading.
        stated = stated_value(question, evidence)
        if stated is not None or statements(question, evidence):
            return stated
        if version:
            # a page without paragraphs: the note after the subject's own name
            return _version_added(question, evidence, supports)
    if value_kind(question) == "literal" and statements(question, evidence):
        # a default stated in the asked entry's scope decides, determined or not: the
        # neighbouring entry's words are not read for it
        return stated_value(question, evidence)
    if kind == "entity" and shape.kind and _IDENTIFIER.search(question):
        # Technical questions (they name a setting, symbol or ticket) get technical values.
        named = _named_value(shape, question, evidence, supports)
        if named is not None:
            return named
    if kind in {"person", "entity"} or asks_a_name(shape, question):
        # A labelled line states it: "Chief Technology Officer: Bo Chen".
        field = named_answer(shape, question, evidence)
        if field is not None:
            return Found(field.value, [(field.n, field.line)])
    if kind == "person":
        # the maker of a work, by the passive that names it ("directed by X")
        made = agent_answer(question, evidence)
        if made is not None:
            return Found(*made)
    if kind in {"entity", "value"}:
        raised = raised_answer(shape, question, evidence)
        if raised is not None:
            return raised
    if kind in {"person", "entity", "place"}:
        # the holder of a relation the question names: "Its county seat is Newport."
        held = relation_answer(question, evidence)
        if held is not None:
            return Found(*held)
    # A person's name next to another relation word in running text is too often another
    # person of the same passage (a co-star, a predecessor): not read off without a reader.
    if kind not in {"date", "number", "duration", "place", "value"}:
        return None
    if kind == "value":
        return None  # an untyped value: only a setting's default is read (stated_value)
    cues = _cues(question, shape)
    if not cues:
        return None
    q_words = set(words(question))
    pages = _hop_pages(question, evidence, supports)
    if _asks_of_a_relative(question):
        # "X's father", "the director of film X": the value is the related person's, not
        # on the page of the subject the question names
        pages = [n for n in pages if not _names_whole(base_title(evidence[n - 1].title), question)]
    for n in pages[:3]:
        e = evidence[n - 1]
        own = set(words(base_title(e.title))) | q_words
        event = next((_EVENT_OF_CUE[c] for c in cues if c in _EVENT_OF_CUE), None)
        if kind == "date" and event in {"birth", "death", "start"}:
            d = _event_date(event, e.text)
            if d is not None:
                m = _date_text(d, e.text)
                if m:
                    # "born in what year?" asks the year, not the day
                    value = str(d.year) if "year" in shape.kind else m
                    return Found(value, [(n, _sentence_with(e.text, m))])
            continue
        found: dict[str, int] = {}
        counted = counted_noun(question) if kind == "number" else None
        if counted:
            # "how many replicas" is answered by the number written before the noun:
            # "two replicas", "3 replicas".
            for sent in sentences(e.text):
                toks = sent.split()
                for i, t in enumerate(toks):
                    if stem(t.strip(",.;:()`").casefold()) != counted:
                        continue
                    for j in range(i - 1, max(-1, i - 4), -1):
                        v = toks[j].strip(",.;:()`")
                        if _NUM.match(v) or v.casefold() in NUMBER_WORDS:
                            found[v] = min(found.get(v, i - j), i - j)
                            break
            if found:
                best = sorted(found.items(), key=lambda kv: kv[1])
                if len(best) > 1 and best[1][1] == best[0][1]:
                    return None
                value = best[0][0]
                return Found(_measured(value, counted), [(n, _sentence_with(e.text, value))])
            continue
        for sent in sentences(e.text):
            toks = sent.split()
            for i, t in enumerate(toks):
                if stem(t.strip(",.;:()").casefold()) not in {stem(c) for c in cues}:
                    continue
                bounds = asks_a_bound(question)
                for dist, value in _typed_after(kind, toks, i, own, bounds, question):
                    if value.casefold() not in question.casefold():
                        found[value] = min(found.get(value, dist), dist)
        if found:
            best = sorted(found.items(), key=lambda kv: kv[1])
            if len(best) > 1 and best[1][1] == best[0][1]:
                return None  # two values equally close: not determined
            value = best[0][0]
            return Found(value, [(n, _sentence_with(e.text, value))])
    return None


# Someone known by their relation to the one the question names.
_RELATIVES = frozenset(
    """father mother parent son daughter child wife husband spouse brother sister sibling
    grandfather grandmother grandson granddaughter uncle aunt nephew niece director producer
    founder creator author composer writer""".split()
)
_OF_A_RELATIVE = re.compile(
    r"(?:['’]s\s+(?:paternal\s+|maternal\s+)?|\bthe\s+)(\w+)(?:\s+of\b|['’]s\b|\s+(?:born|die|died)\b|\?)",
    re.I,
)


def _names_whole(name: str, question: str) -> bool:
    """Does the question write ``name`` as a whole name ("Alexander Henderson" is not
    written by "Alexander Henderson Jr.")?"""
    after = r"(?!\w|(?-i:\s+[A-Z0-9]|,\s+[A-Z]))"
    return bool(name and re.search(rf"(?<![\w.]){re.escape(name)}{after}", question, re.I))


def _asks_of_a_relative(question: str) -> bool:
    """Is the asked value another's than the subject the question names: a relative ("X's
    father", "the director of film X") or a thing described by its relation to X?"""
    if DESCRIBED.search(question):
        return True
    return any(m.group(1).casefold() in _RELATIVES for m in _OF_A_RELATIVE.finditer(question))


def _date_text(d: DateValue, text: str) -> str | None:
    for m in _DATE.finditer(text):
        if dates_in(m.group(0))[0][1] == d:
            return m.group(0)
    return None


def _leading_name(title: str) -> str:
    """ "http.client — HTTP protocol client" -> "http.client": the name a page documents."""
    return (title.split() or [""])[0].casefold()


# Mixed case with three capitals or more, or snake_case: ThreadPoolExecutor,
# SSLSessionCache, max_workers. Two capitals are as often a person's or a company's name
# (McLaren, DeVito, FleetBoston).
_CODE_SHAPED = re.compile(
    r"(?=(?:[^A-Z]*[A-Z]){3})(?=.*[a-z])[A-Za-z0-9]+|[A-Za-z][A-Za-z0-9]*_\w+"
)


def _code_shaped(name: str) -> bool:
    return bool(_CODE_SHAPED.fullmatch(name.removesuffix("()")))


def _follows(hop: Provenance) -> bool:
    """Was a passage reached by following what its parent names (a link, a mention, the
    question rewritten with a bridge entity the parent gave), rather than by a search for
    the question's words beside one of its leads?"""
    return hop.tool != SEARCH_KNOWLEDGE.name or hop.rewrite


def in_named_scope(question: str, evidence: list[Evidence], support: list[tuple[int, str]]) -> bool:
    """Is a value read in the scope of the code names the question asks about? A passage
    that neither writes the name nor documents it (its page's name is the name's module,
    "shutil" for shutil.copytree) states another thing's value: http.client's default
    port is not http.server's, nor a test suite's timeout a ThreadPoolExecutor's. A passage
    reached by following a link or a mention counts with the passage it was reached from;
    one a search found after reading a passage does not: the search matched its words,
    and what it speaks of is its own."""
    # the dotted code names it asks about: http.server, shutil.copytree, re.DOTALL
    names = [i.casefold() for i in identifiers(question) if "." in i]
    if analyse(question).answer_type not in ("yesno", "option"):
        # and, for a value, its other code names (a yes/no or a choice is decided on one
        # option's page, the others unnamed there)
        names += [n.casefold() for n in code_names(question) if _code_shaped(n)]
    names = list(dict.fromkeys(names))
    if not names:
        return True
    ids = {e.id: n for n, e in enumerate(evidence, start=1)}

    def speaks_of(n: int, name: str, seen: set[int]) -> bool:
        e = evidence[n - 1]
        # a name asked in the plural ("ThreadPoolExecutors") is written in the singular
        if name.removesuffix("s") in f"{e.title} {heading_of(e)} {e.text}".casefold():
            return True
        if _leading_name(e.title) == name.rsplit(".", 1)[0]:
            return True
        parents = [ids[p.parent] for p in e.provenance if p.parent in ids and _follows(p)]
        return any(m not in seen and speaks_of(m, name, seen | {m}) for m in parents)

    return all(any(speaks_of(n, name, {n}) for n, _ in support) for name in names)


def find_short_answer(
    question: str, evidence: list[Evidence], supports: list[Support]
) -> Found | None:
    found = _find_short_answer(question, evidence, supports)
    if found is not None and not in_named_scope(question, evidence, found.support):
        return None
    return found


def _find_short_answer(
    question: str, evidence: list[Evidence], supports: list[Support]
) -> Found | None:
    if not evidence:
        return None
    shape = analyse(question)
    if shape.answer_type == "option":
        return choose(shape, question, evidence)
    if shape.answer_type == "yesno":
        return yes_no(shape, question, evidence)
    shared = shared_value(question, evidence)
    if shared is not None:
        return shared
    tabled = _from_table(question, evidence)
    if not supports:
        return tabled  # a wh-value is read only off what supports the answer
    return (
        wh_answer(shape, question, evidence, supports)
        or tabled
        or _of_class(shape, question, evidence)
        or _named_subject(shape, question, evidence)
    )


# A sentence that opens by naming what it describes: '"sz" is the original uncompressed
# size of the file', "dbdata.c | This file implements …" (a table row's first cell),
# "`maxsize` – the largest …": a quoted or code-like name, then a separator or "is" and a
# noun phrase ("__hash__() is used by …" says what is done with it, not what it is).
_NAMED_OPENING = re.compile(
    r"^\s*(?:\"([^\"\s]{1,40})\"|`([^`\s]{1,40})`|“([^”\s]{1,40})”"
    r"|([A-Za-z_][\w-]*(?:[._][\w-]+)+(?:\(\))?))"
    r"\s*(?:\||:|—|–|-\s|(?:is|are)\s+(?:the|a|an|one)\b)"
)


# "… is a song by …": the sentence classes the name it opens with.
_CLASSED_AS = re.compile(r"\s*(?:is|are|was|were)\s+(?:a|an)\s+((?:[\w-]+\s+){0,3}[\w-]+)")


def _opening_name(sentence: str, question: str) -> str | None:
    """The name the sentence opens with, unless the question writes it or the sentence
    classes it as something other than what the question asks ('"Numb" is a song' for
    "which album")."""
    m = _NAMED_OPENING.match(sentence)
    if not m:
        return None
    group = next(i for i, g in enumerate(m.groups(), start=1) if g)
    name = m.group(group)
    if name.casefold() in question.casefold():
        return None
    classed = _CLASSED_AS.match(sentence[m.end(group) :].lstrip('"`”'))
    asked = set(answer_type(question))
    if classed and asked and not asked & set(terms(classed.group(1))):
        return None
    return name


def _named_subject(shape: QuestionShape, question: str, evidence: list[Evidence]) -> Found | None:
    """ "which column stores the file's size?": the name that opens the sentence best bound
    to the question, when that sentence describes it ('"sz" is the original uncompressed
    size of the file') and no sentence as well bound, and saying nearly as much of the
    question itself, opens with another name. A name the question writes is no answer
    ("besides sqlite3recover.c, which file …")."""
    if shape.answer_type != "entity" or value_kind(question, shape) is not None:
        return None
    found = statements(question, evidence)
    # (a sentence about a thing the question names, "besides X", is its context)
    named = [(st, n) for st in found if (n := _opening_name(st.sentence, question))]
    if not named or named[0][0].bound < found[0].bound - _CLOSE:
        return None
    best, name = named[0]
    parts = question_parts(question)
    said = set(terms(best.sentence)) | identifier_parts(best.sentence)
    if parts.constraints and not said & set(parts.constraints):
        # A row or a sentence that only mentions the question's subject ("`topic` |
        # producer | invoice-builder") does not describe the asked thing: it must say
        # some of what is asked of it in its own words.
        return None
    for st in found:
        if st is best:
            continue
        other = _opening_name(st.sentence, question)
        # (its siblings in a list share its scope: what each sentence itself says decides)
        if other and other != name and st.bound >= best.bound - _CLOSE:
            if st.direct >= best.direct - _CLOSE:
                return None
    return Found(name, [(best.index, best.sentence)])


def _of_class(shape: QuestionShape, question: str, evidence: list[Evidence]) -> Found | None:
    """A name asked for by its class ("which aircraft carrier"): the page of that class
    the question's words bind to."""
    if shape.answer_type not in {"entity", "place", "person", "value"}:
        return None
    found = class_answer(question, evidence)
    return Found(found[0], found[1]) if found else None


def _from_table(question: str, evidence: list[Evidence]) -> Found | None:
    found = table_value(question, evidence)
    if found is None:
        return None
    n, row, value = found
    return Found(value, [(n, row)])
