"""Pure parts of the runner: mode parsing, BEIR variants, the index key, the plot."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsets.beir import BEIR_MODES, beir_variants
from evalsets.index import corpus_hash, eval_settings
from evalsets.loaders import load_multihop
from evalsets.plot import plot_modes
from evalsets.runner import MODES, UnknownModeError, parse_modes
from retrieval.settings import RetrievalSettings

FIX = Path(__file__).parent / "fixtures"


def test_parse_modes() -> None:
    assert parse_modes("hybrid") == ["hybrid"]
    assert parse_modes(" Lexical, dense,lexical ") == ["lexical", "dense"]
    assert parse_modes("all") == list(MODES)
    assert parse_modes("all", BEIR_MODES) == ["lexical", "dense", "hybrid"]


@pytest.mark.parametrize("spec", ["", "lexical,vibes", "iterative"])
def test_parse_modes_rejects_and_names_the_valid_ones(spec: str) -> None:
    with pytest.raises(UnknownModeError) as err:
        parse_modes(spec, BEIR_MODES)
    assert "lexical, dense, hybrid" in str(err.value)


def test_beir_variants_add_rerank_only_when_configured() -> None:
    assert beir_variants(["lexical"], None) == [("lexical", "lexical", False)]
    assert beir_variants(["lexical", "hybrid"], "/models/ce") == [
        ("lexical", "lexical", False),
        ("hybrid", "hybrid", False),
        ("lexical+rerank", "lexical", True),
        ("hybrid+rerank", "hybrid", True),
    ]


def test_corpus_hash_follows_content_and_model(tmp_path: Path) -> None:
    records = load_multihop(FIX / "multihop.jsonl").records
    settings = RetrievalSettings(home=tmp_path, embedding_model="/m/a")
    same = corpus_hash(list(reversed(records)), settings)
    assert corpus_hash(records, settings) == same  # order does not matter
    assert corpus_hash(records[:-1], settings) != same
    other_model = RetrievalSettings(home=tmp_path, embedding_model="/m/b")
    assert corpus_hash(records, other_model) != same


def test_eval_index_lives_apart_from_the_user_index(tmp_path: Path) -> None:
    base = RetrievalSettings(home=tmp_path / "user")
    settings, home = eval_settings(base, "abc123")
    assert home == tmp_path / "user" / "eval" / "abc123"
    assert settings.home == home
    assert settings.es_index_prefix != base.es_index_prefix
    assert settings.qdrant_collection_prefix != base.qdrant_collection_prefix


def test_plot_skips_metrics_no_mode_has(tmp_path: Path) -> None:
    report = {
        "dataset": "x",
        "questions": 3,
        "corpus_passages": 9,
        "budget": 10,
        "modes": {
            "lexical": {"support_recall_all": 0.5, "mrr": 0.7, "em": None},
            "iterative": {"support_recall_all": 0.8, "mrr": 0.6, "em": 0.4},
        },
    }
    path = plot_modes(report, tmp_path / "plots" / "r.png")
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_prune_stale_removes_only_older_indexes_of_the_same_dataset(tmp_path: Path) -> None:
    import json

    from evalsets.index import MARKER, prune_stale

    def make(name: str, dataset: str | None) -> Path:
        home = tmp_path / name
        home.mkdir()
        if dataset is not None:
            (home / MARKER).write_text(json.dumps({"dataset": dataset}))
        return home

    keep = make("new", "hotpotqa")
    old = make("old", "hotpotqa")
    other = make("other", "musique")
    partial = make("partial", None)
    assert prune_stale(tmp_path, "hotpotqa", keep) == [old]
    assert keep.exists() and other.exists() and partial.exists() and not old.exists()


def test_iterative_outcome_carries_the_answer_contract() -> None:
    """The runner maps ResearchResult's short answer, claims and citations onto Outcome."""
    import asyncio
    from datetime import UTC, datetime

    from evalsets.loaders import EvalQuestion
    from evalsets.metrics import question_scores
    from evalsets.runner import ModeRunner
    from graph.models import Citation, Claim, ResearchResult
    from retrieval.search_models import Locator
    from tools.evidence import Evidence

    def cite(n: int, doc: str) -> Citation:
        loc = Locator(doc_id=doc, chunk_id=f"{doc}#0")
        return Citation(n=n, evidence_id=f"{doc}#0", doc_id=doc, title=doc, text="t", locator=loc)

    evidence = [
        Evidence(
            id=f"{d}#0",
            doc_id=d,
            title=d,
            text="the Vell",
            score=1.0,
            source="s",
            timestamp=datetime(2000, 1, 1, tzinfo=UTC),
            locator=Locator(doc_id=d, chunk_id=f"{d}#0"),
        )
        for d in ("d1", "d9")
    ]
    result = ResearchResult(
        run_id="r",
        question="q",
        mode="iterative",
        short_answer="Vell",
        answer="The Vell [1]. Also [2].",
        answerable=True,
        claims=[
            Claim(text="The Vell", citations=[1], supported=True),
            Claim(text="Also", citations=[2], supported=False, reason="no such name"),
        ],
        citations=[cite(1, "d1"), cite(2, "d9")],
        evidence=evidence,
        rounds=2,
        tool_calls=5,
    )

    class FakeResearcher:
        async def run(self, *_: object) -> ResearchResult:
            return result

    runner = ModeRunner(store=None, mode="hybrid", budget=10)
    runner.mode = "iterative"
    runner._researcher = FakeResearcher()
    q = EvalQuestion(id="q", question="q", answer="the Vell", gold=["d1", "d2"])
    out = asyncio.run(runner.answer(q))
    assert out.short_answer == "Vell" and out.claims == [True, False]
    assert out.cited == ["d1", "d9"] and out.refused is False
    s = question_scores(out)
    assert s["em"] == 1.0 and s["claim_support_rate"] == 0.5 and s["citation_precision"] == 0.5
