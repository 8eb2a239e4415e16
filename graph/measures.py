"""Magnitudes a page writes about its own subject, in one unit per dimension, so that two
pages can be compared: a length ("a 650 ft skyscraper", "8,035 m above sea level"), a
time span ("lasted 45 minutes", "from 19 September to 16 December 1944") and a setting's
quantity ("four megabytes (4MB)", "200ms").

Only what the text writes with a unit is read: a bare number is a count, not a size.
"""

from __future__ import annotations

import re
from datetime import date

from graph.text import NUMBER_WORDS, sentences, stem

_LENGTH_UNITS = {
    "mm": 0.001,
    "cm": 0.01,
    "m": 1.0,
    "metre": 1.0,
    "meter": 1.0,
    "km": 1000.0,
    "kilometre": 1000.0,
    "kilometer": 1000.0,
    "ft": 0.3048,
    "foot": 0.3048,
    "feet": 0.3048,
    "yd": 0.9144,
    "yard": 0.9144,
    "mi": 1609.344,
    "mile": 1609.344,
}
_TIME_UNITS = {
    "second": 1.0,
    "minute": 60.0,
    "hour": 3600.0,
    "day": 86400.0,
    "week": 7 * 86400.0,
    "month": 30.44 * 86400.0,
    "year": 365.25 * 86400.0,
    "decade": 3652.5 * 86400.0,
}
# What one of each unit is in bytes or seconds (kB as the binary kilobyte, as settings use
# it), by the stem a setting's value writes it with: "4MB", "four megabytes", "200ms".
_UNIT_SIZE = {
    **dict.fromkeys(["b", "byte"], 1.0),
    **dict.fromkeys(["kb", "kib", "kilobyte"], 1024.0),
    **dict.fromkeys(["mb", "mib", "megabyte"], 1024.0**2),
    **dict.fromkeys(["gb", "gib", "gigabyte"], 1024.0**3),
    **dict.fromkeys(["tb", "tib", "terabyte"], 1024.0**4),
    **dict.fromkeys(["ms", "millisecond"], 0.001),
    **dict.fromkeys(["s", "sec", "second"], _TIME_UNITS["second"]),
    **dict.fromkeys(["min", "minute"], _TIME_UNITS["minute"]),
    **dict.fromkeys(["h", "hour"], _TIME_UNITS["hour"]),
    **dict.fromkeys(["d", "day"], _TIME_UNITS["day"]),
    "week": _TIME_UNITS["week"],
}
_QUANTITY = re.compile(r"^([\d,]*\.?\d+)\s*([A-Za-z%]*)$")


def quantity(value: str) -> float | None:
    """A quantity in bytes or seconds: "4MB", "four megabytes", "64 kB", "200ms"."""
    head, _, unit = value.strip().partition(" ")
    if head.casefold() in NUMBER_WORDS:
        number = str(NUMBER_WORDS[head.casefold()])
    else:
        m = _QUANTITY.match(value.strip().replace(" ", ""))
        if m is None:
            return None
        number, unit = m.group(1), m.group(2)
    size = _UNIT_SIZE.get(stem(unit.casefold())) if unit else None
    try:
        return float(number.replace(",", "")) * size if size else None
    except ValueError:
        return None


