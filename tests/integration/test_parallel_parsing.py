"""A folder of many files is parsed by a pool of processes (WAYPOINT_INGEST_WORKERS):
the same records, in the same order, and the same failures as parsing in the loading
process; a corrupt file fails alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from document_files import PORTAL_PAGE, write_docx, write_report_pdf, zip_bytes

from retrieval.connectors import ConnectorSettings, load_path, parallel

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("many") / "docs"
    root.mkdir()
    for i in range(parallel.MIN_FILES + 4):
        (root / f"team-{i:02d}.md").write_text(
            f"# Team {i}\n\nThe team {i} owns service-{i} and answers pages within {i + 5} "
            f"minutes.\n\n## On call\n\nSee [the runbook](runbook-{i}.md) for ERR-{4000 + i}.\n"
        )
    write_report_pdf(root / "report.pdf")
    write_docx(root / "handbook.docx")
    (root / "portal.html").write_text(PORTAL_PAGE)
    (root / "corrupt.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 9 0 R")
    (root / "notes.zip").write_bytes(zip_bytes({"inner/a.md": b"# A\n\nInside the zip.\n"}))
    return root


def _load(root: Path, workers: int) -> Any:
    return load_path(
        root, source="docs", connector_settings=ConnectorSettings(ingest_workers=workers)
    )


def test_a_pool_parses_as_the_loading_process_does(folder: Path, monkeypatch) -> None:
    pools: list[int] = []

    class Spy(parallel.ProcessPoolExecutor):
        def __init__(self, workers: int, **kwargs: Any) -> None:
            pools.append(workers)
            super().__init__(workers, **kwargs)

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", Spy)
    pooled = _load(folder, 2)
    assert pools == [2]  # the pool ran
    serial = _load(folder, 1)
    assert pools == [2]  # one worker: no pool
    assert [(r.id, r.text, r.metadata) for r in pooled.records] == [
        (r.id, r.text, r.metadata) for r in serial.records
    ]
    assert pooled.failures == serial.failures
    assert [where for where, _ in pooled.failures] == [str(folder / "corrupt.pdf")]
    ids = {r.metadata["doc_id"] for r in pooled.records}
    assert (
        "docs:report.pdf" in ids and "docs:notes.zip/inner/a.md" in ids and "docs:team-07.md" in ids
    )
    assert pooled.found is not None and "corrupt.pdf" in pooled.found.unread


def test_files_a_dead_pool_left_are_parsed_here(folder: Path, monkeypatch, caplog) -> None:
    """A worker that dies (a parser crashing its interpreter) breaks the pool; the load
    still gives every file's records."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    class Dead:
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

        def __enter__(self) -> Dead:
            return self

        def __exit__(self, *exc: object) -> None: ...

        def submit(self, *args: Any) -> Future[Any]:
            future: Future[Any] = Future()
            future.set_exception(BrokenProcessPool("a child process terminated abruptly"))
            return future

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", Dead)
    with caplog.at_level("WARNING", logger=parallel.__name__):
        broken = _load(folder, 2)
    serial = _load(folder, 1)
    assert [r.id for r in broken.records] == [r.id for r in serial.records]
    assert broken.failures == serial.failures
    assert caplog.text.count("a parsing process died") == 1


_PROGRAM = """
import json, sys
from retrieval.connectors import load_path, parallel
calls = []
real = parallel.ProcessPoolExecutor
class Counting(real):
    def __init__(self, *args, **kwargs):
        calls.append(args[0])
        super().__init__(*args, **kwargs)
parallel.ProcessPoolExecutor = Counting
def main():
    print("started", flush=True)
    loaded = load_path(sys.argv[1], source="docs")
    print(json.dumps({"records": len(loaded.records), "pools": calls}), flush=True)
"""


@pytest.mark.parametrize("guarded", [True, False])
def test_a_script_is_never_run_again_by_its_workers(
    folder: Path, tmp_path: Path, guarded: bool
) -> None:
    """Spawned workers import the program's main module again: a script that loads at
    its top level (no ``__main__`` guard) is parsed in its own process, not run twice;
    a guarded one gets the pool."""
    tail = 'if __name__ == "__main__":\n    main()\n' if guarded else "main()\n"
    script = tmp_path / "load.py"
    script.write_text(_PROGRAM + tail)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(script), str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env={
            **{k: v for k, v in os.environ.items() if k != "WAYPOINT_INGEST_WORKERS"},
            "PYTHONPATH": str(root),
        },
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines.count("started") == 1  # no worker ran the script's work again
    report = json.loads(lines[-1])
    assert report["records"] == len(_load(folder, 1).records)
    assert (report["pools"] != []) is (guarded and (os.cpu_count() or 1) >= 2)
