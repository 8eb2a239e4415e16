"""Fixtures shared by every test layer: a real Store in a temporary home, record factory."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from retrieval.records import Meta, Record, chunk_id, content_hash

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
ACME = REPO / "evalsets" / "acme"


def make_record(
    doc: str,
    text: str,
    *,
    source: str = "test",
    index: int = 0,
    title: str | None = None,
    acl: list[str] | None = None,
    timestamp: datetime | None = None,
    legs: list[str] | None = None,
    **metadata: object,
) -> Record:
    """One chunk record as a connector would emit it (doc ids are "<source>:<doc>")."""
    doc_id = f"{source}:{doc}"
    md: dict[str, object] = {
        Meta.DOC_ID: doc_id,
        Meta.CHUNK_INDEX: index,
        Meta.TITLE: title if title is not None else doc,
        Meta.CONTENT_HASH: content_hash(f"{doc}|{index}|{text}"),
        Meta.ACL: acl or ["public"],
        Meta.KIND: "passage",
        Meta.CHAR_START: 0,
        Meta.CHAR_END: len(text),
        Meta.HEADING_PATH: [],
    }
    if legs is not None:
        md[Meta.LEGS] = legs
    md.update(metadata)
    return Record(
        id=chunk_id(doc_id, index),
        source=source,
        text=text,
        timestamp=timestamp or datetime(2026, 1, 1, tzinfo=UTC),
        metadata=md,
    )


@contextlib.contextmanager
def held_by_another_thread(lock: Any) -> Iterator[None]:
    """While the block runs, another thread holds ``lock`` (a writer inside the catalog)."""
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with lock:
            held.set()
            release.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(5)
    try:
        yield
    finally:
        release.set()
        thread.join()


@pytest.fixture
def record_factory() -> Callable[..., Record]:
    return make_record


@pytest.fixture
def store_factory(tmp_path: Path) -> Iterator[Callable[..., object]]:
    """Open real Stores (tantivy + Qdrant Edge + MiniLM) in temporary homes."""
    from retrieval.store import Store

    opened: list[Store] = []

    def _open(name: str = "home") -> Store:
        store = Store.open(home=tmp_path / name)
        opened.append(store)
        return store

    yield _open
    for s in opened:
        s.close()


@pytest.fixture
def store(store_factory: Callable[..., object]) -> object:
    return store_factory()
