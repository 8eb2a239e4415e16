"""Pure metric functions and their aggregation (no I/O, no engines).

Conventions:
- gold evidence and ranked evidence are document ids; a document repeated in the ranking
  (two chunks of one page) counts once, at its first position;
- a metric that does not apply to a question is ``None`` for it, and a mean over no
  applicable question is ``None`` (printed as "-", written as JSON null), never 0;
- answers are judged on ``short_answer`` (the asked fact alone), SQuAD-normalised against
  the gold answer and its aliases: a null short answer on an answerable question is wrong
  (EM 0), a yes/no gold is matched by the prediction's leading yes/no. The whole answer
  text is a cited paragraph, so its EM/F1 against a short gold would say nothing; only
  whether it states the gold answer (``answer_states_gold``) is reported for it.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

# The ratio metrics in [0, 1] (what the plot draws), then the cost figures.
RATIO_METRICS = (
    "support_recall_all",
    "support_recall",
    "mrr",
    "answer_in_evidence",
    # The answer contract (modes that answer): EM / F1 of ``short_answer`` (null = wrong),
    # how often one is given, how often a given one is right, whether the answer text
    # states the gold answer at all, and whether its claims and citations hold.
    "em",
    "f1",
    "short_answer_coverage",
    "short_answer_precision",
    "answer_states_gold",
    "claim_support_rate",
    "citation_precision",
    "refusal_accuracy",
    "refused_answerable",
)
METRICS = (
    *RATIO_METRICS,
    "mean_rounds",
    "mean_tool_calls",
    "p50_s",
    "p95_s",
)

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def is_yes_no(answer: str) -> bool:
    return normalize_answer(answer) in ("yes", "no")


def _yes_no_form(text: str) -> str:
    """``"Yes, both are American."`` -> ``"yes"``: a yes/no answer is judged by its verdict."""
    words = normalize_answer(text).split()
    return words[0] if words and words[0] in ("yes", "no") else " ".join(words)


def short_answer_match(prediction: str | None, golds: Sequence[str]) -> float:
    """EM of a short answer: null or blank is wrong; against a yes/no gold only the
    prediction's yes/no verdict counts; otherwise SQuAD EM against answer + aliases."""
    if prediction is None or not prediction.strip():
        return 0.0
    for gold in golds:
        if not gold:
            continue
        if is_yes_no(gold):
            if _yes_no_form(prediction) == normalize_answer(gold):
                return 1.0
        elif normalize_answer(prediction) == normalize_answer(gold):
            return 1.0
    return 0.0


def short_answer_f1(prediction: str | None, golds: Sequence[str]) -> float:
    """Token F1 of a short answer (best gold or alias); null is 0, yes/no all-or-nothing."""
    if prediction is None or not prediction.strip():
        return 0.0
    best = 0.0
    for gold in golds:
        if not gold:
            continue
        if is_yes_no(gold):
            score = float(_yes_no_form(prediction) == normalize_answer(gold))
        else:
            score = _f1(prediction, gold)
        best = max(best, score)
    return best


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in golds if g))


def _f1(prediction: str, gold: str) -> float:
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    # SQuAD: yes/no/noanswer must match exactly, a partial overlap is worth nothing.
    if (normalize_answer(prediction) in ("yes", "no", "noanswer")) or (
        normalize_answer(gold) in ("yes", "no", "noanswer")
    ):
        return float(normalize_answer(prediction) == normalize_answer(gold))
    common = Counter(pred_tokens) & Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: Sequence[str]) -> float:
    """Token F1 against the best-matching gold answer or alias."""
    return max((_f1(prediction, g) for g in golds if g), default=0.0)


def answer_in_texts(texts: Iterable[str], golds: Sequence[str]) -> bool:
    """Normalised containment on word boundaries ("1" is not found in "1994")."""
    haystack = f" {normalize_answer(' '.join(texts))} "
    return any((needle := normalize_answer(g)) and f" {needle} " in haystack for g in golds if g)


def _first_positions(ranked: Sequence[str]) -> dict[str, int]:
    positions: dict[str, int] = {}
    for i, doc in enumerate(ranked, start=1):
        positions.setdefault(doc, i)
    return positions


def support_recall(ranked: Sequence[str], gold: Iterable[str]) -> float | None:
    """Share of gold documents present in the evidence; None without gold."""
    gold_set = set(gold)
    if not gold_set:
        return None
    return len(gold_set & set(ranked)) / len(gold_set)


def support_recall_all(ranked: Sequence[str], gold: Iterable[str]) -> float | None:
    gold_set = set(gold)
    if not gold_set:
        return None
    return float(gold_set <= set(ranked))


def reciprocal_rank(ranked: Sequence[str], gold: Iterable[str]) -> float | None:
    """1 / position of the first gold document (distinct documents counted); 0 if none."""
    gold_set = set(gold)
    if not gold_set:
        return None
    distinct = list(_first_positions(ranked))
    for i, doc in enumerate(distinct, start=1):
        if doc in gold_set:
            return 1.0 / i
    return 0.0


