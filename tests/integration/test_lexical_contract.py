"""The LexicalEngine contract, run against every real lexical engine.

tantivy runs on disk under ``tmp_path``; Elasticsearch runs when ``WAYPOINT_ES_URL`` points
at a server (each test uses its own throw-away index).
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from retrieval.engines.base import Hit, LexicalEngine, SearchFilter
from retrieval.engines.tantivy_engine import TantivyLexicalEngine
from retrieval.records import PUBLIC_GROUP, Meta, Record

pytestmark = pytest.mark.integration

T0 = datetime(2024, 3, 1, 12, 0, 0, tzinfo=UTC)
ANYONE = SearchFilter(acl_groups=None)  # trusted internal use: no ACL restriction


@dataclass
class Harness:
    """Opens engines on one index location and closes whatever it opened."""

    opener: Callable[..., LexicalEngine]
    opened: list[LexicalEngine] = field(default_factory=list)

    def open(self, **kw: Any) -> LexicalEngine:
        engine = self.opener(**kw)
        self.opened.append(engine)
        return engine

    def close_all(self) -> None:
        for engine in self.opened:
            engine.close()


def _tantivy_harness(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(lambda **kw: TantivyLexicalEngine(tmp_path / "lexical", **kw))
    yield harness
    harness.close_all()


def _elastic_harness() -> Iterator[Harness]:
    url = os.environ.get("WAYPOINT_ES_URL")
    if not url:
        pytest.skip("WAYPOINT_ES_URL is not set: no Elasticsearch server to test against")
    from elasticsearch import Elasticsearch

    from retrieval.engines.elastic import ElasticLexicalEngine

    client = Elasticsearch(url, request_timeout=30)
    index = f"waypoint-contract-{uuid.uuid4().hex[:12]}"
    harness = Harness(lambda **kw: ElasticLexicalEngine(client, index, **kw))
    yield harness
    harness.close_all()
    client.indices.delete(index=index, ignore_unavailable=True)
    client.close()


@pytest.fixture(params=["tantivy", "elasticsearch"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    if request.param == "tantivy":
        yield from _tantivy_harness(tmp_path)
    else:
        yield from _elastic_harness()


@pytest.fixture
def engine(harness: Harness) -> LexicalEngine:
    return harness.open()


def rec(
    rid: str,
    text: str,
    *,
    source: str = "wiki",
    title: str = "",
    acl: list[str] | None = None,
    ts: datetime = T0,
    **meta: Any,
) -> Record:
    doc_id, _, n = rid.partition("#")
    metadata: dict[str, Any] = {Meta.DOC_ID: doc_id, Meta.CHUNK_INDEX: int(n or 0), **meta}
    if title:
        metadata[Meta.TITLE] = title
    if acl is not None:
        metadata[Meta.ACL] = acl
    return Record(id=rid, source=source, text=text, timestamp=ts, metadata=metadata)


def ids(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits]


FILLER = [
    rec("wiki:f1#0", "The checkout service talks to the payments gateway.", title="Checkout"),
    rec("wiki:f2#0", "Deploys happen on Tuesdays after the advisory board.", title="Deploy days"),
    rec("wiki:f3#0", "Our on-call rotation is weekly; handover is on Monday.", title="On-call"),
    rec("wiki:f4#0", "Grafana dashboards show latency percentiles.", title="Dashboards"),
]


# -- basics ------------------------------------------------------------------------------


def test_engine_satisfies_protocol(engine: LexicalEngine) -> None:
    assert isinstance(engine, LexicalEngine)
    assert engine.count() == 0
    assert engine.search("anything", 5, ANYONE) == []


@pytest.mark.parametrize("k", [2**62, 2**63 - 1])
def test_a_huge_k_returns_what_there_is(engine: LexicalEngine, k: int) -> None:
    # tantivy reserves room for k hits: 2^62 panicked ("capacity overflow") and 10^12 (not
    # run here: it aborted the process) asked for 16 TB. No search finds more than exists.
    engine.upsert([rec("wiki:z#0", "zebra crossing"), *FILLER])
    assert ids(engine.search("zebra", k, ANYONE)) == ["wiki:z#0"]


def test_round_trip_get_count_ids_for_doc(engine: LexicalEngine) -> None:
    records = [
        rec("wiki:guide#2", "third part", title="Guide", author="ana", heading_path=["A", "B"]),
        rec("wiki:guide#0", "first part", title="Guide", acl=["eng", "ops"]),
        rec("wiki:guide#1", "second part", title="Guide", ts=T0 + timedelta(microseconds=7)),
        rec("wiki:other#0", "unrelated"),
    ]
    engine.upsert(records)

    assert engine.count() == 4
    got = engine.get(["wiki:guide#1", "missing#0", "wiki:guide#2", "wiki:guide#1"])
    assert got == [records[2], records[0]]  # input order, missing skipped, repeats collapsed
    assert engine.ids_for_doc("wiki:guide") == ["wiki:guide#0", "wiki:guide#1", "wiki:guide#2"]
    assert engine.ids_for_doc("wiki:nothing") == []


def test_hits_are_ranked_lexical_hits_carrying_the_record(engine: LexicalEngine) -> None:
    target = rec("wiki:alpha#0", "zebra migration notes", title="Zebra", acl=["eng"], team="x")
    engine.upsert([target, *FILLER])

    hits = engine.search("zebra", 5, ANYONE)

    assert ids(hits) == ["wiki:alpha#0"]
    assert hits[0].rank == 1 and hits[0].leg == "lexical" and hits[0].score > 0
    assert hits[0].record == target


# -- ranking -----------------------------------------------------------------------------


def test_exact_error_code_ranks_first(engine: LexicalEngine) -> None:
    exact = rec("tickets:T-1#0", "Checkout fails with ERR-4012 when the card is expired.")
    # The same pieces, apart and repeated: a bag-of-words scorer alone would prefer it.
    pieces = rec(
        "tickets:T-2#0",
        "err err: retry 4012 times? 4012 is the port; err logs rotate on 4012 boundaries.",
    )
    engine.upsert([pieces, exact, *FILLER])

    for query in ("ERR-4012", "what does ERR-4012 mean"):
        hits = engine.search(query, 5, ANYONE)
        assert ids(hits)[0] == "tickets:T-1#0", query


def test_exact_identifier_ranks_first(engine: LexicalEngine) -> None:
    engine.upsert(
        [
            rec("wiki:svc#0", "payments-api-v2 is owned by the billing team."),
            rec("wiki:svc2#0", "The api of payments v1 and v3 is documented elsewhere."),
            *FILLER,
        ]
    )
    assert ids(engine.search("payments-api-v2", 5, ANYONE))[0] == "wiki:svc#0"


def test_title_match_is_boosted(harness: Harness) -> None:
    plain = harness.open(title_boost=1.0)
    plain.upsert(
        [
            rec("wiki:x#0", "steps to restart the broker cluster safely", title="Kafka runbook"),
            rec("wiki:y#0", "steps to restart the kafka cluster safely", title="Runbook"),
            *FILLER,
        ]
    )
    boosted = harness.open()  # default boost, same index

    flat = {h.id: h.score for h in plain.search("kafka", 5, ANYONE)}
    lifted = boosted.search("kafka", 5, ANYONE)

    assert ids(lifted)[0] == "wiki:x#0"
    by_id = {h.id: h.score for h in lifted}
    assert by_id["wiki:x#0"] > flat["wiki:x#0"] * 1.5  # the title clause is boosted
    assert by_id["wiki:y#0"] == pytest.approx(flat["wiki:y#0"])  # text-only match is not


HOSTILE = [
    "foo AND (bar",
    '"unbalanced',
    "title:secret",
    "acl:finance",
    "*",
    "?",
    "a:b:c ~2 ^3",
    "\\",
    "[1 TO",
    "{*}",
    "-",
    "NOT",
    "/regex.*/",
    "ERR-4012 AND (",
    "+++---",
    "",
    "   ",
    "\x00\n\t",
    "x" * 500,
    "word " * 400,
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_query_syntax_is_plain_text(engine: LexicalEngine, query: str) -> None:
    engine.upsert(
        [
            rec("tickets:T-1#0", "Checkout fails with ERR-4012 foo bar."),
            rec("hr:s#0", "secret salary table", acl=["finance"]),
            *FILLER,
        ]
    )
    hits = engine.search(query, 5, SearchFilter.for_groups(["eng"]))
    assert isinstance(hits, list)
    assert "hr:s#0" not in ids(hits)


def test_query_words_that_look_like_syntax_still_match(engine: LexicalEngine) -> None:
    engine.upsert([rec("tickets:T-1#0", "Checkout fails with ERR-4012 foo bar."), *FILLER])
    assert ids(engine.search("ERR-4012 AND (", 5, ANYONE))[0] == "tickets:T-1#0"
    assert ids(engine.search('foo AND (bar "unbalanced', 5, ANYONE))[0] == "tickets:T-1#0"


# -- filters (inside the engine query) ---------------------------------------------------


def test_acl_filter_is_inside_the_query(engine: LexicalEngine) -> None:
    restricted = rec("hr:plan#0", "revenue revenue revenue forecast revenue", acl=["finance"])
    allowed = rec("wiki:rep#0", "a short note mentioning revenue once among many other words")
    engine.upsert([restricted, allowed, *FILLER])

    everyone = engine.search("revenue", 10, ANYONE)
    assert ids(everyone)[0] == "hr:plan#0"  # the restricted doc really is the best match

    eng = SearchFilter.for_groups(["eng"])  # ("eng", "public")
    assert ids(engine.search("revenue", 10, eng)) == ["wiki:rep#0"]
    # k=1: a post-filter would fetch the restricted best match and return nothing.
    assert ids(engine.search("revenue", 1, eng)) == ["wiki:rep#0"]

    finance_only = SearchFilter(acl_groups=("finance",))
    assert ids(engine.search("revenue", 10, finance_only)) == ["hr:plan#0"]
    assert "hr:plan#0" in ids(engine.search("revenue", 10, SearchFilter.for_groups(["finance"])))
    assert engine.search("revenue", 10, SearchFilter(acl_groups=())) == []


def test_multi_group_acl_matches_any_group(engine: LexicalEngine) -> None:
    engine.upsert([rec("wiki:m#0", "roadmap draft", acl=["eng", "product"]), *FILLER])
    assert ids(engine.search("roadmap", 5, SearchFilter(acl_groups=("product",)))) == ["wiki:m#0"]
    assert engine.search("roadmap", 5, SearchFilter(acl_groups=("sales", PUBLIC_GROUP))) == []


def test_source_and_doc_id_filters(engine: LexicalEngine) -> None:
    engine.upsert(
        [
            rec("wiki:a#0", "incident review notes", source="wiki"),
            rec("wiki:a#1", "incident timeline", source="wiki"),
            rec("slack:b#0", "incident chatter in the channel", source="slack"),
            rec("tickets:c#0", "incident ticket", source="tickets"),
        ]
    )
    assert set(
        ids(engine.search("incident", 10, SearchFilter(acl_groups=None, sources=("slack",))))
    ) == {"slack:b#0"}
    two = SearchFilter(acl_groups=None, sources=("slack", "tickets"))
    assert set(ids(engine.search("incident", 10, two))) == {"slack:b#0", "tickets:c#0"}
    one_doc = SearchFilter(acl_groups=None, doc_ids=("wiki:a",))
    assert set(ids(engine.search("incident", 10, one_doc))) == {"wiki:a#0", "wiki:a#1"}
    # k=1 with a doc filter still returns a chunk of that document.
    assert ids(
        engine.search("incident", 1, SearchFilter(acl_groups=None, doc_ids=("tickets:c",)))
    ) == ["tickets:c#0"]
    assert engine.search("incident", 10, SearchFilter(acl_groups=None, sources=())) == []


def test_time_range_filter_is_inclusive_and_exact(engine: LexicalEngine) -> None:
    engine.upsert(
        [
            rec("wiki:old#0", "release notes", ts=T0 - timedelta(days=30)),
            rec("wiki:mid#0", "release notes", ts=T0 + timedelta(microseconds=700)),
            rec("wiki:new#0", "release notes", ts=T0 + timedelta(days=30)),
        ]
    )

    def found(**kw: Any) -> set[str]:
        return set(ids(engine.search("release", 10, SearchFilter(acl_groups=None, **kw))))

    assert found(time_from=T0) == {"wiki:mid#0", "wiki:new#0"}
    assert found(time_to=T0) == {"wiki:old#0"}
    assert found(time_from=T0, time_to=T0 + timedelta(days=1)) == {"wiki:mid#0"}
    # Sub-second bounds are exact and inclusive (no rounding to whole seconds).
    mid = T0 + timedelta(microseconds=700)
    assert found(time_from=mid, time_to=mid) == {"wiki:mid#0"}
    assert found(time_from=mid + timedelta(microseconds=1), time_to=T0 + timedelta(days=1)) == set()
    # Naive datetimes are UTC.
    assert found(time_from=T0.replace(tzinfo=None) + timedelta(days=29)) == {"wiki:new#0"}


# -- writes ------------------------------------------------------------------------------


def test_reupsert_replaces(engine: LexicalEngine) -> None:
    engine.upsert([rec("wiki:r#0", "the old wording about pelicans"), *FILLER])
    before = engine.count()

    engine.upsert([rec("wiki:r#0", "the new wording about flamingos")])

    assert engine.count() == before
    assert ids(engine.search("flamingos", 5, ANYONE)) == ["wiki:r#0"]
    assert engine.search("pelicans", 5, ANYONE) == []
    assert engine.get(["wiki:r#0"])[0].text == "the new wording about flamingos"


def test_duplicate_ids_in_one_batch_last_wins(engine: LexicalEngine) -> None:
    engine.upsert([rec("wiki:d#0", "first version ibis"), rec("wiki:d#0", "second version heron")])
    assert engine.count() == 1
    assert engine.get(["wiki:d#0"])[0].text == "second version heron"
    assert engine.search("ibis", 5, ANYONE) == []


def test_upsert_with_delete_ids_swaps_a_chunk_set(engine: LexicalEngine) -> None:
    engine.upsert([rec(f"wiki:s#{i}", f"old chunk {i} of swallow") for i in range(4)])
    upsert: Any = engine.upsert  # delete_ids is an extension of both lexical engines
    upsert(
        [rec("wiki:s#0", "new swallow"), rec("wiki:s#1", "new swallow")],
        delete_ids=["wiki:s#2", "wiki:s#3"],
    )
    assert engine.ids_for_doc("wiki:s") == ["wiki:s#0", "wiki:s#1"]
    assert engine.count() == 2


def test_delete_and_delete_source(engine: LexicalEngine) -> None:
    engine.upsert(
        [
            rec("wiki:a#0", "heron one", source="wiki"),
            rec("wiki:a#1", "heron two", source="wiki"),
            rec("slack:b#0", "heron three", source="slack"),
            rec("slack:b#1", "heron four", source="slack"),
        ]
    )

    engine.delete(["wiki:a#1", "not-there#0"])
    assert engine.count() == 3
    assert "wiki:a#1" not in ids(engine.search("heron", 10, ANYONE))
    assert engine.get(["wiki:a#1"]) == []

    engine.delete_source("slack")
    assert engine.count() == 1
    assert ids(engine.search("heron", 10, ANYONE)) == ["wiki:a#0"]
    engine.delete_source("no-such-source")
    assert engine.count() == 1


def test_persists_across_close_and_reopen(harness: Harness) -> None:
    first = harness.open()
    first.upsert([rec("wiki:p#0", "persistent puffin", acl=["eng"]), *FILLER])
    first.delete(["wiki:f1#0"])
    first.close()

    again = harness.open()
    assert again.count() == 4
    assert ids(again.search("puffin", 5, SearchFilter.for_groups(["eng"]))) == ["wiki:p#0"]
    assert again.get(["wiki:f1#0"]) == []
    again.upsert([rec("wiki:p#1", "second puffin")])  # still writable after reopen
    assert again.count() == 5


def test_two_engines_on_one_location_share_writes(harness: Harness) -> None:
    a = harness.open()
    b = harness.open()
    a.upsert([rec("wiki:a#0", "osprey")])
    b.upsert([rec("wiki:b#0", "osprey")])
    assert a.count() == b.count() == 2
    a.close()
    b.upsert([rec("wiki:c#0", "osprey")])  # closing one does not break the other
    assert b.count() == 3


def test_concurrent_reader_never_sees_a_half_replaced_document(engine: LexicalEngine) -> None:
    chunks = 4
    rounds = 25
    engine.upsert([rec(f"wiki:live#{i}", f"kestrel chunk {i} version 0") for i in range(chunks)])
    engine.upsert(FILLER)
    only_doc = SearchFilter(acl_groups=None, doc_ids=("wiki:live",))

    writing_done = threading.Event()
    reads = 0
    read_cond = threading.Condition()
    problems: list[str] = []
    errors: list[BaseException] = []

    def reader() -> None:
        nonlocal reads
        try:
            while not writing_done.is_set():
                seen = ids(engine.search("kestrel", 50, only_doc))
                if len(seen) != chunks or len(set(seen)) != chunks:
                    problems.append(f"search saw {seen}")
                listed = engine.ids_for_doc("wiki:live")
                if len(listed) != chunks:
                    problems.append(f"ids_for_doc saw {listed}")
                with read_cond:
                    reads += 1
                    read_cond.notify_all()
        except BaseException as exc:  # surfaced to the test thread below
            errors.append(exc)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    try:
        for version in range(1, rounds + 1):
            engine.upsert(
                [
                    rec(f"wiki:live#{i}", f"kestrel chunk {i} version {version}")
                    for i in range(chunks)
                ]
            )
            # Let the reader take at least one look between two replacements.
            with read_cond:
                target = reads + 1
                assert read_cond.wait_for(
                    lambda target=target: reads >= target or bool(errors), timeout=60
                )
    finally:
        writing_done.set()
        thread.join(timeout=60)

    assert not errors, errors
    assert not problems, problems[:5]
    assert reads >= rounds
    final = engine.get([f"wiki:live#{i}" for i in range(chunks)])
    assert {r.text.rsplit(" ", 1)[1] for r in final} == {str(rounds)}


# -- statistics --------------------------------------------------------------------------


def test_doc_freq_counts_analysed_terms(engine: LexicalEngine) -> None:
    engine.upsert(
        [
            rec("wiki:a#0", "The runner was running late"),
            rec("wiki:b#0", "She runs every morning; running helps"),
            rec("wiki:c#0", "Nothing to see here"),
        ]
    )
    df, total = engine.doc_freq(["Running", "zxqvword"])
    assert total == 3
    assert df["run"] == 2  # lower-cased and stemmed like the indexed text
    assert df["zxqvword"] == 0
    assert engine.doc_freq([]) == ({}, 3)


# -- tantivy specifics -------------------------------------------------------------------

_HOLD_WRITER = """
import sys
from pathlib import Path
from retrieval.engines.tantivy_engine import TantivyLexicalEngine
from retrieval.records import Record
engine = TantivyLexicalEngine(Path(sys.argv[1]))
engine.upsert([Record(id="wiki:held#0", source="wiki", text="written by the other process")])
print("ready", flush=True)
sys.stdin.readline()
engine.close()
"""


def test_tantivy_second_process_reads_and_gets_a_clear_error_on_write(tmp_path: Path) -> None:
    import subprocess
    import sys

    from retrieval.engines.tantivy_engine import LexicalIndexLocked

    path = tmp_path / "lexical"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_WRITER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        engine = TantivyLexicalEngine(path)
        try:
            assert engine.count() == 1  # reading needs no lock
            assert ids(engine.search("other process", 5, ANYONE)) == ["wiki:held#0"]
            with pytest.raises(LexicalIndexLocked, match="another process"):
                engine.upsert([rec("wiki:mine#0", "mine")])
            assert engine.count() == 1  # nothing half-written

            assert holder.stdin is not None
            holder.stdin.write("done\n")
            holder.stdin.flush()
            assert holder.wait(timeout=60) == 0

            engine.upsert([rec("wiki:mine#0", "mine")])  # the lock is free again
            assert engine.count() == 2
        finally:
            engine.close()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=60)
