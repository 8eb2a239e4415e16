"""The savers the research graph runs with (graph.savers: LangGraph's AsyncSqliteSaver on
the runner's connection settings, its AsyncPostgresSaver on the session's Postgres server)
pass LangGraph's checkpointer conformance suite, every capability they implement."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from graph.savers import Savers

conformance = pytest.importorskip("langgraph.checkpoint.conformance")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


async def assert_conforms(name: str, savers: list[Savers]) -> None:
    """Each suite gets a fresh saver of its own (a new file or database per suite)."""

    @conformance.checkpointer_test(name=name)
    async def fresh() -> AsyncIterator[Any]:
        opened = savers.pop(0)
        try:
            yield await opened.saver()
        finally:
            await opened.aclose()

    report = await conformance.validate(fresh)
    failures = {
        cap: result.failures for cap, result in report.results.items() if result.passed is False
    }
    assert report.passed_all_base() and report.passed_all(), failures
    assert sum(r.tests_passed for r in report.results.values()) > 0


async def test_the_sqlite_saver_conforms(tmp_path: Path) -> None:
    await assert_conforms(
        "waypoint-sqlite", [Savers(tmp_path / f"runs-{i}.sqlite") for i in range(32)]
    )


async def test_the_postgres_saver_conforms(pg_server: Any) -> None:
    pytest.importorskip("langgraph.checkpoint.postgres")
    urls = [pg_server.create_database() for _ in range(16)]
    await assert_conforms("waypoint-postgres", [Savers(Path("unused"), url) for url in urls])
