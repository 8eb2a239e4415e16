"""Which words of a question or a passage are its content terms."""

from __future__ import annotations

import pytest

from graph.text import terms


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
    ],
)
def test_content_terms(text: str, expected: list[str]) -> None:
    assert terms(text) == expected
