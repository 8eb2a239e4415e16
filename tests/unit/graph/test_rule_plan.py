"""What the rule policy plans for a question's first round."""

from __future__ import annotations

import asyncio

from graph.models import RunOptions
from graph.policies.base import View
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
