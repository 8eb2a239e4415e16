"""The Elasticsearch request bodies (the server itself is exercised by the contract suite
when WAYPOINT_ES_URL is set)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from retrieval.engines.base import SearchFilter
from retrieval.engines.elastic import filter_clauses, record_to_source, search_query
from retrieval.engines.record_codec import decode_record, encode_record, epoch_micros
from retrieval.records import Meta, Record

T0 = datetime(2024, 3, 1, 12, 0, 0, tzinfo=UTC)


def test_user_text_is_plain_multi_match_never_query_string() -> None:
    hostile = 'foo AND (bar "unbalanced title:secret *'
    body = search_query(hostile, SearchFilter(acl_groups=None))
    assert body is not None
    assert "query_string" not in json.dumps(body)
    must = body["bool"]["must"][0]["multi_match"]
    assert must["query"] == hostile
    assert must["fields"] == ["title^2", "text"]


def test_filters_go_into_bool_filter() -> None:
    flt = SearchFilter(
        acl_groups=("eng", "public"),
        sources=("wiki",),
        doc_ids=("wiki:a",),
        time_from=T0,
        time_to=T0 + timedelta(microseconds=5),
    )
    body = search_query("x", flt)
    assert body is not None
    assert body["bool"]["filter"] == [
        {"terms": {"acl": ["eng", "public"]}},
        {"terms": {"source": ["wiki"]}},
        {"terms": {"doc_id": ["wiki:a"]}},
        {"range": {"timestamp_us": {"gte": epoch_micros(T0), "lte": epoch_micros(T0) + 5}}},
    ]


def test_no_acl_filter_only_when_asked_and_empty_allow_list_matches_nothing() -> None:
    assert filter_clauses(SearchFilter(acl_groups=None)) == []
    assert filter_clauses(SearchFilter(acl_groups=())) is None
    assert filter_clauses(SearchFilter(acl_groups=None, sources=())) is None
    assert search_query("x", SearchFilter(acl_groups=())) is None
    assert search_query("   ", SearchFilter(acl_groups=None)) is None


def test_stored_source_round_trips_the_record() -> None:
    record = Record(
        id="wiki:a#3",
        source="wiki",
        text="body",
        timestamp=T0,
        metadata={Meta.TITLE: "T", Meta.ACL: ["eng", "eng"], "nested": {"k": [1, 2]}},
    )
    source = record_to_source(record)
    assert source["doc_id"] == "wiki:a" and source["acl"] == ["eng"]
    assert source["timestamp_us"] == epoch_micros(T0)
    assert Record.model_validate(source["record"]) == record
    assert decode_record(encode_record(record)) == record


def test_epoch_micros_is_exact_and_treats_naive_as_utc() -> None:
    assert epoch_micros(datetime(1970, 1, 1, tzinfo=UTC)) == 0
    assert epoch_micros(datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)) == -1
    assert epoch_micros(T0.replace(tzinfo=None)) == epoch_micros(T0)
