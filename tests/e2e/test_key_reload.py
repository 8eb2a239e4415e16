"""`waypoint serve` takes a changed auth file without a restart (issue 26, item 2): SIGHUP
(or the file's change, seen within a second) re-reads it, so a revoked group or a deleted
key holds from the next request on, and SIGHUP does not end the server."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import BOB, HANA, KEYS, SECRET_MARKER, Server

pytestmark = pytest.mark.e2e

QUERY = {"query": "salary band code compensation"}


def test_a_running_server_reloads_its_keys_on_sighup(built_index: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(built_index, home)
    srv = Server(home, tmp_path).start()
    try:
        assert srv.proc is not None
        with srv.client() as http:
            assert SECRET_MARKER in http.post("/v1/search", json=QUERY, headers=HANA).text
            assert http.get("/v1/sources", headers=BOB).status_code == 200
            # hana loses the hr group, bob's key is deleted
            keys = {k: v for k, v in KEYS.items() if k != "key-bob"}
            keys["key-hana"] = {**KEYS["key-hana"], "groups": []}
            (tmp_path / "keys.json").write_text(json.dumps({"keys": keys}))
            srv.proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:  # the handler runs as the server wakes
                r = http.post("/v1/search", json=QUERY, headers=HANA)
                if SECRET_MARKER not in r.text:
                    break
                time.sleep(0.1)
            assert r.status_code == 200 and SECRET_MARKER not in r.text
            assert http.get("/v1/sources", headers=BOB).status_code == 401
        assert srv.proc.poll() is None  # SIGHUP did not end the server
    finally:
        srv.stop()
