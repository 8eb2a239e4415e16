"""End-to-end fixtures: a real index built with `waypoint ingest`, `waypoint serve` as a
subprocess on 127.0.0.1, and a real local webhook receiver.

The fixture corpus (tests/e2e/fixtures/corpus) has four public wiki pages and one page
readable only by the ``hr`` group, which carries the marker ``BAND-NIGHTJAR-7731``.
"""

from __future__ import annotations

import base64
import http.server as http_server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "fixtures" / "corpus"
WAYPOINT = str(Path(sys.executable).parent / "waypoint")
SECRET = "whsec_" + base64.b64encode(b"e2e-webhook-secret-0123456789ab").decode()
SECRET_MARKER = "NIGHTJAR"
KEYS = {
    "key-ana": {"user": "ana", "groups": ["eng"], "webhook_secret": SECRET, "sync_sources": True},
    "key-hana": {"user": "hana", "groups": ["hr"], "webhook_secret": SECRET},
    "key-bob": {"user": "bob", "groups": []},
}
ANA = {"Authorization": "Bearer key-ana"}
HANA = {"Authorization": "Bearer key-hana"}
BOB = {"Authorization": "Bearer key-bob"}

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(args: list[str], env: dict[str, str]) -> None:
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{args} failed: {proc.stderr[-2000:]}"


def mcp_env(home: Path, workdir: Path, key: str) -> dict[str, str]:
    """The environment `waypoint mcp` runs in: ``home``'s index under ``key``'s ACL."""
    auth = workdir / "keys.json"
    auth.write_text(json.dumps({"keys": KEYS}))
    return {
        **os.environ,
        "WAYPOINT_HOME": str(home),
        "WAYPOINT_AUTH_FILE": str(auth),
        "WAYPOINT_MCP_API_KEY": key,
    }


