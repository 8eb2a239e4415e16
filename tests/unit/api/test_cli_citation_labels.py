"""`waypoint ask` and `waypoint search` name where a cited passage sits in a paged or
tabular file (``report.pdf p. 4``), from the locator's label; other passages print as
before."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from rich.console import Console

from api.cli import index as index_cli
from api.cli import research
from graph.models import Citation, ResearchResult
from retrieval.search_models import Locator, SearchHit, SearchResult

PDF = Locator(
    doc_id="docs:report.pdf",
    chunk_id="docs:report.pdf#3",
    page=4,
    heading_path=["Results"],
    label="report.pdf p. 4",
)
PAGE = Locator(doc_id="docs:guide.md", chunk_id="docs:guide.md#0")
TITLES = {PDF.doc_id: "Report", PAGE.doc_id: "Guide"}


def _citation(n: int, loc: Locator) -> Citation:
    return Citation(
        n=n,
        evidence_id=loc.chunk_id,
        doc_id=loc.doc_id,
        title=TITLES[loc.doc_id],
        text="t",
        locator=loc,
    )


def _hit(loc: Locator) -> SearchHit:
    return SearchHit(
        id=loc.chunk_id,
        doc_id=loc.doc_id,
        title=TITLES[loc.doc_id],
        text="Some text.",
        score=1.0,
        source="docs",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        locator=loc,
    )


def _capture(monkeypatch: pytest.MonkeyPatch, module: object) -> Console:
    console = Console(record=True, width=200, color_system=None)
    monkeypatch.setattr(module, "console", console)
    return console


def test_ask_names_the_page_of_a_cited_pdf(monkeypatch: pytest.MonkeyPatch) -> None:
    console = _capture(monkeypatch, research)
    result = ResearchResult(
        run_id="r1",
        question="q",
        mode="hybrid",
        answer="Latency fell [1] and the guide says so [2].",
        answerable=True,
        citations=[_citation(1, PDF), _citation(2, PAGE)],
    )
    research.print_result(result)
    lines = console.export_text().splitlines()
    assert "  [1] Report, report.pdf p. 4 (docs:report.pdf#3)" in lines
    assert "  [2] Guide (docs:guide.md#0)" in lines


def test_search_names_the_page_of_a_pdf_hit(monkeypatch: pytest.MonkeyPatch) -> None:
    console = _capture(monkeypatch, index_cli)
    result = SearchResult(original_query="q", rewritten_query="q", hits=[_hit(PDF), _hit(PAGE)])
    index_cli._print_hits(result)
    text = console.export_text()
    assert "1. Report  report.pdf p. 4  docs:report.pdf#3" in text
    assert "   Results" in text
    assert "2. Guide  docs:guide.md#0" in text
