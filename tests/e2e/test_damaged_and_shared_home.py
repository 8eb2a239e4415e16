"""A home held by `waypoint serve`, and one with a deleted leg (issue 26, items 7 and 8).

Before: `waypoint search/ingest` on the home of a running server exited 1 with a 55-line
"Can't init WAL: Kind(WouldBlock)" traceback, and a server whose lexical index had been
deleted answered /healthz 200 "ok" with the keyword leg silently empty.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import httpx

from tests.e2e.conftest import CORPUS, WAYPOINT, Server


def test_the_cli_names_the_server_holding_its_home(built_index: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(built_index, home)
    srv = Server(home, tmp_path).start()
    try:
        assert srv.proc is not None
        for args in (["search", "payments"], ["ingest", str(CORPUS / "wiki")]):
            proc = subprocess.run(
                [WAYPOINT, *args], env=srv.env, capture_output=True, text=True, timeout=300
            )
            assert proc.returncode == 2, proc.stderr
            lines = proc.stderr.strip().splitlines()
            assert len(lines) == 1, proc.stderr
            assert f"in use by process {srv.proc.pid} (waypoint serve)" in lines[0]
    finally:
        srv.stop()
    assert not (home / "holder.json").exists()  # released at a clean stop


def test_a_deleted_lexical_index_serves_degraded_with_503(
    built_index: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(built_index, home)
    shutil.rmtree(home / "lexical")
    srv = Server(home, tmp_path)
    srv._log = srv.log_path.open("ab")  # started by hand: Server.start waits for a 200
    srv.proc = subprocess.Popen(
        [WAYPOINT, "serve", "--host", "127.0.0.1", "--port", str(srv.port)],
        env=srv.env,
        stdout=srv._log,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )
    try:
        r = None
        deadline = time.monotonic() + 180
        while r is None and time.monotonic() < deadline and srv.proc.poll() is None:
            try:
                r = httpx.get(f"{srv.base}/healthz", timeout=2)
            except httpx.TransportError:
                time.sleep(0.2)
        assert r is not None, srv.log_path.read_text()[-3000:]
        assert r.status_code == 503
        body = r.json()
        assert body["status"] == "degraded" and "waypoint reindex" in body["checks"]["lexical"]
    finally:
        srv.stop()