_NUMBER = r"(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
_LENGTH = re.compile(
    _NUMBER + r"[\s-]?(mm|cm|m|metres?|meters?|km|kilomet(?:re|er)s?|ft|foot|feet|yd|yards?"
    r"|mi|miles?)\b",
    re.IGNORECASE,
)
# "lasted 45 minutes", "ran for 6 years", "Duration: 5 hours 20 minutes": a span written
# out after a word that introduces one; consecutive parts add up.
_SPAN_CUE = r"(?:last(?:ed|ing|s)?|ran|run|running|took|spann(?:ed|ing)|for|over|of|duration:?)"
_AMOUNT = (
    rf"(\d+(?:\.\d+)?|{'|'.join(NUMBER_WORDS)})[\s-]"
    r"(second|minute|hour|day|week|month|year|decade)s?\b"
)
_DURATION = re.compile(
    rf"\b{_SPAN_CUE}\s+(?:about\s+|nearly\s+|almost\s+|more than\s+|over\s+)?"
    rf"((?:{_AMOUNT}(?:,?\s+(?:and\s+)?)?)+)",
    re.IGNORECASE,
)
_PART = re.compile(_AMOUNT, re.IGNORECASE)
_MONTHS = (
    "january february march april may june july august september october november december"
).split()
_MON = "|".join(m.capitalize() for m in _MONTHS)
_DAY_MONTH = rf"(?:(\d{{1,2}})\s+({_MON})|({_MON})\s+(\d{{1,2}}))(?:,?\s+(\d{{4}}))?"
_RANGE = re.compile(
    rf"\b(?:from|between)\s+{_DAY_MONTH}\s+(?:to|until|till|through|and)\s+{_DAY_MONTH}"
)


def length_m(text: str) -> float | None:
    """The first length the page's opening writes, in metres."""
    lead = " ".join(sentences(text)[:2])
    m = _LENGTH.search(lead)
    if m is None:
        return None
    unit = m.group(2).casefold()
    scale = _LENGTH_UNITS.get(unit) or _LENGTH_UNITS.get(unit.removesuffix("s"))
    return float(m.group(1).replace(",", "")) * scale if scale else None


def span_s(text: str) -> float | None:
    """How long the page's subject lasted, in seconds: a span written out after a cue
    ("lasted 45 minutes"), else a dated range ("from 19 September to 16 December 1944",
    the start borrowing the end's year when it writes none)."""
    m = _DURATION.search(text)
    if m:
        total = 0.0
        for part in _PART.finditer(m.group(1)):
            n = part.group(1).casefold()
            value = float(NUMBER_WORDS[n]) if n in NUMBER_WORDS else float(n)
            total += value * _TIME_UNITS[part.group(2).casefold()]
        return total
    r = _RANGE.search(text)
    if r is None:
        return None
    start = _day(r.groups()[:5])
    end = _day(r.groups()[5:])
    if end is None or end[2] is None:
        return None
    year = start[2] if start and start[2] is not None else end[2]
    if start is None:
        return None
    try:
        a = date(year, start[1], start[0])
        b = date(end[2], end[1], end[0])
    except ValueError:
        return None
    if a > b and start[2] is None:
        a = a.replace(year=year - 1)  # "from 19 December to 3 January 1945"
    days = (b - a).days
    return days * 86400.0 if days >= 0 else None


def _day(g: tuple[str | None, ...]) -> tuple[int, int, int | None] | None:
    d1, m1, m2, d2, y = g
    day, mon = (d1, m1) if d1 else (d2, m2)
    if not day or not mon:
        return None
    return int(day), _MONTHS.index(mon.casefold()) + 1, int(y) if y else None


# How many a group has, as language writes it: "a rock duo", "a four-piece band",
# "a three-person team", "consisting of three members"; or a people list under its heading.
_GROUP_WORDS = {"duo": 2, "pair": 2, "trio": 3, "quartet": 4, "quintet": 5, "sextet": 6}
_GROUP = re.compile(
    r"\b(?:(duo|trio|quartet|quintet|sextet)"
    rf"|(\d+|{'|'.join(NUMBER_WORDS)})[\s-](?:piece|person|member|man|woman)s?\b(?!\s+of))",
    re.IGNORECASE,
)
_PEOPLE_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:people|members|team members|line-?up|staff)\s*:?\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_ITEM = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+\S")
# A line-up written out in the opening: "It consists of lead vocalist Sam Harris, drummer
# Adam Levin and …", "consisting of Ross Millard (vocals), Barry Hyde (guitar) and …".
_LINEUP = re.compile(
    r"\b(?:consists?|consisting|composed|made up|comprised?|comprising)\s+(?:of\s+)?([^.;:]+)"
)
_LIST_SPLIT = re.compile(r",\s*(?:and\s+)?|\s+and\s+")


