"""What the rule policy plans for a question's first round."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from graph.models import RunOptions
from graph.policies.base import Answer, View
from graph.policies.rule import RulePolicy, comparison_entities
from tools.catalog import Catalog


def _plan(question: str) -> list[tuple[str, dict[str, object]]]:
    view = View(
        question=question,
        round=1,
        options=RunOptions(mode="iterative", budget=10),
        ranked=[],
        new_ids=[],
        done_calls=set(),
        policy_state={},
        catalog=Catalog(),
        titles=None,
    )
    step = asyncio.run(RulePolicy().plan(view))
    return [(c.tool, dict(c.args)) for c in step.calls]


def test_the_options_of_a_choice_are_its_entities_with_or_without_a_comma() -> None:
    assert comparison_entities(
        "in reprlib, which default limit is bigger: maxstring or maxlong?", None
    ) == [
        "maxstring",
        "maxlong",
    ]
    assert comparison_entities(
        "Is the payments team or the ledger team responsible for refunds?", None
    ) == ["payments team", "ledger team"]


def test_each_option_is_looked_up_and_searched_with_the_compared_property() -> None:
    calls = _plan("in reprlib, which default limit is bigger: maxstring or maxlong?")
    looked_up = [a["name"] for tool, a in calls if tool == "lookup_entity"]
    assert looked_up == ["maxstring", "maxlong"]
    searched = [a["query"] for tool, a in calls if tool == "search_knowledge"]
    assert any(q.startswith("maxstring ") and "reprlib" in q for q in searched)
    assert any(q.startswith("maxlong ") and "reprlib" in q for q in searched)


def test_a_which_came_first_search_carries_the_words_pages_date_things_with() -> None:
    # "showed up" is how the user says it; a page writes "added in version 3.15.0" or
    # "released in 1994", so each option's search asks for those words too
    calls = _plan("which showed up in sqlite first: row values or window functions?")
    searched = [a["query"] for tool, a in calls if tool == "search_knowledge"]
    for option in ("row values", "window functions"):
        query = next(q for q in searched if q.startswith(option))
        assert {"added", "introduced", "version", "released"} <= set(query.split())
    born = _plan("Who was born first, Ada Lovelace or Charles Babbage?")
    queries = [a["query"] for tool, a in born if tool == "search_knowledge"]
    assert any(q.startswith("Ada Lovelace") and "born" in q.split() for q in queries)
    assert not any("version" in q.split() for q in queries)


async def test_the_extractive_answer_runs_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The answer runs the embedding model: other runs' streams and the API's requests,
    which share the event loop, go on meanwhile."""
    import time

    import graph.extractive

    def slow_answer(question: str, evidence: list[Any], note: str | None = None) -> Answer:
        time.sleep(0.3)  # a model's forward passes, holding no await
        return Answer(text="found", answerable=True)

    monkeypatch.setattr(graph.extractive, "extractive_answer", slow_answer)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(tick())

    async def no_tokens(delta: str) -> None:
        return None

    answer = await RulePolicy().synthesize("what is found?", [], no_tokens)
    ticker.cancel()
    assert answer.text == "found"
    assert ticks >= 10  # the loop kept turning while the answer was computed
