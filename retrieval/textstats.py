"""Tokenizer and IDF helpers shared by chunking and the write-time gates.

Two notions of "token" live here on purpose:

* :func:`count_words` — whitespace words, the cheap approximation of model tokens used
  for chunk size caps (no tokenizer download, stable across embedding models);
* :func:`terms` — lower-cased alphanumeric terms, used for IDF statistics.

IDF formula (used by the burst gate, documented in docs/CONNECTORS.md)::

    idf(t) = ln((N + P + 1) / (df(t) + p(t) + 1)) + 1

``N`` is the number of documents of the corpus (for Slack: every message of the export),
``df(t)`` the number of those documents containing ``t``. ``P`` is a background prior of
``PRIOR_DOCS`` pseudo-documents that contain every common English / chat-filler word
(``p(t) = P`` for a word in :data:`COMMON_WORDS`, else 0). Without the prior the maximum
reachable IDF is bounded by ``ln(N+1)+1`` and an absolute threshold such as 4.0 would reject
everything in a small export; with it, filler words stay near 1.0 whatever the size of the
export while rare technical terms score high from the first message. As ``N`` grows the
prior's weight fades and the corpus statistics dominate.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

_TERM_RE = re.compile(r"[a-z0-9]+(?:[._'-][a-z0-9]+)*")
_WORD_RE = re.compile(r"\S+")

PRIOR_DOCS = 1000

# The most frequent English words plus chat filler: the background prior of the IDF.
COMMON_WORDS: frozenset[str] = frozenset(
    """
    a about above after again all almost also am an and any are aren't as at be because
    been before being below between both but by can can't cannot could couldn't did didn't
    do does doesn't doing don't done down during each either else even ever every few for
    from further get gets getting got had hadn't has hasn't have haven't having he her here
    hers herself him himself his how however i i'd i'll i'm i've if in into is isn't it it's
    its itself just know let let's like look looks made make many may maybe me might mine
    more most much must my myself need needs no nor not now of off on once one only or
    other our ours ourselves out over own please probably quite rather really right same
    see seems she should shouldn't so some something still such sure take than that that's
    the their theirs them themselves then there there's these they they're thing things
    think this those though through thus to too two under until up upon us use used very
    want was wasn't way we we're we've well were weren't what what's when where which while
    who whom why will with won't would wouldn't yes yet you you'd you'll you're you've your
    yours yourself anyone anything everyone everything someone going go goes went come
    came new good great nice cool ok okay k kk yeah yep yup nope nah hi hey hello thanks
    thank thx ty cheers lol lmao haha hehe omg wow awesome sounds sound agreed agree
    np worries welcome sorry oh ah hmm ha also soon later today tomorrow yesterday
    morning afternoon evening night week weekend help idea ideas glad appreciate
    appreciated noise team folks guys anybody somebody again back said say says tell told
    ask asked question questions problem problems issue issues work works working
    check checking looking looked find found try tried trying time times day days
    """.split()
)


def terms(text: str) -> list[str]:
    """Lower-cased terms for IDF (keeps ``err-502``, ``db1.prod``, ``v2.3`` whole)."""
    return _TERM_RE.findall(text.lower())


def count_words(text: str) -> int:
    """Whitespace words: the chunker's approximation of model tokens."""
    return len(_WORD_RE.findall(text))


def word_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Absolute (start, end) offsets of the whitespace words in ``text[start:end]``."""
    end = len(text) if end is None else end
    return [(m.start(), m.end()) for m in _WORD_RE.finditer(text, start, end)]


@dataclass
class DocFreq:
    """Document frequencies over a corpus, with the smoothed, prior-backed IDF above."""

    n_docs: int = 0
    df: Counter[str] = field(default_factory=Counter)
    prior_docs: int = PRIOR_DOCS

    @classmethod
    def from_texts(cls, texts: Iterable[str], prior_docs: int = PRIOR_DOCS) -> DocFreq:
        stats = cls(prior_docs=prior_docs)
        for text in texts:
            stats.add(text)
        return stats

    def add(self, text: str) -> None:
        self.n_docs += 1
        self.df.update(set(terms(text)))

    def idf(self, term: str) -> float:
        prior = self.prior_docs if term in COMMON_WORDS else 0
        return math.log((self.n_docs + self.prior_docs + 1) / (self.df[term] + prior + 1)) + 1.0

    def mean_idf(self, text: str) -> float:
        """Mean IDF over the term occurrences of ``text`` (0.0 when it has no terms)."""
        found = terms(text)
        if not found:
            return 0.0
        return sum(self.idf(t) for t in found) / len(found)


def is_filler(text: str, min_terms: int = 3) -> bool:
    """Chat filler: fewer than ``min_terms`` terms, or nothing but common words."""
    found = [t for t in terms(_strip_chat_markup(text)) if not t.isdigit()]
    if len(found) < min_terms:
        return True
    return all(t in COMMON_WORDS for t in found)


_EMOJI_CODE_RE = re.compile(r":[a-z0-9_+\-]+:")


def _strip_chat_markup(text: str) -> str:
    return _EMOJI_CODE_RE.sub(" ", text)
