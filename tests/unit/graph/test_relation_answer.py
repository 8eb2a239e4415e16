"""The holder of a relation the question names: "its county seat is Newport"."""

from __future__ import annotations

from graph.extractive import extractive_answer
from graph.relation_answer import asked_relation, relation_answer
from tools.evidence import Evidence
from tools.testing import evidence


def ev(doc: str, title: str, text: str) -> Evidence:
    return evidence(doc, text, title=title)


def test_the_relation_is_the_noun_phrase_the_question_asks_the_holder_of() -> None:
    assert asked_relation("What is the county seat of the county where Ely is?") == "county seat"
    assert asked_relation("who is the owner of the payments service?") == "owner"
    assert asked_relation("What was Acme's parent company?") == "parent company"
    # a value of another type, or a description: read elsewhere
    assert asked_relation("What is the population of Ely?") is None
    assert asked_relation("What is the default of max_connections?") is None
    assert asked_relation("Who directed Red Sky?") is None


def test_the_holder_is_read_on_the_page_the_subjects_passage_names() -> None:
    town = ev("ely", "Ely", "Ely is a town in Lane County, Oregon.")
    lane = ev(
        "lane",
        "Lane County, Oregon",
        "Lane County is a county in Oregon. Its county seat is Eugene.",
    )
    # another county's page says the same of its own seat: not the one the chain reaches
    coos = ev(
        "coos",
        "Coos County, Oregon",
        "Coos County is a county in Oregon. Its county seat is Coquille.",
    )
    asked = "What is the county seat of the county where Ely, Oregon is located?"
    found = relation_answer(asked, [town, lane, coos])
    assert found is not None and found[0] == "Eugene" and found[1][0][0] == 2
    assert extractive_answer(asked, [town, lane, coos]).short_answer == "Eugene"


def test_both_word_orders_and_an_apposition_state_the_holder() -> None:
    asked = "who is the owner of the payments service?"
    for text in (
        "Dana Kim is the owner of the payments service.",
        "The owner of the payments service is Dana Kim.",
        "The payments service has one owner, Dana Kim, and two reviewers.",
    ):
        found = relation_answer(asked, [ev("p", "Payments service", text)])
        assert found is not None and found[0] == "Dana Kim", text


def test_two_holders_bound_as_well_or_an_unbound_one_are_no_answer() -> None:
    asked = "who is the owner of the payments service?"
    pages = [
        ev("a", "Payments service", "The owner of the payments service is Dana Kim."),
        ev("b", "Payments service runbook", "The owner of the payments service is Bo Chen."),
    ]
    assert relation_answer(asked, pages) is None
    # the sentence binds none of the question's other words: another service's owner
    other = [ev("c", "Ledger", "The owner is Cy Park.")]
    assert relation_answer(asked, other) is None
    # a pronoun is no holder
    assert (
        relation_answer(asked, [ev("d", "Payments service", "It is the owner of payments.")])
        is None
    )
