"""Documents kept between reads are bounded by their records and dropped with the
content version they were read under."""

from __future__ import annotations

from retrieval.records import Record
from retrieval.store import _PagesRead


def _doc(name: str, chunks: int) -> list[Record]:
    return [Record(id=f"t:{name}#{i}", source="t", text=f"{name} {i}") for i in range(chunks)]


def test_kept_documents_are_bounded_by_their_records_and_the_version(monkeypatch) -> None:
    monkeypatch.setattr(_PagesRead, "_KEPT", 5)
    reads: list[str] = []
    docs = {"a": _doc("a", 3), "b": _doc("b", 2), "c": _doc("c", 2)}

    def read(doc_id: str) -> list[Record]:
        reads.append(doc_id)
        return docs[doc_id]

    pages = _PagesRead()
    assert [r.id for r in pages.get(1, "a", read)] == ["t:a#0", "t:a#1", "t:a#2"]
    pages.get(1, "a", read)
    pages.get(1, "b", read)
    assert reads == ["a", "b"]  # a kept: 5 records held
    pages.get(1, "c", read)  # 7 > 5: the least recently read document (a) goes
    pages.get(1, "b", read)
    pages.get(1, "a", read)
    assert reads == ["a", "b", "c", "a"]
    pages.get(2, "a", read)  # the content changed: nothing kept is used
    assert reads == ["a", "b", "c", "a", "a"]
