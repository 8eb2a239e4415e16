"""A name asked for by its class: "what liberal arts college…", "which aircraft carrier…".

Such an answer is usually a page of its own: a subject whose opening sentence says what it
is ("Berea College is a liberal arts work college…"), or whose name carries the class
("Fairfax County"). Of the pages in the evidence that the
question does not already name, the one that is of the asked class and to which the
question's other words bind (on its page, or in the sentences of other passages that name
it) is the answer; a tie, or a weak binding, is no answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graph.lexicon import related
from graph.question import ask_of
from graph.text import QUESTION_WORDS, STOPWORDS, sentences, stem, terms, words
from tools.evidence import Evidence
from tools.titles import base_title, has_words

# "X is an American film director, …": what a page's opening says its subject is.
DEFINING = re.compile(
    r"\b(?:is|was|are|were)\s+(?:an?|the|one of the)\s+(.+?)"
    r"(?=[.;:(]|\s+(?:who|which|that|whose|known|best|born|from|based|founded|located|in|of|"
    r"with|for|by|on|at|to|as|about|under|into|between|against)\b|$)"
)
# "which aircraft carrier", "what kind of lamp", "what is the name of the ethnic group"
# The things a definition lists: "a screenwriter, director and film producer".
LISTED = re.compile(r",\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+")
# "what is the name of the ethnic group …": the thing named is what follows
NAME_OF = re.compile(
    r"\b(what|which)(?:['’]s|\s+is|\s+was|\s+are)\s+the\s+names?\s+of\s+(?:the|an?)\s+", re.I
)
_WH_PHRASE = re.compile(
    r"\b(?:which|what)\s+(?:(?:kind|type|sort|form)s?\s+of\s+)?([\w'’ -]+)", re.I
)
_ARTICLES = frozenset({"the", "a", "an"})
_IN_NAME = frozenset({"of", "the", "and", "de", "for"})
_AUX = frozenset("is are was were be been has have had do does did will would can could".split())
# Share of the question's other terms that must bind to the chosen page.
_MIN_BINDING = 0.5
_LEAD_SENTENCES = 2


def asked_class(question: str) -> list[str]:
    """The class phrase of "which/what <class> …", stemmed, its head noun last:
    "what liberal arts work college that was founded…" -> [liber…, "college"]."""
    ask = NAME_OF.sub(r"\1 ", ask_of(question))
    m = _WH_PHRASE.search(ask)
    if not m:
        return []
    phrase: list[str] = []
    toks = re.findall(r"[\w'’-]+", m.group(1))
    for i, w in enumerate(toks):
        low = w.casefold()
        after = toks[i + 1] if i + 1 < len(toks) else ""
        if low in _IN_NAME and phrase and w.islower() and _capital(toks[i - 1]) and _capital(after):
            continue  # inside a name: "Kentucky Writers Hall of Fame author"
        if low in STOPWORDS or low in _AUX or (phrase and low.endswith("ed")):
            break
        if phrase and low.endswith("ing") and (_capital(after) or after.casefold() in _ARTICLES):
            break  # a participle opens what follows: "the fantasy film starring Sarah Bolger"
        phrase.append(stem(low))
    return phrase


def _capital(word: str) -> bool:
    return word[:1].isupper()


def _lead(text: str) -> str:
    return " ".join(sentences(text)[:_LEAD_SENTENCES])


def _defines_as(text: str, head: str) -> bool:
    # the head noun of each thing the opening calls it ("an American college football
    # coach" is a coach, not a college; "a screenwriter and film producer" is both);
    # "movie" asked, "film" written: by meaning
    items = [item for m in DEFINING.finditer(_lead(text)) for item in LISTED.split(m.group(1))]
    heads = [stem(w[-1]) for item in items if (w := words(item))]
    # "a 2004 American superhero film loosely based on …": an adverb before the participle
    # that ends the phrase is no head; the word before it may be
    heads += [stem(w[-2]) for item in items if len(w := words(item)) > 1 and w[-1].endswith("ly")]
    return head in heads or any(related(head, [h]) for h in heads)


def class_answer(
    question: str, evidence: list[Evidence]
) -> tuple[str, list[tuple[int, str]]] | None:
    """The page of the asked class the question binds to, with its defining sentence and
    the sentence of another passage that ties it to the question."""
    phrase = asked_class(question)
    if not phrase:
        return None
    head = phrase[-1].rsplit("-", 1)[-1]  # a "singer-songwriter" is a songwriter
    q_stems = [stem(w) for w in words(question)]
    if q_stems.count(head) > 1:
        return None  # the question calls another thing by the class too ("an empire that…")
    salient = [t for t in terms(question) if t not in QUESTION_WORDS and t not in phrase]
    if not salient:
        return None
    asked = question.casefold()
    pages: dict[str, int] = {}
    for n, e in enumerate(evidence, start=1):
        title = base_title(e.title)
        own = [stem(w) for w in words(title)]
        if not title[:1].isupper() and not title[:1].isdigit():
            continue  # a name, not a description ("Heap queue algorithm")
        if has_words(title.casefold(), asked.casefold()) or set(own) <= set(q_stems):
            continue  # the question names it: a hop, not the answer
        if not (
            _defines_as(e.text, head) or (own[-1:] == [head] and title.split()[-1][:1].isupper())
        ):
            continue
        pages.setdefault(title, n)
    scored = sorted(
        (_binding(title, n, evidence, salient) for title, n in pages.items()),
        key=lambda b: -b.score,
    )
    if not scored:
        return None
    best = scored[0]
    if (len(scored) > 1 and scored[1].score == best.score) or best.score < _MIN_BINDING * len(
        salient
    ):
        return None  # two pages bind as well, or the question's words barely reach it
    opening = (sentences(evidence[best.n - 1].text) or [best.title])[0]
    # the passage that names it first (the hop that led here), then its own opening
    return best.title, [*best.naming, (best.n, opening)]


@dataclass
class _Binding:
    score: int  # the question's other terms found on the page or where it is named
    title: str
    n: int
    naming: list[tuple[int, str]]  # the other passage's sentence that names it, if any


def _binding(title: str, n: int, evidence: list[Evidence], salient: list[str]) -> _Binding:
    bound = set(terms(evidence[n - 1].text))
    best: tuple[int, int, str] | None = None
    for m, e in enumerate(evidence, start=1):
        if m == n:
            continue
        for sent in sentences(e.text):
            if not has_words(title.casefold(), sent.casefold()):
                continue
            # a sentence is read with its page's title: "It was hosted by John Waters" on
            # the page of the 18th Independent Spirit Awards binds those words too
            have = set(terms(sent)) | set(terms(base_title(e.title)))
            bound |= have
            shared = len(have & set(salient))
            if best is None or shared > best[0]:
                best = (shared, m, sent)
    naming = [(best[1], best[2])] if best else []
    return _Binding(sum(t in bound for t in salient), title, n, naming)
