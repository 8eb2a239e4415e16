"""The stored-record codec: what is written is exactly what comes back."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from retrieval.engines.record_codec import decode_record, encode_record, record_from_dict
from retrieval.records import Record

RECORDS = [
    Record(id="wiki:a#0", source="wiki", text="plain"),
    Record(
        id="chat:t#3",
        source="chat",
        text='naïve café — 😀 "quoted" \\ back\nslash',
        timestamp=datetime(1999, 12, 31, 23, 59, 59, 123456, tzinfo=UTC),
        metadata={
            "title": "Ünïcode",
            "acl": ["hr", "public"],
            "chunk_index": 3,
            "big": 2**70,
            "float": 0.1 + 0.2,
            "tiny": 5e-324,
            "negative_zero": -0.0,
            "nested": {"list": [1, "a", None, {"k": 1e308}], "flag": True},
            "nan": float("nan"),  # stored as JSON null (model_dump(mode="json"))
        },
    ),
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.id)
def test_decode_is_the_json_round_trip(record: Record) -> None:
    blob = encode_record(record)
    # The one-pass decode gives exactly what json.loads + validation gives.
    expected = record_from_dict(json.loads(blob))
    decoded = decode_record(blob)
    assert decoded == expected
    assert repr(decoded.metadata) == repr(expected.metadata)  # -0.0, float digits
    assert decode_record(blob.decode("utf-8")) == expected  # a str blob decodes the same


def test_decode_keeps_what_was_stored() -> None:
    decoded = decode_record(encode_record(RECORDS[1]))
    assert decoded.timestamp == RECORDS[1].timestamp
    assert decoded.text == RECORDS[1].text
    assert decoded.metadata["big"] == 2**70 and isinstance(decoded.metadata["big"], int)
    assert decoded.metadata["nan"] is None


def test_deeply_nested_metadata_still_decodes() -> None:
    """pydantic's JSON parser stops at ~200 levels where json.loads went on: such records
    are read the old way rather than failing the search that reaches them."""
    nested: dict[str, object] = {"leaf": 1}
    for _ in range(240):
        nested = {"n": nested}
    record = Record(id="wiki:deep#0", source="wiki", text="deep", metadata={"tree": nested})
    blob = encode_record(record)
    with pytest.raises(ValueError):
        Record.model_validate_json(blob)  # the fast path alone would fail here
    assert decode_record(blob) == record == record_from_dict(json.loads(blob))


@pytest.mark.parametrize(
    "blob",
    [b'{"id": "x", "source": "s"', b'{"id": "x"}', b"[1, 2]", b""],
    ids=["truncated", "not-a-record", "not-an-object", "empty"],
)
def test_decode_rejects_what_is_not_a_record(blob: bytes) -> None:
    with pytest.raises(ValueError):  # JSONDecodeError and ValidationError are ValueErrors
        decode_record(blob)
