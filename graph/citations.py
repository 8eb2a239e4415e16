"""Citations: every [n] must resolve to this run's authorised evidence, or it goes."""

from __future__ import annotations

import re

from graph.models import Citation
from tools.evidence import Evidence

_MARK = re.compile(r"\[(\d+)\]")


def verify_citations(
    answer: str, evidence: list[Evidence], authorised_ids: set[str]
) -> tuple[str, list[Citation], list[str]]:
    """Return (answer without unresolvable markers, citations, removed markers).

    A marker resolves when ``1 <= n <= len(evidence)`` and that evidence id is in
    ``authorised_ids`` (the caller's filter re-checked just before synthesis).
    """
    citations: dict[int, Citation] = {}
    removed: list[str] = []

    def keep_or_drop(m: re.Match[str]) -> str:
        n = int(m.group(1))
        if 1 <= n <= len(evidence) and evidence[n - 1].id in authorised_ids:
            e = evidence[n - 1]
            citations.setdefault(
                n,
                Citation(
                    n=n,
                    evidence_id=e.id,
                    doc_id=e.doc_id,
                    title=e.title,
                    text=e.text,
                    locator=e.locator,
                ),
            )
            return m.group(0)
        removed.append(m.group(0))
        return ""

    cleaned = _MARK.sub(keep_or_drop, answer)
    if removed:
        cleaned = re.sub(r"[ \t]+([.,;:])", r"\1", re.sub(r"[ \t]{2,}", " ", cleaned))
    return cleaned, [citations[n] for n in sorted(citations)], removed
