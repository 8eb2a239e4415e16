"""Which words of a question or a passage are its content terms."""

from __future__ import annotations

import pytest

from graph.text import identifier_parts, is_listing, sentences, terms


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a function word's contraction is a function word
        ("what's the port that's used", ["port", "used"]),
        ("i don't pass a timeout", ["pass", "timeout"]),
        # a name's apostrophe and a possessive stay
        ("O'Brien's deque", ["o'brien", "deque"]),
        # prepositions and adverbs like "already" are how a question asks
        ("what is behind a deque already at its maxlen", ["deque", "maxlen"]),
        # a small number is one term however it is written
        ("if the timeout is set to zero", ["timeout", "set", "0"]),
        ("timeout=0 and two replicas", ["timeout", "0", "2", "replica"]),
        # an acronym's plural is the acronym ("IPs" meets "IP address"); "Ms" is no plural
        ("client IPs on two VMs", ["client", "ip", "2", "vm"]),
        ("Ms Smith", ["ms", "smith"]),
    ],
)
def test_content_terms(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


def test_a_lowercase_variable_ends_a_sentence_an_abbreviation_does_not() -> None:
    text = (
        "Insert x at position i. If the ring is full, an error is raised. "
        "See e.g. Craig v. Boren, decided c. 1976. The U.S. Navy agreed."
    )
    assert sentences(text) == [
        "Insert x at position i.",
        "If the ring is full, an error is raised.",
        "See e.g. Craig v. Boren, decided c. 1976.",
        "The U.S. Navy agreed.",
    ]


def test_a_list_of_links_run_together_is_no_sentence() -> None:
    assert is_listing(
        "aggregate functions ALTER TABLE ANALYZE ATTACH DATABASE BEGIN TRANSACTION comment "
        "COMMIT TRANSACTION core functions CREATE INDEX CREATE TABLE CREATE TRIGGER"
    )
    # names linked by a verb, or punctuated, are a sentence however capitalised
    assert not is_listing(
        "Bobbi Bacha is a Texas Private Investigator portrayed in the Sony Pictures Movie "
        '"Suburban Madness" played by actress Sela Ward.'
    )
    assert not is_listing("Starring Sela Ward, Brian Kerwin, Mary Page Keller, Sean Bridgers.")
    assert not is_listing("Partial indexes have been supported since version 3.8.0.")


def test_identifier_parts_are_the_words_a_question_writes_apart() -> None:
    assert identifier_parts("SubstituteMaxLineLength 1m") == {"substitute", "max", "line", "length"}
    assert identifier_parts("KeepAliveTimeout") == {"keep", "alive", "timeout"}
    assert identifier_parts("SSLProtocol") == {"ssl", "protocol"}
    assert identifier_parts("shared_buffers, os.path") == {"shared", "buffer", "path"}
    # plain words, sentence-initial capitals and acronyms hold no parts
    assert identifier_parts("The HTTP server Listen directive") == frozenset()
