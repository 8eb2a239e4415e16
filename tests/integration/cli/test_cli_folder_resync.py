"""`waypoint ingest` of a plain folder again (typer runner, real engines): documents whose
files were removed from the folder (or from a zip in it, a sheet from a workbook) are
deleted from the catalog and both engines, and the summary says how many; a file that
fails this time keeps its document; another folder or a single file under the same source
name deletes nothing. Broken links are listed by the ingest itself."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration


def _zip(members: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in members.items():
            zf.writestr(zipfile.ZipInfo(name, (2026, 1, 1, 0, 0, 0)), text)
    return buf.getvalue()


def _workbook(path: Path, sheets: list[str]) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    for n, name in enumerate(sheets):
        sheet = book.active if n == 0 else book.create_sheet()
        assert sheet is not None
        sheet.title = name
        sheet.append(["Service", "Team"])
        sheet.append([f"{name.lower()}-sync", f"The {name} okapi team"])
    book.save(str(path))


def _json(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # an ingest's progress goes to stderr


def test_reingesting_a_folder_deletes_the_documents_of_removed_files(cli, tmp_path: Path):
    root = tmp_path / "wiki"
    (root / "team").mkdir(parents=True)
    (root / "a.md").write_text("# Alpha\n\nThe capybara runbook. See [gone](gone.md).\n")
    (root / "b.md").write_text("# Beta\n\nThe axolotl ledger closes at noon.\n")
    (root / "team" / "c.md").write_text("# Gamma\n\nThe quokka team owns billing.\n")
    (root / "pack.zip").write_bytes(
        _zip({"x.md": "# X\n\nThe narwhal queue.\n", "y.md": "# Y\n\nThe pangolin cache.\n"})
    )
    _workbook(root / "book.xlsx", ["Owners", "Archive"])
    index = str(tmp_path / "idx")

    first = cli("ingest", str(root), "--index", index)
    assert first.exit_code == 0, first.output
    assert "7 added" in first.stdout
    # Progress on stderr, with its rate: "wiki: 7 record(s) indexed in 1.2 s (6 records/s)".
    assert re.search(r"wiki: 7 record\(s\) indexed in [0-9.]+ s \([0-9]+ records/s\)", first.stderr)
    assert "broken link wiki:a.md -> gone.md" in first.stdout

    (root / "b.md").unlink()
    (root / "pack.zip").write_bytes(_zip({"x.md": "# X\n\nThe narwhal queue.\n"}))
    (root / "team" / "c.md").write_bytes(b"\x00not text any more")  # fails: keeps its document
    _workbook(root / "book.xlsx", ["Owners"])  # a sheet removed from a workbook read again
    again = cli("ingest", str(root), "--index", index)
    assert again.exit_code == 0, again.output
    assert "3 deleted" in again.stdout
    assert "failed" in again.stdout and "team/c.md: binary content" in again.stdout

    (wiki,) = json.loads(cli("sources", "--index", index, "--json").stdout)
    assert wiki["documents"] == 4
    for leg in ("lexical", "dense"):
        for query in ("axolotl ledger closes at noon", "pangolin cache", "archive-sync"):
            hits = _json(cli("search", query, "--index", index, "--legs", leg, "--json"))["hits"]
            ids = {h["doc_id"] for h in hits}
            gone = {"wiki:b.md", "wiki:pack.zip/y.md", "wiki:book.xlsx/Archive"}
            assert ids.isdisjoint(gone), (leg, query, ids)
    kept = _json(cli("search", "quokka billing", "--index", index, "--legs", "lexical", "--json"))
    assert kept["hits"][0]["doc_id"] == "wiki:team/c.md"

    # The same source name, another folder or one file: those add, nothing is deleted.
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "d.md").write_text("# Delta\n\nThe tapir handbook.\n")
    added = _json(cli("ingest", str(other), "--source", "wiki", "--index", index, "--json"))
    assert (added["added"], added["deleted"]) == (1, 0)
    single = _json(
        cli("ingest", str(root / "a.md"), "--source", "wiki", "--index", index, "--json")
    )
    assert single["deleted"] == 0
    (wiki,) = json.loads(cli("sources", "--index", index, "--json").stdout)
    assert wiki["documents"] == 5
