"""The service loads the embedding model before its first request, not during it."""

from __future__ import annotations

import gc
import logging
from typing import Any

import httpx
import pytest

from api.app import assemble, create_app
from api.auth import KeyRing
from api.settings import ApiSettings
from api.tasks.store import TaskStore
from tests.unit.api.conftest import FakeResearcher, FakeStore
from tools.testing import RecordingEmbedder


def _app(settings: ApiSettings, store: Any) -> Any:
    async def factory(s: ApiSettings) -> Any:
        tasks = TaskStore.open(s.resolved_tasks_url())
        return assemble(s, KeyRing.from_file(s.auth_file), store, FakeResearcher(), tasks)

    return create_app(settings, services_factory=factory)


async def test_the_embedder_is_warmed_up_before_the_first_request(settings: ApiSettings) -> None:
    store = FakeStore()
    store.embedder = RecordingEmbedder()  # type: ignore[assignment]
    app = _app(settings, store)
    async with app.router.lifespan_context(app):
        assert store.embedder.calls == [["warm-up"]]  # type: ignore[attr-defined]
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            assert (await client.get("/healthz")).status_code == 200


async def test_a_failed_warm_up_is_logged_and_the_service_still_starts(
    settings: ApiSettings, caplog: pytest.LogCaptureFixture
) -> None:
    store = FakeStore()
    store.embedder = RecordingEmbedder(
        failures=1, error=OSError("model folder /models/minilm is missing")
    )  # type: ignore[assignment]
    app = _app(settings, store)
    with caplog.at_level(logging.WARNING, logger="waypoint.api"):
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                assert (await client.get("/healthz")).status_code == 200
    assert any(
        "warm-up failed" in r.getMessage() and "minilm" in r.getMessage() for r in caplog.records
    )


async def test_start_up_objects_are_kept_out_of_full_collections(settings: ApiSettings) -> None:
    app = _app(settings.model_copy(update={"gc_freeze": True}), FakeStore())
    gc.unfreeze()
    try:
        async with app.router.lifespan_context(app):
            assert gc.get_freeze_count() > 0  # what start-up loaded is frozen
    finally:
        gc.unfreeze()  # process-wide: give the other tests a normal collector back


async def test_the_freeze_can_be_turned_off(settings: ApiSettings) -> None:
    assert settings.gc_freeze is False
    gc.unfreeze()
    app = _app(settings, FakeStore())
    async with app.router.lifespan_context(app):
        assert gc.get_freeze_count() == 0
