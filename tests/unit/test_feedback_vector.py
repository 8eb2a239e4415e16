"""Rocchio feedback in embedding space: the query moved toward passages already found."""

from __future__ import annotations

import math

import pytest

from retrieval.embedding import moved_toward


def test_the_query_moves_toward_the_passages_and_stays_unit_length() -> None:
    moved = moved_toward([1.0, 0.0], [[0.0, 1.0]])
    assert moved == pytest.approx([math.sqrt(0.5), math.sqrt(0.5)])
    assert math.hypot(*moved_toward([1.0, 0.0], [[0.0, 1.0], [0.6, 0.8]])) == pytest.approx(1.0)


def test_the_weight_sets_how_far_it_moves() -> None:
    near_query = moved_toward([1.0, 0.0], [[0.0, 1.0]], weight=0.25)
    near_passage = moved_toward([1.0, 0.0], [[0.0, 1.0]], weight=4.0)
    assert near_query[0] > near_query[1] and near_passage[1] > near_passage[0]


def test_no_passages_leave_the_direction_of_the_query() -> None:
    assert moved_toward([3.0, 4.0], []) == pytest.approx([0.6, 0.8])


def test_a_vector_of_another_size_is_an_error() -> None:
    with pytest.raises(ValueError, match="3 dims"):
        moved_toward([1.0, 0.0], [[1.0, 0.0, 0.0]])
