"""The rule policy on the project's own evalset (evalsets/acme): it answers the bridge and
comparison questions from cited evidence and refuses the unanswerable ones."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graph.models import Caller, ResearchResult, RunOptions
from graph.runner import Researcher

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

ACME = Path(__file__).resolve().parents[3] / "evalsets" / "acme" / "questions.jsonl"


@pytest.fixture(scope="module")
def acme() -> Iterator[tuple[Researcher, list[Any]]]:
    if not ACME.exists():
        pytest.skip("evalsets/acme is not in this checkout")
    from evalsets.loaders import load_acme
    from retrieval.store import Store

    evalset = load_acme(ACME)
    home = Path(__import__("tempfile").mkdtemp(prefix="waypoint-acme-"))
    store = Store.open(home=home)
    store.ingest(evalset.records)
    researcher = Researcher(store)
    yield researcher, evalset.questions
    researcher.close()
    store.close()


def _mentions(text: str, answers: list[str]) -> bool:
    return any(re.search(rf"(?<!\w){re.escape(a)}(?!\w)", text, re.IGNORECASE) for a in answers)


async def _run(researcher: Researcher, q: Any) -> ResearchResult:
    return await researcher.run(
        q.question, Caller(user=q.user, groups=q.groups), RunOptions(mode="iterative")
    )


async def test_multi_hop_and_comparison_questions_are_answered_from_cited_evidence(
    acme: tuple[Researcher, list[Any]],
) -> None:
    researcher, questions = acme
    rows = [q for q in questions if q.type in ("bridge", "comparison")]
    misses = []
    for q in rows:
        result = await _run(researcher, q)
        read = " ".join(e.text for e in result.evidence)
        yes_no = q.answer.lower() in ("yes", "no")
        # The answer is in what synthesis read, and the run answered with citations.
        found = yes_no or _mentions(read, q.answers)
        cited = bool(result.citations)
        if not (result.answerable and cited and found):
            misses.append((q.id, result.answerable, cited, found))
    # Rules read no meaning: some 3-hop chains (ticket -> service -> team -> lead) stay out
    # of reach; most must not.
    print(f"multi-hop misses {len(misses)}/{len(rows)}: {misses}")
    assert len(misses) <= len(rows) // 2, misses


def _norm(text: str) -> str:
    text = re.sub(r"[^\w\s]", " ", text.casefold())
    return " ".join(w for w in text.split() if w not in ("a", "an", "the"))


async def test_comparison_and_bridge_questions_get_short_answers_and_none_is_wrong(
    acme: tuple[Researcher, list[Any]],
) -> None:
    researcher, questions = acme
    rows = [q for q in questions if q.type in ("bridge", "comparison")]
    right: list[tuple[str, str]] = []
    wrong: list[tuple[str, str]] = []
    for q in rows:
        short = (await _run(researcher, q)).short_answer
        if short is None:
            continue  # not determined: the answer quotes what was found
        (right if _norm(short) in {_norm(a) for a in q.answers} else wrong).append((q.id, short))
    print(f"short answers right {len(right)}/{len(rows)}: {right}; wrong: {wrong}")
    # Precision first: a wrong value stated as the answer is worse than none.
    assert not wrong, wrong
    # A comparison decided from each option's page, a labelled field, a chain's value.
    assert len(right) >= 4, right


async def test_unanswerable_questions_are_refused(acme: tuple[Researcher, list[Any]]) -> None:
    researcher, questions = acme
    rows = [q for q in questions if q.type == "unanswerable"]
    answered = [q.id for q in rows if (await _run(researcher, q)).answerable]
    print(f"unanswerable answered {len(answered)}/{len(rows)}: {answered}")
    # Refusal is a faithfulness check (some sentence must state what is asked next to the
    # question's names); rules read no meaning, so a near miss can still slip through.
    assert len(answered) <= 2, answered


async def test_questions_about_documents_the_caller_cannot_read_are_refused(
    acme: tuple[Researcher, list[Any]],
) -> None:
    """The same question is answered for a caller in the group and refused for one
    outside it: visible pages that merely share its words are no answer."""
    researcher, questions = acme
    refuse = [q for q in questions if q.type == "permission" and q.expect == "refuse"]
    allowed = [q for q in questions if q.type == "permission" and q.expect == "answer"]
    answered, leaked = [], []
    for q in refuse:
        result = await _run(researcher, q)
        if result.answerable:
            answered.append(q.id)
        readable = {"public", *q.groups}
        leaked += [e.doc_id for e in result.evidence if set(e.metadata.get("acl") or []) - readable]
    refused_allowed = [q.id for q in allowed if not (await _run(researcher, q)).answerable]
    print(f"permission: answered {answered}, refused while allowed {refused_allowed}")
    assert not leaked, leaked
    assert len(answered) <= 1, answered
    assert len(refused_allowed) <= 2, refused_allowed
