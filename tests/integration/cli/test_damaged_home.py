"""A damaged or busy home through the CLI, real engines (issue 26, items 7 and 8).

Before: a deleted lexical index or vector shard was recreated empty and the commands ran
with one leg silently empty; a deleted catalog was recreated empty beside a full index;
a home held by another process gave a 55-line "Can't init WAL" traceback, exit 1.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import qdrant_edge as qe
from typer.testing import CliRunner

from api.cli.main import _register_all, app
from api.startup_checks import HOLDER_FILE
from retrieval.health import check_home


@pytest.fixture(scope="module")
def cli():
    if not app.registered_commands:
        _register_all()
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(app, list(args))

    return run


@pytest.fixture(scope="module")
def built(cli, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("damaged")
    docs = root / "wiki"
    docs.mkdir()
    (docs / "ledger.md").write_text(
        "# Ledger sync\n\nledger-sync copies settled payments into the finance ledger.\n"
    )
    (docs / "oncall.md").write_text("# On-call\n\nThe payments on-call rota rotates weekly.\n")
    home = root / "home"
    res = cli("ingest", str(docs), "--index", str(home))
    assert res.exit_code == 0, res.output
    return home


@pytest.fixture
def home(built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(built, copy)
    (copy / HOLDER_FILE).unlink(missing_ok=True)
    return copy


def _search_ids(cli, home: Path, leg: str) -> list[str]:
    res = cli("search", "ledger sync", "--index", str(home), "--json", "--legs", leg)
    assert res.exit_code == 0, res.output
    return [hit["doc_id"] for hit in json.loads(res.stdout)["hits"]]


def _one_error_line(res) -> str:
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    return lines[0]


@pytest.mark.parametrize("leg,folder", [("lexical", "lexical"), ("dense", "dense")])
def test_a_deleted_leg_is_reported_and_reindex_repairs_it(cli, home, leg, folder) -> None:
    shutil.rmtree(home / folder)
    assert [f.component for f in check_home(home)] == [leg]
    res = cli("search", "ledger sync", "--index", str(home))
    assert res.exit_code == 0, res.output
    assert f"warning: {leg}" in res.stderr and "waypoint reindex" in res.stderr
    # Still degraded after that run recreated the folder empty (no silent recovery).
    assert [f.component for f in check_home(home)] == [leg]
    res = cli("reindex", "--index", str(home))
    assert res.exit_code == 0, res.output
    assert check_home(home) == []
    assert any(d.endswith("ledger.md") for d in _search_ids(cli, home, leg))


def test_a_deleted_catalog_beside_the_index_refuses(cli, home) -> None:
    for path in home.glob("catalog.sqlite*"):
        path.unlink()
    line = _one_error_line(cli("search", "ledger", "--index", str(home)))
    assert "catalog.sqlite" in line and "missing" in line
    line = _one_error_line(cli("ingest", str(home.parent), "--index", str(home)))
    assert "catalog.sqlite" in line


def test_a_corrupt_runs_file_refuses_research(cli, home) -> None:
    (home / "runs.sqlite").write_bytes(b"garbage" * 1000)
    line = _one_error_line(cli("ask", "who owns the ledger?", "--index", str(home)))
    assert str(home / "runs.sqlite") in line


def test_a_corrupt_dense_shard_is_one_line_naming_it(cli, home) -> None:
    (shard,) = (home / "dense").iterdir()
    (shard / "edge_config.json").write_text("garbage")
    line = _one_error_line(cli("search", "ledger", "--index", str(home)))
    assert str(shard) in line and "waypoint reindex" in line


def test_a_home_held_by_another_process_names_it(cli, home, monkeypatch) -> None:
    users = home.parent / "users.json"
    users.write_text(json.dumps({"users": {"alice": {"groups": []}}}))
    monkeypatch.setenv("WAYPOINT_USERS_FILE", str(users))
    (shard,) = (home / "dense").iterdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    held = qe.EdgeShard.load(str(shard))  # the WAL lock a running `serve` holds
    try:
        (home / HOLDER_FILE).write_text(json.dumps({"pid": other.pid, "command": "serve"}))
        for args in (("search", "ledger"), ("ingest", str(home.parent)), ("mcp", "--as", "alice")):
            line = _one_error_line(cli(*args, "--index", str(home)))
            assert f"in use by process {other.pid} (waypoint serve)" in line, line
        # What the catalog alone answers still works beside the holder.
        res = cli("sources", "--index", str(home), "--json")
        assert res.exit_code == 0, res.output
        assert [s["name"] for s in json.loads(res.stdout)] == ["wiki"]
    finally:
        held.close()
        other.kill()
        other.wait()
