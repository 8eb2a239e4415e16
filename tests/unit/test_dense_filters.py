"""SearchFilter -> Qdrant filter translation and the record payload layout (no engine)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
import qdrant_edge as qe
from qdrant_client import models

from retrieval.engines import payload as pl
from retrieval.engines.base import SearchFilter
from retrieval.engines.qdrant_edge import native_filter as edge_filter
from retrieval.engines.qdrant_server import native_filter as client_filter
from retrieval.records import Meta, Record

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


def test_point_id_is_a_stable_uuid_per_record_id() -> None:
    a = pl.point_id("wiki:a#0")
    assert uuid.UUID(a).version == 5
    assert a == pl.point_id("wiki:a#0")
    assert a != pl.point_id("wiki:a#1")


def test_payload_round_trips_the_record() -> None:
    record = Record(
        id="wiki:a#3",
        source="wiki",
        text="body",
        timestamp=datetime(2024, 3, 1, 14, 0, tzinfo=timezone(timedelta(hours=2))),
        metadata={Meta.ACL: ["eng"], Meta.CHUNK_INDEX: 3, Meta.HEADING_PATH: ["A", "B"]},
    )
    payload = pl.record_to_payload(record)

    assert payload[pl.RECORD_ID] == "wiki:a#3"
    assert payload[pl.ACL] == ["eng"]
    assert payload[pl.DOC_ID] == "wiki:a"
    assert payload[pl.CHUNK_INDEX] == 3
    assert payload[pl.TIMESTAMP] == "2024-03-01T12:00:00+00:00"  # stored in UTC
    back = pl.payload_to_record(payload)
    assert back == record  # same instant, same fields


def test_payload_defaults_acl_to_public_and_naive_time_to_utc() -> None:
    record = Record(id="x:1", source="x", text="t", timestamp=datetime(2024, 1, 1), metadata={})
    payload = pl.record_to_payload(record)
    assert payload[pl.ACL] == ["public"]
    assert payload[pl.TIMESTAMP] == "2024-01-01T00:00:00+00:00"


def test_filter_spec_none_means_unconstrained_and_empty_means_nothing() -> None:
    assert pl.filter_spec(SearchFilter(acl_groups=None)).is_empty
    nothing = pl.filter_spec(SearchFilter(acl_groups=()))
    assert nothing.matches_nothing
    assert pl.filter_spec(SearchFilter(acl_groups=None, sources=())).matches_nothing
    scoped = pl.filter_spec(SearchFilter.for_groups(["eng"], sources=("wiki",)))
    assert scoped.matches == ((pl.ACL, ("eng", "public")), (pl.SOURCE, ("wiki",)))
    assert not scoped.matches_nothing


def test_filter_spec_time_bounds_are_utc() -> None:
    naive = datetime(2024, 1, 1, 8, 0)
    spec = pl.filter_spec(SearchFilter(acl_groups=None, time_from=naive, time_to=T0))
    assert spec.time_gte == datetime(2024, 1, 1, 8, 0, tzinfo=UTC)
    assert spec.time_lte == T0


def test_client_filter_has_every_constraint_in_must() -> None:
    flt = SearchFilter(
        acl_groups=("eng", "public"),
        sources=("wiki",),
        doc_ids=("wiki:a",),
        time_from=T0,
        time_to=T0 + timedelta(days=1),
    )
    native = client_filter(pl.filter_spec(flt))
    assert native == models.Filter(
        must=[
            models.FieldCondition(key="acl", match=models.MatchAny(any=["eng", "public"])),
            models.FieldCondition(key="source", match=models.MatchAny(any=["wiki"])),
            models.FieldCondition(key="doc_id", match=models.MatchAny(any=["wiki:a"])),
            models.FieldCondition(
                key="timestamp",
                range=models.DatetimeRange(gte=T0, lte=T0 + timedelta(days=1)),
            ),
        ]
    )
    assert client_filter(pl.filter_spec(SearchFilter(acl_groups=None))) is None


def test_edge_filter_has_every_constraint_in_must() -> None:
    flt = SearchFilter(acl_groups=("finance",), doc_ids=("d:1", "d:2"), time_from=T0)
    native = edge_filter(pl.filter_spec(flt))
    assert native is not None and native.must is not None
    acl, doc, ts = native.must
    assert isinstance(acl, qe.FieldCondition) and acl.key == "acl"
    assert isinstance(acl.match, qe.MatchAny) and acl.match.value == ["finance"]
    assert isinstance(doc, qe.FieldCondition) and doc.key == "doc_id"
    assert isinstance(doc.match, qe.MatchAny) and doc.match.value == ["d:1", "d:2"]
    assert isinstance(ts, qe.FieldCondition) and ts.key == "timestamp"
    assert isinstance(ts.range, qe.RangeDateTime)
    # Edge parses the bound on construction and shows it back in its own UTC form.
    assert ts.range.gte == "2024-03-01 12:00:00 UTC" and ts.range.lte is None
    assert edge_filter(pl.filter_spec(SearchFilter(acl_groups=None))) is None


def test_batch_checks_and_last_wins() -> None:
    a = Record(id="x:1#0", source="x", text="old")
    b = Record(id="x:1#0", source="x", text="new")
    with pytest.raises(ValueError, match="1 records but 2 vectors"):
        pl.check_batch([a], [[0.0, 1.0], [1.0, 0.0]], 2)
    with pytest.raises(ValueError, match="'x:1#0'.*3 dimensions"):
        pl.check_batch([a], [[0.0, 1.0, 2.0]], 2)
    kept = pl.last_wins([a, b], [[1.0, 0.0], [0.0, 1.0]])
    assert [(r.text, v) for r, v in kept] == [("new", [0.0, 1.0])]


@dataclass
class _Point:
    payload: dict[str, Any] | None
    score: float = 0.0


def test_points_become_records_in_requested_order_and_hits_in_engine_order() -> None:
    r1 = Record(id="a", source="s", text="1")
    r2 = Record(id="b", source="s", text="2")
    points = [_Point(pl.record_to_payload(r1), 0.9), _Point(pl.record_to_payload(r2), 0.5)]
    assert pl.records_in_order(["b", "zz", "a", "b"], points) == [r2, r1]
    hits = pl.dense_hits(reversed(points))
    assert [(h.record.id, h.rank, h.score, h.leg) for h in hits] == [
        ("b", 1, 0.5, "dense"),
        ("a", 2, 0.9, "dense"),
    ]


def test_scrolled_ids_come_back_in_chunk_order() -> None:
    chunks = [
        Record(id=f"s:d#{n}", source="s", text="t", metadata={Meta.CHUNK_INDEX: n})
        for n in (10, 2, 0)
    ]
    points = [_Point({pl.RECORD_ID: c.id, pl.CHUNK_INDEX: c.chunk_index}) for c in chunks]
    assert pl.ids_in_chunk_order(points) == ["s:d#0", "s:d#2", "s:d#10"]
