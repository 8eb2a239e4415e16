"""A service's README as teams write them: fields, running text, limits, history."""

from __future__ import annotations

import pytest

from graph.extractive import extractive_answer
from graph.statements import versioned_product
from tools.testing import evidence

README = evidence(
    "wiki:ledger-sync",
    "# ledger-sync\n\nledger-sync copies settled payments from the ledger into the reporting "
    "warehouse every 15 minutes.\n\nOwner: Payments Platform team (#payments-platform). "
    'On-call: see the PagerDuty schedule "payments-primary".\n\n## Running it\n\n'
    "ledger-sync needs Python 3.11 or newer and a PostgreSQL 15 database. It listens on port "
    "9102 for metrics; set LEDGER_SYNC_PORT to change it.\n\n## Limits\n\nA batch holds at "
    "most 5,000 payments. Batches larger than that are split.\n\n## History\n\nledger-sync "
    "replaced the nightly export job in March 2024. Until version 2.0 it ran hourly.",
    title="ledger-sync",
)


@pytest.mark.parametrize(
    ("question", "short"),
    [
        # "how often": the period after "every"
        ("how often does ledger-sync run?", "15 minutes"),
        ("how frequently is the warehouse updated by ledger-sync?", "15 minutes"),
        # a frequency said of the verb; "the nightly export job" says which job
        ("how often did ledger-sync run before 2.0?", "hourly"),
        # a field's value is its own sentence, without its bracket; a team answers "who owns"
        ("who owns ledger-sync?", "Payments Platform team"),
        # the version written right after the product the question names, not a year
        ("what python version does ledger-sync need?", "3.11"),
        ("which version of postgresql does ledger-sync use?", "15"),
        # a number right after the asked kind names its member: "port 9102"
        ("which port does ledger-sync expose metrics on?", "9102"),
        # "how many ... fit" asks a capacity: the bound "at most 5,000" answers it
        ("how many payments fit in one ledger-sync batch?", "5,000"),
    ],
)
def test_a_service_page_answers_in_its_own_words(question: str, short: str) -> None:
    assert extractive_answer(question, [README]).short_answer == short


def test_the_product_whose_version_is_asked() -> None:
    assert versioned_product("what python version does it need?") == "python"
    assert versioned_product("which version of postgresql does it use?") == "postgresql"
    # a question asking when asks a date, not a product's version
    assert versioned_product("when was the python version bumped?") is None
    assert versioned_product("which version added TaskGroup?") is None
    # a word that picks a version is not the product
    q = "whats the oldest version of windows that apache 2.4 will actually run on?"
    assert versioned_product(q) == "windows"
    assert versioned_product("the minimum version of openssl it needs?") == "openssl"


def test_an_attribute_the_page_never_names_is_refused_not_answered_by_another() -> None:
    answer = extractive_answer("what's the memory limit of ledger-sync?", [README])
    assert not answer.answerable and "memory" in answer.text
    # an adjective grades the attribute; the page states it without one
    answer = extractive_answer("what is the main port of ledger-sync?", [README])
    assert answer.answerable and answer.short_answer == "9102"


def test_a_linking_verb_of_the_ask_is_no_word_a_page_must_write() -> None:
    # "use" links the service to what it works with; its page says "needs"
    answer = extractive_answer("what database does ledger-sync use?", [README])
    assert answer.answerable and "PostgreSQL 15" in answer.text


def test_the_asked_phrase_and_its_narrowing_nouns() -> None:
    from graph.question import asked_phrase
    from graph.support import noun_modifiers

    assert asked_phrase("what's the memory limit of ledger-sync?") == "memory limit"
    assert noun_modifiers("memory limit", ["memory", "limit"]) == ["memory"]
    assert noun_modifiers("uppermost age range", ["uppermost", "age", "range"]) == ["age"]
    assert noun_modifiers("original name", ["original", "name"]) == []