def group_size(text: str) -> int | None:
    """The size a page gives its group: a group word or "N-piece" in its opening, else the
    number of items listed under a "People"/"Members" heading."""
    lead = " ".join(sentences(text)[:2])
    m = _GROUP.search(lead)
    if m:
        if m.group(1):
            return _GROUP_WORDS[m.group(1).casefold()]
        n = m.group(2).casefold()
        return NUMBER_WORDS[n] if n in NUMBER_WORDS else int(n)
    listed = _lineup(lead)
    if listed is not None:
        return listed
    heading = _PEOPLE_HEADING.search(text)
    if heading is None:
        return None
    count = 0
    for line in text[heading.end() :].splitlines():
        if not line.strip():
            if count:
                break
            continue
        if not _ITEM.match(line):
            break
        count += 1
    return count or None


def _lineup(lead: str) -> int | None:
    """How many people a written-out line-up names: every item of the list names someone
    (a capitalised name); a list of anything else ("a nave and a chancel") is no line-up."""
    m = _LINEUP.search(lead)
    if m is None:
        return None
    listed = re.sub(r"\([^()]*\)", " ", m.group(1))  # "(vocals and guitar)" is a role
    items = [i.strip() for i in _LIST_SPLIT.split(listed) if i.strip()]
    named = [i for i in items if re.search(r"\b[A-Z][\w'’-]", i)]
    return len(items) if len(items) >= 2 and len(named) == len(items) else None


# How often, per year: "a biweekly magazine", "published twice monthly", "runs nightly".
_PER_YEAR = (
    (r"hourly", 8760.0),
    (r"(?:daily|nightly|every day|each day)", 365.0),
    (r"(?:twice|two times) (?:a |per )?week", 104.0),
    (r"(?:weekly|every week|each week|once a week)", 52.0),
    (r"(?:bi-?weekly|fortnightly|every (?:two|2) weeks)", 26.0),
    (r"(?:semi-?monthly|twice (?:a |per )?month(?:ly)?)", 24.0),
    (r"(?:monthly|every month|each month|once a month)", 12.0),
    (r"(?:bi-?monthly|every (?:two|2) months)", 6.0),
    (r"(?:quarterly|every (?:three|3) months)", 4.0),
    (r"(?:semi-?annual(?:ly)?|biannual(?:ly)?|twice (?:a|per) year)", 2.0),
    (r"(?:annual(?:ly)?|yearly|every year|once a year)", 1.0),
)
_FREQUENCY = re.compile(
    "|".join(rf"(?P<f{i}>\b{p}\b)" for i, (p, _) in enumerate(_PER_YEAR)), re.IGNORECASE
)


def frequencies(text: str) -> list[str]:
    """The frequencies a text says of a verb ("runs nightly", "ran hourly"), not of a
    noun ("the nightly export job") nor a name's ("Weekly Shōnen Jump")."""
    out = []
    for m in _FREQUENCY.finditer(text):
        if m.group(0)[0].isupper() and text[: m.start()].rstrip()[-1:] not in ("", ".", "!", "?"):
            continue  # part of a name
        after = re.match(r"\s*([a-z]+)", text[m.end() :])
        if after and after.group(1) not in _AFTER_AN_ADVERB:
            continue  # which job, not how often something runs
        out.append(m.group(0))
    return out


# Words that may follow a frequency said of a verb ("runs nightly at 02:00").
_AFTER_AN_ADVERB = frozenset(
    "at on in from by and or until since during after before unless when while".split()
)


def per_year(text: str) -> float | None:
    """How many times a year the page says its subject happens (is published, runs): the
    first frequency it writes."""
    for m in _FREQUENCY.finditer(text):
        before = text[: m.start()].rstrip()
        if m.group(0)[0].isupper() and before and before[-1] not in ".!?\n":
            continue  # part of a name: "Weekly Shōnen Jump"
        if re.search(r"\bfrom(?:\s+an?)?$", before, re.IGNORECASE):
            continue  # "changed from a weekly to a monthly": what it was, not what it is
        i = int(next(k for k, v in m.groupdict().items() if v)[1:])
        return _PER_YEAR[i][1]
    return None
