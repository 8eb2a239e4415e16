"""A name asked for by its class: the page of that class the question's words bind to."""

from __future__ import annotations

from graph.class_answer import asked_class, class_answer
from graph.extractive import extractive_answer
from tools.evidence import Evidence, Provenance
from tools.testing import evidence


def ev(doc: str, title: str, text: str) -> Evidence:
    return evidence(doc, text, title=title)


QUINT = ev(
    "quint",
    "Mara Quint",
    "Mara Quint (born 4 May 1960) is a bridge designer. "
    "She studied at Hollowell Institute before joining the city office.",
)
HOLLOWELL = ev(
    "hollowell",
    "Hollowell Institute",
    "Hollowell Institute is a private engineering school in Lisbon, founded in 1887.",
).model_copy(  # opened by following the mention on Mara Quint's page
    update={
        "provenance": [
            Provenance(round=2, tool="get_links", query="Hollowell Institute", parent="quint#0")
        ]
    }
)
DORN = ev("dorn", "Dorn Academy", "Dorn Academy is an engineering school founded in 1920.")


def test_the_class_phrase_ends_with_its_head_noun() -> None:
    assert asked_class("Mara studied at what engineering school that was founded in 1887?") == [
        "engineering",
        "school",
    ]
    assert asked_class("What is the name of the ethnic group who settled there?") == [
        "ethnic",
        "group",
    ]
    assert asked_class("what is the capital?") == []
    # a comma, or a participle before a name or an article, ends the phrase; a name
    # spelled with "of" inside it does not
    assert asked_class("What fantasy series, told in first person, has companion books?") == [
        "fantasy",
        "sery",
    ]
    assert asked_class("Which drama film starring Ann Lee was shot in Lisbon?") == [
        "drama",
        "film",
    ]
    assert asked_class("which Writers Hall of Fame author has written it?")[-1] == "author"
    assert asked_class("which recording studio did they use?") == ["recording", "studio"]
    assert asked_class("Which Danish king was born in 1500?") == ["danish", "king"]
    assert asked_class("which oil painting in the Louvre is oldest?") == ["oil", "painting"]


def test_a_definition_ends_before_its_preposition() -> None:
    """ "X is the second companion book to the Y series" defines a book, not a series."""
    book = ev(
        "chronicles",
        "The Hidden Chronicles",
        'The Hidden Chronicles is the second companion book to the "Morphs" series, '
        "written by K. A. Apple.",
    )
    question = "Which science fiction series was written by K. A. Apple?"
    assert class_answer(question, [book]) is None


def test_the_page_of_the_asked_class_that_the_question_binds_to_is_the_answer() -> None:
    question = "Mara Quint studied at what engineering school that was founded in 1887?"
    found = class_answer(question, [QUINT, DORN, HOLLOWELL])
    assert found is not None
    name, support = found
    assert name == "Hollowell Institute"
    # the passage that names it (the hop), then its own defining sentence
    assert [n for n, _ in support] == [1, 3]
    answer = extractive_answer(question, [QUINT, DORN, HOLLOWELL])
    assert answer.short_answer == "Hollowell Institute"
    assert "[1]" in answer.text and "[3]" in answer.text and "[2]" not in answer.text


def test_two_pages_that_bind_as_well_are_no_answer() -> None:
    both = ev(
        "quint",
        "Mara Quint",
        "Mara Quint (born 4 May 1960) studied at Hollowell Institute and Dorn Academy.",
    )
    dorn = ev("dorn", "Dorn Academy", "Dorn Academy is an engineering school in Lisbon.")
    hollowell = ev(
        "hollowell",
        "Hollowell Institute",
        "Hollowell Institute is an engineering school in Lisbon.",
    )
    question = "Mara Quint studied at what engineering school?"
    assert class_answer(question, [both, dorn, hollowell]) is None


def test_a_page_the_question_names_is_a_hop_not_the_answer() -> None:
    question = "Which engineering school did Hollowell Institute absorb in 1887?"
    assert class_answer(question, [HOLLOWELL]) is None


def test_a_description_is_not_a_name() -> None:
    page = ev(
        "heapq",
        "heapq — heap queue algorithm",
        "This module provides an implementation of the heap queue algorithm for the shuffler.",
    )
    assert class_answer("what algorithm does the shuffler use?", [page]) is None


def test_a_class_the_question_gives_another_thing_is_ambiguous() -> None:
    king = ev("kell", "Kell", "Kell was the king of the Oster Empire from 631.")
    oster = ev(
        "oster", "Oster Empire", "The Oster Empire was an empire that succeeded the Vale Empire."
    )
    question = "Kell was the king of an empire that succeeded which empire?"
    assert class_answer(question, [king, oster]) is None


def test_the_class_is_the_head_noun_of_what_the_opening_calls_it() -> None:
    coach = ev("hale", "Jim Hale", "Jim Hale is an American college football coach in Ohio.")
    question = "Which college in Ohio was founded in 1887?"
    assert class_answer(question, [coach]) is None  # a coach, not a college
    both = ev("weiss", "Dan Weiss", "Dan Weiss is a screenwriter and film producer from Ohio.")
    found = class_answer("Which film producer from Ohio wrote it?", [both])
    assert found is not None and found[0] == "Dan Weiss"


def test_an_adverb_before_the_closing_participle_is_not_the_head() -> None:
    film = ev(
        "gale",
        "Gale Point",
        "Gale Point is a 2004 American action film loosely based on a comic by Ida Roe.",
    )
    found = class_answer("Which film based on a comic by Ida Roe came out in 2004?", [film])
    assert found is not None and found[0] == "Gale Point"


def test_a_naming_sentence_is_read_with_its_page_title() -> None:
    # "It was hosted by Ann Lee" binds the awards its page is about; a hyphenated class
    # ("singer-songwriter") is met by its last part
    awards = ev(
        "awards",
        "9th Lantern Awards",
        "The 9th Lantern Awards were held in 2002. It was hosted by Ann Lee.",
    )
    lee = ev("lee", "Ann Lee", "Ann Lee (born 1970) is an English singer, songwriter and actress.")
    other = ev("roe", "Bo Roe", "Bo Roe (born 1961) is an English songwriter.")
    found = class_answer(
        "What English singer-songwriter hosted the 9th Lantern Awards?", [awards, lee, other]
    )
    assert found is not None and found[0] == "Ann Lee"
