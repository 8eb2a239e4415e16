"""Optional ranking signals orthogonal to relevance: information density and freshness.

* IDF gate: a passage made of common words ("ok thanks, +1, will check") matches many
  queries a little and answers none; its mean term IDF is low. Drop it below a threshold.
* Age decay: among relevant passages a newer one is more likely current; multiply the
  fused score by ``0.5 ** (age_days / half_life_days)``.

Both are off by default; the pipeline records when it applies them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime

from retrieval.textstats import DocFreq, terms

# ``store.lexical.doc_freq``: document frequency per term and the indexed document count.
DocFreqLookup = Callable[[Sequence[str]], tuple[Mapping[str, int], int]]
# Text -> index terms. Must produce the keys ``doc_freq`` answers with: tantivy stems
# ("Running" -> "run"), so the engine's own analyser is passed when it has one.
Analyser = Callable[[str], list[str]]


def mean_idf_many(
    texts: Sequence[str], doc_freq: DocFreqLookup, analyse: Analyser | None = None
) -> list[float]:
    """Mean IDF over each text's term occurrences, with one ``doc_freq`` call for all texts.

    The IDF is the write-time gates' formula (retrieval/textstats.py: corpus statistics
    plus a background prior for common words), so a threshold means the same thing at
    write time and at query time. Occurrences, not distinct terms: filler is repetitive.
    A text with no terms scores 0.0 (it carries no information).
    """
    analyse = analyse or terms
    tokenised = [analyse(text) for text in texts]
    vocabulary = sorted({t for tokens in tokenised for t in tokens})
    if not vocabulary:
        return [0.0 for _ in texts]
    freqs, total = doc_freq(vocabulary)
    stats = DocFreq(n_docs=total, df=Counter({t: int(n) for t, n in freqs.items()}))
    idf_of = {term: stats.idf(term) for term in vocabulary}
    return [sum(idf_of[t] for t in tokens) / len(tokens) if tokens else 0.0 for tokens in tokenised]


def idf_gate(
    items: Iterable[tuple[str, str]],
    doc_freq: DocFreqLookup,
    threshold: float,
    analyse: Analyser | None = None,
) -> tuple[set[str], dict[str, float]]:
    """Ids (of ``(id, text)`` pairs) whose mean IDF is below ``threshold``, plus every mean."""
    pairs = list(items)
    means = mean_idf_many([text for _, text in pairs], doc_freq, analyse)
    by_id = {item_id: round(value, 4) for (item_id, _), value in zip(pairs, means, strict=True)}
    dropped = {
        item_id for (item_id, _), value in zip(pairs, means, strict=True) if value < threshold
    }
    return dropped, by_id


def age_days(timestamp: datetime, now: datetime | None = None) -> float:
    """Age in days; naive timestamps are taken as UTC; future timestamps count as age 0."""
    now = now or datetime.now(UTC)
    if timestamp.tzinfo is None:
        timestamp = timestamp.replace(tzinfo=UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return max(0.0, (now - timestamp).total_seconds() / 86400.0)


def age_decay_factor(
    timestamp: datetime, half_life_days: float, now: datetime | None = None
) -> float:
    if half_life_days <= 0:
        raise ValueError(f"age decay half-life must be > 0 days, got {half_life_days}")
    return float(0.5 ** (age_days(timestamp, now) / half_life_days))