def citation_precision(cited: Sequence[str] | None, gold: Iterable[str]) -> float | None:
    """Share of citations (one per ``[n]``, by its document id) whose document is gold;
    None when nothing is cited."""
    if not cited:
        return None
    gold_set = set(gold)
    return sum(doc in gold_set for doc in cited) / len(cited)


def claim_support(claims: Sequence[bool] | None) -> float | None:
    """Share of an answer's claims the run's support check passed; None without claims."""
    if not claims:
        return None
    return sum(claims) / len(claims)


def ndcg_at_k(ranked: Sequence[str], qrels: dict[str, int], k: int = 10) -> float:
    """nDCG@k with linear gains (trec_eval / BEIR convention)."""
    distinct = list(_first_positions(ranked))[:k]
    dcg = sum(qrels.get(d, 0) / math.log2(i + 1) for i, d in enumerate(distinct, start=1))
    ideal = sorted((r for r in qrels.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 1) for i, r in enumerate(ideal, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], qrels: dict[str, int], k: int = 100) -> float:
    relevant = {d for d, r in qrels.items() if r > 0}
    if not relevant:
        return 0.0
    return len(relevant & set(list(_first_positions(ranked))[:k])) / len(relevant)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return None
    data = sorted(values)
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


@dataclass
class Outcome:
    """What one mode did for one question: the input of every metric."""

    qid: str
    type: str
    expect: str  # "answer" | "refuse"
    gold: list[str]
    answers: list[str]  # gold answer + aliases
    evidence_ids: list[str] = field(default_factory=list)  # ranked document ids
    evidence_texts: list[str] = field(default_factory=list)
    answer: str | None = None  # None: the mode does not produce answers
    short_answer: str | None = None  # the asked fact alone; None: not given
    claims: list[bool] | None = None  # each claim's support verdict; None: no claims made
    cited: list[str] | None = None  # each citation's document id; None: the mode does not cite
    refused: bool | None = None  # None: the mode cannot refuse
    rounds: int = 1
    tool_calls: int = 1
    seconds: float = 0.0
    error: str | None = None


def question_scores(o: Outcome) -> dict[str, float | None]:
    """Per-question values; None where a metric does not apply to this question."""
    answerable = o.expect == "answer"
    gold = o.gold if answerable else []
    yes_no = bool(o.answers) and is_yes_no(o.answers[0])
    wants_containment = answerable and bool(o.answers) and not yes_no
    produces = o.answer is not None and answerable and bool(o.answers)
    given = produces and bool((o.short_answer or "").strip())
    return {
        "support_recall_all": support_recall_all(o.evidence_ids, gold),
        "support_recall": support_recall(o.evidence_ids, gold),
        "mrr": reciprocal_rank(o.evidence_ids, gold),
        "answer_in_evidence": (
            float(answer_in_texts(o.evidence_texts, o.answers)) if wants_containment else None
        ),
        "em": short_answer_match(o.short_answer, o.answers) if produces else None,
        "f1": short_answer_f1(o.short_answer, o.answers) if produces else None,
        "short_answer_coverage": float(given) if produces else None,
        "short_answer_precision": (
            short_answer_match(o.short_answer, o.answers) if given else None
        ),
        "answer_states_gold": (
            float(answer_in_texts([o.answer or ""], o.answers)) if produces and not yes_no else None
        ),
        "claim_support_rate": claim_support(o.claims),
        # On a question that must be refused, no citation is correct.
        "citation_precision": citation_precision(o.cited, gold),
        "refusal_accuracy": (
            float(o.refused) if o.expect == "refuse" and o.refused is not None else None
        ),
        "refused_answerable": (float(o.refused) if answerable and o.refused is not None else None),
    }


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def summarize(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Every metric over ``outcomes``; errored questions count as misses, not as absent."""
    scored = [question_scores(o) for o in outcomes]
    ran = [o for o in outcomes if o.error is None]
    out: dict[str, Any] = {m: _round(mean(s[m] for s in scored)) for m in RATIO_METRICS}
    # Claims are pooled (supported claims / all claims), not averaged per answer.
    claims = [c for o in outcomes for c in o.claims or []]
    out["claim_support_rate"] = _round(sum(claims) / len(claims)) if claims else None
    out["mean_rounds"] = _round(mean(float(o.rounds) for o in ran))
    out["mean_tool_calls"] = _round(mean(float(o.tool_calls) for o in ran))
    seconds = [o.seconds for o in ran]
    out["p50_s"] = _round(percentile(seconds, 50))
    out["p95_s"] = _round(percentile(seconds, 95))
    return out


def summarize_with_types(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    result = summarize(outcomes)
    result["errors"] = sum(o.error is not None for o in outcomes)
    by_type: dict[str, Any] = {}
    for t in sorted({o.type for o in outcomes}):
        subset = [o for o in outcomes if o.type == t]
        by_type[t] = {"questions": len(subset), **summarize(subset)}
    result["by_type"] = by_type
    return result
