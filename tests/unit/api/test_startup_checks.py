"""Start-up checks of a home (issue 26, items 7 and 8): file-level, no engine opened.

A damaged home used to start as healthy (a deleted catalog or index recreated empty, a
corrupt runs.sqlite failing every answer with a 500), and a home held by `serve` made
the CLI print a 55-line WAL traceback.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import api.app
from api.settings import ApiSettings
from api.startup_checks import (
    HOLDER_FILE,
    HomeError,
    claim_home,
    fatal_line,
    holder,
    home_findings,
    in_use_line,
    is_lock_error,
    open_checked_store,
    release_home,
)
from retrieval.health import Finding, check_home, sqlite_problem
from tests.unit.api.conftest import Harness, _client_for


def _garbage(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a database" * 300)


def test_a_new_or_absent_home_has_nothing_to_report(tmp_path: Path) -> None:
    assert check_home(tmp_path / "absent") == []
    (tmp_path / "empty").mkdir()
    assert home_findings(tmp_path / "empty") == []


def test_a_sound_sqlite_file_passes_quick_check(tmp_path: Path) -> None:
    db = tmp_path / "ok.sqlite"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    assert sqlite_problem(db) is None


def test_a_corrupt_runs_file_refuses_with_one_line_naming_it(tmp_path: Path) -> None:
    _garbage(tmp_path / "runs.sqlite")
    line = fatal_line(home_findings(tmp_path))
    assert line is not None and "\n" not in line
    assert str(tmp_path / "runs.sqlite") in line and "delete it" in line


def test_a_corrupt_catalog_refuses_with_one_line_naming_it(tmp_path: Path) -> None:
    _garbage(tmp_path / "catalog.sqlite")
    findings = check_home(tmp_path)
    assert [f.component for f in findings] == ["catalog"] and findings[0].fatal
    line = fatal_line(findings)
    assert line is not None and "\n" not in line and "catalog.sqlite" in line
    with pytest.raises(HomeError, match="catalog.sqlite"):
        open_checked_store(tmp_path, command="test")  # refused before any engine opens


def test_a_deleted_catalog_beside_an_index_refuses(tmp_path: Path) -> None:
    (tmp_path / "lexical").mkdir()
    (tmp_path / "lexical" / "meta.json").write_text('{"segments": []}')
    findings = check_home(tmp_path)
    assert findings and findings[0].component == "catalog" and findings[0].fatal
    assert "missing" in findings[0].problem and "lexical/" in findings[0].problem


def test_a_corrupt_lexical_meta_file_refuses_with_the_repair(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "catalog.sqlite").execute("CREATE TABLE t (x)").connection.close()
    (tmp_path / "lexical").mkdir()
    (tmp_path / "lexical" / "meta.json").write_text("{not json")
    line = fatal_line(check_home(tmp_path))
    assert line is not None and "lexical" in line and "waypoint reindex" in line


def _degraded(tmp_path: Path) -> Finding:
    return Finding(
        "lexical",
        tmp_path / "home" / "lexical",
        "missing (the catalog holds 3 chunks for it): keyword search finds nothing",
        "run `waypoint reindex`",
        fatal=False,
    )


async def test_healthz_reports_a_degraded_component_with_503(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    finding = _degraded(tmp_path)
    monkeypatch.setattr(api.app, "home_findings", lambda *_a, **_k: [finding])
    async for client in _client_for(harness):
        r = await client.get("/healthz")
        assert r.status_code == 503
        body = r.json()
        assert body["status"] == "degraded"
        assert "lexical" in body["checks"] and "reindex" in body["checks"]["lexical"]


async def test_healthz_names_a_degraded_component_without_its_record_count(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /healthz needs no key: how many chunks the catalog holds is a corpus fact (issue 26
    # item 9); the start-up log line keeps it for the operator.
    finding = _degraded(tmp_path)
    assert "3 chunks" in finding.line()
    monkeypatch.setattr(api.app, "home_findings", lambda *_a, **_k: [finding])
    async for client in _client_for(harness):
        r = await client.get("/healthz")
    check = r.json()["checks"]["lexical"]
    assert "missing" in check and "keyword search finds nothing" in check
    assert "chunks" not in check and "holds" not in check


async def test_healthz_is_200_on_a_sound_home(harness: Harness) -> None:
    async for client in _client_for(harness):
        r = await client.get("/healthz")
        assert r.status_code == 200 and r.json()["status"] == "ok"


@pytest.mark.parametrize(
    "error",
    [sqlite3.OperationalError("disk I/O error"), ConnectionError("server closed the connection")],
)
async def test_healthz_reports_a_failing_task_store_with_503(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    """Live, not from start-up: the task store is asked at each probe. A Postgres store
    fails with the driver's own errors (psycopg's, not sqlite3's)."""
    async for client in _client_for(harness):
        assert harness.services is not None

        def failing(*_: object) -> int:
            raise error

        monkeypatch.setattr(harness.services.tasks, "count_active", failing)
        r = await client.get("/healthz")
        assert r.status_code == 503, r.text
        body = r.json()
        assert body["status"] == "degraded"
        assert body["checks"]["tasks"] == f"error: {type(error).__name__}"
        assert "closed" not in r.text and "disk" not in r.text  # no internals without a key


async def test_a_damaged_home_stops_the_lifespan_before_any_store_opens(
    settings: ApiSettings, harness: Harness
) -> None:
    _garbage(settings.home / "runs.sqlite")
    app = harness.app
    with pytest.raises(HomeError, match="runs.sqlite"):
        async with app.router.lifespan_context(app):
            pass
    assert harness.services is None  # the factory never ran


def test_the_holder_file_names_a_live_process_only(tmp_path: Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    # Until the child has exec'd, /proc shows no command line yet (a loaded machine).
    deadline = time.monotonic() + 10
    while b"sleep" not in Path(f"/proc/{other.pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline, "the child process did not start"
        time.sleep(0.01)
    try:
        (tmp_path / HOLDER_FILE).write_text(json.dumps({"pid": other.pid, "command": "serve"}))
        assert holder(tmp_path) == (other.pid, "serve")
        line = in_use_line(tmp_path)
        assert f"in use by process {other.pid} (waypoint serve)" in line and "\n" not in line
    finally:
        other.kill()
        other.wait()
    assert holder(tmp_path) is None  # gone: a stale file names nobody
    assert "another process" in in_use_line(tmp_path)


def test_claim_and_release_only_touch_this_process_file(tmp_path: Path) -> None:
    claim_home(tmp_path, "ingest")
    data = json.loads((tmp_path / HOLDER_FILE).read_text())
    assert data == {"pid": os.getpid(), "command": "ingest"}
    assert holder(tmp_path) is None  # this process is not "another" holder
    release_home(tmp_path)
    assert not (tmp_path / HOLDER_FILE).exists()


def test_engine_lock_errors_are_recognised() -> None:
    edge = ValueError(
        "cannot open dense shard at /h/dense/g: Service runtime error: failed to open WAL "
        "/h/dense/g/wal: Can't init WAL: Kind(WouldBlock)"
    )
    assert is_lock_error(edge)
    assert not is_lock_error(ValueError("cannot open dense shard at /h: IO Error"))
