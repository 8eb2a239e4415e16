"""Retention on the Postgres task store: the same case as on SQLite (tests/unit/api)."""

from __future__ import annotations

from api.tasks.store import TaskStore
from tests.unit.api.test_retention import check_prune


def test_prune_on_postgres(pg_url: str) -> None:
    store = TaskStore.open(pg_url)
    try:
        check_prune(store)
    finally:
        store.close()
