"""Answers written as a field: "Chief Technology Officer: Bo Chen", "Owner: Payments team",
"**Marcus Hale**: team lead". Organisations keep facts as labelled lines (page headers,
ticket fields, people lists); a line whose label is what the question asks, in the scope
that binds the question's names, states the answer as its value. The reversed form - a
name labelling its role - answers "who" when the role is what is asked.

Running text names a thing of a kind by apposition: "the carrier Baltic Freightways
rotated ...", "the service relay-gateway". A "which carrier" question is answered by the
name standing right after its kind noun in the sentence that binds the question best.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from graph.class_answer import NAME_OF
from graph.question import DESCRIBED, QuestionShape
from graph.statements import Statement, statements, superseded
from graph.text import QUESTION_WORDS, STOPWORDS, acronyms, names_something, stem, terms, words
from tools.evidence import Evidence

_FIELD = re.compile(r"^[\s*_`]*([^:\n]{2,60}?)[\s*_`]*:\s+(.+?)\s*$")
# A person's name: capitalised words, with the particles names carry ("Ana de la Cruz").
_NAME = re.compile(
    r"^[A-Z][\w'’-]+(?:\s+(?:(?:de|da|di|del|la|le|van|von|der|den|bin|al)\s+)*[A-Z][\w'’-]+)+$"
)
# A group of people, named: "Payments Platform team", "Data Engineering group".
_TEAM = re.compile(
    r"^(?:[A-Z][\w&'’-]*\s+)+(?:team|group|squad|guild|department|org|organi[sz]ation)$"
)
# An amount that opens a value: "€250 per week", "1.35% of the payout", "800 ms".
_AMOUNT = re.compile(r"^[€$£¥]?\d[\d,.]*(?:\s?(?:%|ms|s|m|h|GB|MB|KB|k))?")
_MAX_VALUE_WORDS = 6
# A table row whose first cell is a label: "Module: | mod_setenvif" reads "Module: mod_setenvif".
_LABEL_CELL = re.compile(r"^\s*([^|:\n]{2,60}):\s*\|\s+")
# A rival line bound almost as well that gives another value leaves the answer open.
_CLOSE = 0.05


@dataclass
class FieldAnswer:
    n: int  # evidence position, 1-based
    line: str
    value: str


def named_answer(
    shape: QuestionShape, question: str, evidence: list[Evidence]
) -> FieldAnswer | None:
    """A labelled line's value, else the name apposed to the asked kind (the statements
    bound to the question read once for both)."""
    found = statements(question, evidence)
    return _field_answer(shape, question, evidence, found) or _apposition_answer(
        shape, question, found
    )


def _field_answer(
    shape: QuestionShape, question: str, evidence: list[Evidence], found: list[Statement]
) -> FieldAnswer | None:
    """The value of the best-bound field line whose label is what the question asks, when
    it has the asked type and no nearly as well bound field line gives another."""
    asked = _asked_terms(question)
    if not asked:
        return None
    read: list[tuple[Statement, str]] = []
    # The newer of two documents stating the same field (a policy and its replacement).
    for st in superseded(found, evidence):
        # A ticket export writes several fields on one line: "Status: Done | Assignee: X";
        # a two-column table, a label cell and its value: "Module: | mod_setenvif".
        for part in _LABEL_CELL.sub(r"\1: ", st.sentence).split(" | "):
            value = _value(part, asked, shape, question)
            if value is not None:
                read.append((st, value))
                break
    return _uncontested(read)


def _uncontested(read: list[tuple[Statement, str]]) -> FieldAnswer | None:
    """The best-bound reading, unless one bound nearly as well reads another value."""
    if not read:
        return None
    best, value = read[0]
    for st, other in read[1:]:
        if st.bound < best.bound - _CLOSE:
            break
        if other.casefold() != value.casefold():
            return None
    return FieldAnswer(best.index, best.sentence, value)


def _asked_terms(question: str) -> set[str]:
    return {t for t in terms(question) if t not in QUESTION_WORDS}


def _value(line: str, asked: set[str], shape: QuestionShape, question: str) -> str | None:
    m = _FIELD.match(line.strip())
    if m is None:
        return None
    label, value = m.group(1).strip(), _clean(m.group(2))
    label_terms = set(terms(label)) - {stem(w) for w in STOPWORDS}
    if label_terms and (all(_meets(t, asked) for t in label_terms) or acronyms(label) & asked):
        if shape.answer_type == "person" and _TEAM.match(value) and DESCRIBED.search(question):
            # "who leads the team that owns X": "Owner: Payments team" is the hop, not who
            return None
        if shape.kind and stem(shape.kind[-1]) in label_terms and _a_name(value):
            # "PagerDuty schedule: platform-primary" names the asked kind's member
            return value
        return _answer(value, shape)
    # "Marcus Hale: team lead": the name labels the role the question asks about
    role = set(terms(value))
    if shape.answer_type == "person" and _NAME.match(label) and role & asked - _kinds(shape):
        return label
    return None


def asks_a_name(shape: QuestionShape, question: str) -> bool:
    """ "what is the name of the laptop setup tool …": a name asked for by a description,
    with no kind noun after the wh-word."""
    return shape.answer_type == "value" and NAME_OF.search(question) is not None


# What a field holds when it names nothing yet: "TBD", "none yet", "see below".
_UNSET = re.compile(r"^(?:tbd|tba|n/?a|none|unknown|pending|see\b|to be\b)", re.I)


def _a_name(value: str) -> bool:
    """A short value that names something: capitalised ("Platform Primary") or an
    identifier ("platform-primary", "pd_main", "v2"), not a placeholder or a phrase."""
    toks = value.split()
    if not toks or len(toks) > 3 or _UNSET.match(value):
        return False
    return names_something(toks[0])


def _meets(term: str, asked: set[str]) -> bool:
    """ "assignee" is what "assigned" asks, "owning" what "owns" asks: two forms of one
    word share all but their last letters."""
    return term in asked or any(
        _common_prefix(a, term)
        >= max(3 if min(len(a), len(term)) <= 4 else 5, min(len(a), len(term)) - 2)
        for a in asked
    )


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _kinds(shape: QuestionShape) -> set[str]:
    return {stem(k) for k in shape.kind}


def _clean(value: str) -> str:
    value = re.split(r"(?<=[a-z0-9)])\.\s+(?=[A-Z])", value)[0]  # the field's own sentence
    value = re.sub(r"\s*\([^)]*\)", "", value)  # "(#team-carriers)", "(all engineering...)"
    value = re.split(r"[,;]\s", value)[0]
    return value.strip(" *_`.")


def _typed(value: str, shape: QuestionShape) -> bool:
    toks = words(value)
    if not toks or len(toks) > _MAX_VALUE_WORDS:
        return False
    if shape.answer_type == "person":
        # "who owns it" is answered by a person or by a team of people
        return bool(_NAME.match(value) or _TEAM.match(value)) and not any(
            c.isdigit() for c in value
        )
    if shape.answer_type == "entity" and shape.kind:
        # "which team": a value that names one ("Carrier Integrations team")
        return stem(shape.kind[-1]) in {stem(t) for t in toks}
    return False


def _answer(value: str, shape: QuestionShape) -> str | None:
    """The asked part of a field's value: all of it when it has the asked type, the amount
    that opens it for "what is the weekly stipend" ("€250 per week ..." -> "€250")."""
    if _typed(value, shape):
        return value
    amount = _AMOUNT.match(value)
    if shape.answer_type == "entity" and amount:
        return amount.group(0)
    return None


_APPOSED = r"(?:[A-Z][\w'’&.-]*(?:\s+(?:of|de|and|&)?\s*[A-Z][\w'’&.-]*)*|[a-z][\w.]*-[\w.-]+)"


def _apposition_answer(
    shape: QuestionShape, question: str, found: list[Statement]
) -> FieldAnswer | None:
    """ "Which carrier ...?": the name after "the carrier" in the best-bound sentence that
    writes one, when no nearly as well bound sentence apposes another name."""
    if asks_a_name(shape, question):
        shape = replace(shape, answer_type="entity", kind=["name"])
    if shape.answer_type != "entity" or not shape.kind:
        return None
    kind = re.escape(shape.kind[-1])
    # "the carrier Nordlys Cargo"; a number names its kind's member without an article:
    # "listens on port 9102", "runs on node 3"; an identifier before its kind names it too:
    # "request the lake-readers group"
    pattern = re.compile(
        rf"\b(?i:the|a|an|our|its)\s+{kind}s?\s+({_APPOSED})|(?i:\b{kind})\s+(\d[\w.:-]*\d|\d)\b"
        rf"|\b(?i:the|our|its)\s+`?({_CODE_NAME})`?\s+(?i:{kind}s?)\b"
    )
    asked = question.casefold()
    q_terms = set(terms(question))
    read: list[tuple[Statement, str]] = []
    for st in found:
        for m in pattern.finditer(st.sentence):
            name = next(g for g in m.groups() if g).strip(" .")
            if m.group(3) and _COMPOUND_ADJECTIVE.search(name):
                continue  # "the highest-rated season" describes, it does not name
            if name and name.casefold() not in asked:
                read.append((st, name))
                break
        else:
            # "run `nwr-bootstrap`, the laptop setup tool": a name, then a description of
            # it in the question's own words (two or more, the asked kind among them)
            for m in _DESCRIBED_NAME.finditer(st.sentence):
                described = terms(m.group(2))
                if (
                    len(described) >= 2
                    and set(described) <= q_terms
                    and _describes_the_asked(m.group(2), shape, question)
                    and m.group(1).casefold() not in asked
                ):
                    read.append((st, m.group(1)))
                    break
    return _uncontested(read)


def _describes_the_asked(description: str, shape: QuestionShape, question: str) -> bool:
    """Is the description what the question calls the asked thing: its kind's noun
    ("which tool"), or the very words after "the name of the" ("the name of the laptop
    setup tool …")?"""
    if shape.kind[-1] != "name":
        return stem(shape.kind[-1]) in terms(description)
    asked = NAME_OF.search(question)
    written = r"\s+".join(re.escape(w) for w in description.split())
    return asked is not None and bool(
        re.match(rf"{written}\b", question[asked.end() :], re.IGNORECASE)
    )


# an identifier-like name: "lake-readers", "platform_primary", "relay-eu1"
_CODE_NAME = r"[a-z][a-z0-9.]*(?:[-_][a-z0-9.]+)+"
# "highest-rated", "well-known", "long-running", "self-hosted": a hyphenated adjective
_COMPOUND_ADJECTIVE = re.compile(
    r"^(?:\w+(?:est|ly)|well|self|non|so|ever|all|half|full|long|short|high|low|much|best|most"
    r"|least|first|second|third)-|-\w*(?:ed|ing|ly|ful|ous|ive|less)$",
    re.IGNORECASE,
)
_DESCRIBED_NAME = re.compile(
    rf"`?({_APPOSED}|{_CODE_NAME})`?\s*,\s+(?i:the|a|an|our)\s+((?:[\w-]+\s+){{0,3}}[\w-]+)"
)