@pytest.fixture(scope="session")
def built_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of the fixture corpus, built once per session with the real CLI."""
    home = tmp_path_factory.mktemp("index") / "home"
    env = {**os.environ, "WAYPOINT_HOME": str(home)}
    _run([WAYPOINT, "ingest", str(CORPUS / "wiki"), "--source", "wiki"], env)
    _run([WAYPOINT, "ingest", str(CORPUS / "hr"), "--source", "hr", "--acl", "hr"], env)
    return home


class Server:
    """`waypoint serve` in a subprocess; JSON logs go to ``log_path``."""

    def __init__(self, home: Path, workdir: Path, **env: str) -> None:
        self.home = home
        self.workdir = workdir
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        auth = workdir / "keys.json"
        auth.write_text(json.dumps({"keys": KEYS}))
        self.env = {
            **os.environ,
            "WAYPOINT_HOME": str(home),
            "WAYPOINT_AUTH_FILE": str(auth),
            "WAYPOINT_WEBHOOK_ALLOW_PRIVATE": "true",
            "WAYPOINT_WEBHOOK_BACKOFF_INITIAL_S": "0.2",
            "WAYPOINT_WEBHOOK_BACKOFF_MAX_S": "1",
            "WAYPOINT_RATE_LIMIT_BURST": "1000",
            "WAYPOINT_RATE_LIMIT_PER_MINUTE": "6000",
            **env,
        }
        self.log_path = workdir / f"serve-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Server:
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [WAYPOINT, "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError("server did not become healthy")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._log.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc is not None:
            self._log.close()

    def client(self, **kw: Any) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=120, **kw)

    def log_lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text().splitlines():
            if line.startswith("{"):
                out.append(json.loads(line))
        return out


@pytest.fixture(scope="session")
def server(built_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("serve")
    home = workdir / "home"
    shutil.copytree(built_index, home)
    sources = workdir / "sources.json"
    sources.write_text(
        json.dumps(
            {
                "sources": {
                    "notes": {"path": str(CORPUS / "notes"), "acl": ["eng"], "project": "handbook"}
                }
            }
        )
    )
    srv = Server(home, workdir, WAYPOINT_SOURCES_FILE=str(sources)).start()
    yield srv
    srv.stop()


@pytest.fixture
def http(server: Server) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


class Receiver:
    """A real HTTP webhook receiver on 127.0.0.1 that deduplicates on ``webhook-id``."""

    def __init__(self, secret: str) -> None:
        from api.webhooks import WebhookVerificationError, verify

        self.deliveries: list[tuple[dict[str, str], bytes]] = []
        self.processed: dict[str, dict[str, Any]] = {}  # webhook-id -> payload, once
        self.rejected: list[str] = []
        receiver = self

        class Handler(http_server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k: v for k, v in self.headers.items()}
                receiver.deliveries.append((headers, body))
                try:
                    wid = verify(secret, headers, body)
                except WebhookVerificationError as exc:
                    receiver.rejected.append(str(exc))
                    self.send_response(400)
                    self.end_headers()
                    return
                receiver.processed.setdefault(wid, json.loads(body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http_server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(SECRET)
    yield r
    r.close()


def parse_sse_lines(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """Incremental SSE parser over a line iterator: yields each event as it completes."""
    fields: dict[str, str] = {}
    for line in lines:
        if line == "":
            if "event" in fields:
                yield {
                    "event": fields["event"],
                    "id": fields.get("id"),
                    "data": json.loads(fields.get("data", "null")),
                }
            fields = {}
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        fields[name] = value[1:] if value.startswith(" ") else value


def wait_for(predicate: Any, timeout: float = 120.0, interval: float = 0.1) -> Any:
    """Poll until ``predicate()`` is truthy (a bound on waiting, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not reached in time")


# -- the killed-server scenario, shared by the SQLite (e2e) and Postgres (integration) runs --

KILL_QUESTIONS = [
    "Who leads the team that owns the Payments Service?",
    "Who leads the team that owns Fraud Gate?",
    "Which team renews the certificates of Fraud Gate and who leads the Risk team?",
    "What caused the Payments Service outage in March and who owns the service?",
]


def post_tasks_and_kill_mid_run(srv: Server, receiver: Receiver) -> list[dict[str, Any]]:
    """Post multi-hop tasks with a webhook, SIGKILL the server once one is mid-run (it has
    produced events but not finished); return the created tasks."""
    try:
        with srv.client() as c:
            tasks = [
                c.post(
                    "/v1/tasks",
                    json={"question": q, "webhook_url": receiver.url, "max_rounds": 4},
                    headers=ANA,
                ).json()
                for q in KILL_QUESTIONS
            ]
            wait_for(
                lambda: any(
                    (t := c.get(f"/v1/tasks/{x['id']}", headers=ANA).json())["status"] == "running"
                    and t["progress"]["events"] > 0
                    for x in tasks
                ),
                interval=0.02,
            )
    finally:
        srv.kill()
    return tasks


def restart_until_delivered(
    srv: Server,
    home: Path,
    workdir: Path,
    tasks: list[dict[str, Any]],
    events_of: str | None = None,
    **env: str,
) -> tuple[list[dict[str, Any]], str | None]:
    """Restart on the same port; wait until every task's webhook is delivered. Returns the
    final tasks and, if asked, one task's event stream read before stopping."""
    srv2 = Server(home, workdir, **env)
    srv2.port, srv2.base = srv.port, srv.base
    srv2.start()
    events = None
    try:
        with srv2.client() as c:
            final = [
                wait_for(
                    lambda x=x: (
                        (t := c.get(f"/v1/tasks/{x['id']}", headers=ANA).json())["webhook"]["state"]
                        == "delivered"
                        and t
                    )
                )
                for x in tasks
            ]
            if events_of is not None:
                events = c.get(f"/v1/tasks/{events_of}/events", headers=ANA).text
    finally:
        srv2.stop()
    return final, events


def assert_resumed_and_delivered_once(
    final: list[dict[str, Any]],
    tasks: list[dict[str, Any]],
    interrupted: list[str],
    receiver: Receiver,
) -> None:
    """Every task succeeded, the interrupted ones resumed, and the receiver processed each
    task's result exactly once by webhook id with a valid signature."""
    assert all(t["status"] == "succeeded" for t in final)
    for t in final:
        if t["id"] in interrupted:
            assert t["resumed"] >= 1
    assert receiver.rejected == []
    by_task = {p["data"]["id"]: wid for wid, p in receiver.processed.items()}
    assert set(by_task) == {t["id"] for t in tasks}
    assert {t["webhook"]["webhook_id"] for t in final} == set(receiver.processed)
    for payload in receiver.processed.values():
        assert payload["type"] == "task.succeeded" and payload["data"]["result"]["answer"]
    for headers, _ in receiver.deliveries:
        assert headers["webhook-id"] in receiver.processed
