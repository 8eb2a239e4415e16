"""What a load of a plain folder (or of a zip) stands for: a re-ingest deletes the
documents it did not emit (a file removed from the folder or from a zip in it, a sheet
removed from a workbook), except those of files it met but could not read this time (a
failure, a size cap: the last good version stays searchable)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from retrieval.connectors.archives import ARCHIVE_SUFFIXES
from retrieval.connectors.files import SUFFIXES

_FILE_SUFFIXES = tuple(SUFFIXES | ARCHIVE_SUFFIXES)


@dataclass
class FoundFiles:
    """The id paths of the files met but not read (failed, skipped, or a whole archive
    that could not be read), and whether the folder's JSONL and ticket exports loaded
    without a failure (their ids name no file)."""

    unread: set[str] = field(default_factory=set)
    exports_complete: bool = True

    def keeps(self, native: str) -> bool:
        """A document id's path part (``team/c.md``, ``book.xlsx/Q3``, ``pack.zip/x.md``)
        is in a file that was not read; ``""`` stands for every path (the loaded zip
        itself could not be read)."""
        if "" in self.unread:
            return True
        parts = native.split("/")
        return any("/".join(parts[:n]) in self.unread for n in range(1, len(parts) + 1))

    def removed(self, doc_ids: Iterable[str], emitted: set[str]) -> list[str]:
        """Of a source's ``doc_ids``, those this load did not emit and does not keep. A
        document of an export (an id that names no file) is removed only when every
        export loaded without a failure."""
        out: list[str] = []
        for doc_id in doc_ids:
            native = doc_id.partition(":")[2]
            if doc_id in emitted or self.keeps(native):
                continue
            if not self.exports_complete and not _names_a_file(native):
                continue
            out.append(doc_id)
        return out


def _names_a_file(native: str) -> bool:
    parts = native.split("/")
    return any(
        "/".join(parts[:n]).lower().endswith(_FILE_SUFFIXES) for n in range(1, len(parts) + 1)
    )
