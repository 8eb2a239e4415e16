"""hybrid_search against the real Store: tantivy on disk, Qdrant Edge on disk, MiniLM.

The corpus is ~30 hand-written records of a fictional company. Each test pins one reason
the pipeline exists: lexical finds exact identifiers, dense finds paraphrases, fusion keeps
both, ACLs hold inside the engines, a failed leg degrades instead of failing.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from retrieval.engines.base import SearchFilter
from retrieval.pipeline import hybrid_search
from retrieval.records import Record
from retrieval.rerank import NO_MODEL_WARNING
from retrieval.search_models import SearchOptions
from retrieval.store import Store, embedding_text
from tests.conftest import make_record

pytestmark = pytest.mark.integration

T0 = datetime(2026, 1, 1, tzinfo=UTC)

PASSAGES: list[tuple[str, str, str]] = [
    ("payments-errors", "Payment error codes",
     "Checkout returns ERR-4012 when the card issuer declines a tokenised payment; retry "
     "with a fresh token after the customer re-authenticates."),
    ("payments-limits", "Payment limits",
     "Checkout rejects payments above the daily limit of the merchant account with a "
     "limit-exceeded error; finance can raise the limit per merchant."),
    ("password-reset", "Regaining access to your account",
     "Forgot the secret you sign in with? Open the sign-in page, choose 'reset', and we "
     "email a one-time link valid for 30 minutes."),
    ("vpn", "VPN setup",
     "Install the WireGuard client, import the profile from the IT portal and connect "
     "before opening internal dashboards."),
    ("oncall", "On-call rotation",
     "The platform team rotates on-call weekly on Mondays at 10:00; the schedule lives in "
     "PagerDuty under 'platform-primary'."),
    ("deploy", "Deploying services",
     "Services deploy through the release pipeline; a canary takes 5% of traffic for 20 "
     "minutes before full rollout."),
    ("kafka", "Kafka brokers",
     "Kafka brokers run three per region; certificates rotate quarterly and the audit "
     "checks broker TLS settings."),
    ("expenses", "Expense reports",
     "Submit receipts within 30 days; travel above 500 euros needs a manager's approval "
     "before booking."),
    ("holidays", "Vacation policy",
     "Employees get 27 days of paid leave per year; unused days carry over until March."),
    ("laptops", "Laptop replacement",
     "Laptops are replaced every three years; a broken screen is repaired by the IT desk "
     "within two working days."),
    ("db-backups", "Database backups",
     "Postgres clusters take a full backup nightly at 02:00 UTC and keep WAL archives "
     "for 14 days in object storage."),
    ("search-service", "Search service",
     "The search service answers queries with a hybrid of BM25 and embeddings; it is "
     "owned by the discovery team led by Priya Natarajan."),
    ("incident-2025-11", "Incident 2025-11 postmortem",
     "On 12 November the checkout latency spiked because a Redis node ran out of memory; "
     "eviction policy was changed to allkeys-lru."),
    ("coffee", "Office coffee machine",
     "The coffee machine on floor 3 is descaled every Friday; report faults to facilities."),
    ("parking", "Parking",
     "Parking spots are assigned by lottery each quarter; bicycles park in the basement."),
    ("style-guide", "Writing style guide",
     "Write short sentences, prefer active voice, and spell out acronyms on first use."),
    ("api-rate-limits", "API rate limits",
     "Public API clients may send 100 requests per second; above that the gateway answers "
     "HTTP 429 with a Retry-After header."),
    ("feature-flags", "Feature flags",
     "Feature flags are managed in LaunchDarkly; stale flags older than 90 days are "
     "removed by the cleanup job."),
    ("security-training", "Security training",
     "Every employee completes phishing awareness training twice a year."),
    ("data-retention", "Data retention",
     "Customer logs are deleted after 180 days unless a legal hold applies."),
    ("hiring", "Hiring process",
     "Candidates do a screening call, a technical interview and a team conversation."),
    ("mobile-release", "Mobile release train",
     "The iOS and Android apps ship every two weeks on Thursday after QA sign-off."),
    ("cdn", "CDN configuration",
     "Static assets are cached at the edge for one day; purge the cache from the CDN "
     "console after a hotfix."),
    ("sso", "Single sign-on",
     "Internal tools authenticate through Okta SSO with mandatory hardware keys."),
    ("printing", "Printing",
     "Printers on every floor accept jobs from the office network only."),
    ("budget", "Quarterly budget",
     "Team budgets are reviewed each quarter by finance and the department head."),
]  # fmt: skip

SECRET = make_record(
    "acquisition",
    "Project Bluefin: the board approved acquiring Nimbus Analytics for 40 million.",
    title="Board minutes",
    acl=["board"],
    timestamp=T0,
)
# One document in three sections, to see the cap and neighbour expansion on real chunks.
RUNBOOK = [
    make_record("runbook", text, index=i, title="Failover runbook", timestamp=T0)
    for i, text in enumerate(
        [
            "Failover runbook, step one: freeze deploys and announce the failover in #ops.",
            "Step two: promote the standby Postgres replica in the secondary region.",
            "Step three: repoint the connection pooler and verify checkout traffic.",
        ]
    )
]

PUBLIC = SearchFilter.for_groups([])


def _records() -> list[Record]:
    out = [
        make_record(doc, text, title=title, timestamp=T0 - timedelta(days=n))
        for n, (doc, title, text) in enumerate(PASSAGES)
    ]
    return [*out, SECRET, *RUNBOOK]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    home: Path = tmp_path_factory.mktemp("pipeline-home")
    s = Store.open(home=home)
    report = s.ingest(_records())
    assert report.added == len(PASSAGES) + 2 and not report.failed
    yield s
    s.close()


def _ids(items: list) -> list[str]:
    return [i.id for i in items]


async def test_exact_token_found_by_lexical_and_kept_by_fusion(store: Store) -> None:
    result = await hybrid_search(store, "What does ERR-4012 mean?", PUBLIC)
    target = "test:payments-errors#0"
    assert result.rewritten_query == "What does ERR-4012 mean"
    assert result.legs["lexical"][0].id == target
    assert result.hits[0].id == target
    hit = result.hits[0]
    assert hit.title == "Payment error codes" and "ERR-4012" in hit.text
    assert hit.locator.doc_id == "test:payments-errors" and hit.locator.char_start == 0
    assert hit.timestamp == T0 and hit.source == "test"


async def test_paraphrase_found_by_dense_and_kept_by_fusion(store: Store) -> None:
    query = "I can't remember my login credentials, how do I get back in?"
    target = "test:password-reset#0"
    lexical = await hybrid_search(store, query, PUBLIC, SearchOptions(legs=["lexical"]))
    dense = await hybrid_search(store, query, PUBLIC, SearchOptions(legs=["dense"]))
    hybrid = await hybrid_search(store, query, PUBLIC)
    # No content word in common: BM25 cannot place it; the encoder knows the paraphrase.
    assert target not in _ids(lexical.hits[:3])
    assert _ids(dense.hits)[0] == target
    assert target in _ids(hybrid.hits[:3])
    assert set(hybrid.legs) == {"lexical", "dense"}
    assert hybrid.fused[0].score > 0


async def test_result_exposes_every_stage(store: Store) -> None:
    result = await hybrid_search(store, "who leads the search service?", PUBLIC)
    assert result.original_query == "who leads the search service?"
    assert result.leg_queries["dense"] == "who leads the search service?"
    assert result.depth == 20
    assert result.hits[0].doc_id == "test:search-service"
    assert len(result.legs["lexical"]) <= 20 and len(result.legs["dense"]) == 20
    stages = {"rewrite", "lexical", "dense", "fuse", "rerank", "expand", "total"}
    assert stages <= set(result.timings_ms)  # every stage timed, none left out
    # Without a configured cross-encoder the stage is skipped, and the result says so.
    assert result.reranked is None and NO_MODEL_WARNING in result.warnings


async def test_corpus_size_counts_only_what_the_caller_may_read(store: Store) -> None:
    # The board minutes are hidden from the public: the index's own size would tell a
    # caller that one record exists that it may not read.
    public = await hybrid_search(store, "who leads the search service?", PUBLIC)
    assert public.corpus_size == store.corpus_size() - 1
    board = SearchFilter.for_groups(["board"])
    assert (await hybrid_search(store, "acquisition", board)).corpus_size == store.corpus_size()
    runbook = SearchFilter.for_groups(["board"], doc_ids=("test:runbook",))
    assert (await hybrid_search(store, "failover", runbook)).corpus_size == len(RUNBOOK)


async def test_acl_is_respected_in_every_leg(store: Store) -> None:
    query = "Project Bluefin acquisition of Nimbus Analytics"
    public = await hybrid_search(store, query, PUBLIC)
    seen = {i.id for leg in public.legs.values() for i in leg} | set(_ids(public.hits))
    assert SECRET.id not in seen
    board = await hybrid_search(store, query, SearchFilter.for_groups(["board"]))
    assert board.hits[0].id == SECRET.id
    assert board.legs["lexical"][0].id == SECRET.id and board.legs["dense"][0].id == SECRET.id


def test_stored_vectors_are_read_by_id_within_the_callers_scope(store: Store) -> None:
    target = "test:password-reset#0"
    found = store.vectors([target, SECRET.id, "test:nope#0"], PUBLIC)
    assert list(found) == [target]  # another group's chunk and an unknown id have none
    again = store.embedder.encode([embedding_text(store.get_records([target], PUBLIC)[0])])[0]
    assert found[target] == pytest.approx(again, abs=1e-5)  # the vector the index holds
    assert SECRET.id in store.vectors([SECRET.id], SearchFilter.for_groups(["board"]))


async def test_failed_dense_leg_degrades_with_warning(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kw: object) -> list:
        raise RuntimeError("dense shard unavailable")

    monkeypatch.setattr(store.dense, "search", broken)
    result = await hybrid_search(store, "What does ERR-4012 mean?", PUBLIC)
    assert "dense leg failed: RuntimeError: dense shard unavailable" in result.warnings
    assert list(result.legs) == ["lexical"]
    assert result.hits[0].id == "test:payments-errors#0"


async def test_cap_and_neighbour_expansion_on_real_chunks(store: Store) -> None:
    query = "failover runbook promote the standby Postgres replica"
    capped = await hybrid_search(store, query, PUBLIC, SearchOptions(per_doc_cap=1))
    runbook_hits = [h for h in capped.hits if h.doc_id == "test:runbook"]
    assert len(runbook_hits) == 1
    assert len([i for i in capped.fused if i.id.startswith("test:runbook#")]) == 3

    opts = SearchOptions(per_doc_cap=1, expand_neighbors=1, k=3)
    expanded = await hybrid_search(store, query, PUBLIC, opts)
    top = expanded.hits[0]
    assert top.doc_id == "test:runbook"
    added = [h for h in expanded.hits if h.expanded_from == top.id]
    index = int(top.id.rsplit("#", 1)[1])
    expected = {f"test:runbook#{i}" for i in (index - 1, index + 1) if 0 <= i <= 2}
    assert {h.id for h in added} == expected
    assert len(_ids(expanded.hits)) == len(set(_ids(expanded.hits)))
    # Only the top hit was expanded: nothing else carries expanded_from.
    assert all(h.expanded_from in (None, top.id) for h in expanded.hits)


async def test_source_and_time_options_narrow_the_search(store: Store) -> None:
    nothing = await hybrid_search(store, "ERR-4012", PUBLIC, SearchOptions(sources=["elsewhere"]))
    assert nothing.hits == []
    recent = await hybrid_search(
        store, "checkout", PUBLIC, SearchOptions(time_from=T0 - timedelta(days=1, hours=1))
    )
    assert recent.hits and all(h.timestamp >= T0 - timedelta(days=1, hours=1) for h in recent.hits)
