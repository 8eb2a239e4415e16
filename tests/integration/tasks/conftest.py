"""A real PostgreSQL server for the task-store tests, started by the test session.

Uses the Debian server binaries (``apt-get install -y postgresql``; they live under
/usr/lib/postgresql/<version>/bin). Postgres refuses to run as root, so when the tests
run as root initdb and pg_ctl run as the ``postgres`` user (``runuser``) on a temporary
data directory under /tmp that it owns. The server listens on a free port on 127.0.0.1
with trust authentication and is stopped at the end of the session. Each test gets a
fresh database. Without the binaries (or psycopg) the Postgres cases skip with the
reason.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


def _pg_bin() -> Path | None:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    def __init__(self, bindir: Path, root: Path, port: int, as_postgres: bool) -> None:
        self.bindir, self.root, self.port, self.as_postgres = bindir, root, port, as_postgres
        self.data = root / "data"
        self.log = root / "server.log"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self.as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)

    def start(self) -> None:
        r = self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "--auth=trust",
            "--username=postgres",
            "--encoding=UTF8",
            "--no-sync",
        )
        if r.returncode:
            raise RuntimeError(f"initdb failed: {r.stderr or r.stdout}")
        opts = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root}"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        r = self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-o", opts,
            "-l", str(self.log), "-w", "-t", "60", "start",
        )  # fmt: skip
        if r.returncode:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {r.stderr or r.stdout}\n{log[-2000:]}")

    def stop(self) -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def create_database(self) -> str:
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"'.encode())
        return self.url(name)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        pytest.skip("psycopg / psycopg-pool not installed (pip install 'waypoint[postgres]')")
    bindir = _pg_bin()
    if bindir is None or not (bindir / "pg_ctl").exists():
        pytest.skip(
            "PostgreSQL server binaries not installed (apt-get install -y postgresql; "
            "looked under /usr/lib/postgresql/*/bin and PATH)"
        )
    as_postgres = os.geteuid() == 0
    root = Path(tempfile.mkdtemp(prefix="waypoint-pg-", dir="/tmp"))
    if as_postgres:
        shutil.chown(root, "postgres", "postgres")
    server = PgServer(bindir, root, _free_port(), as_postgres)
    try:
        server.start()
    except Exception:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
        raise
    try:
        yield server
    finally:
        server.stop()
        with contextlib.suppress(OSError):
            shutil.rmtree(root)


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A fresh, empty database on the session's server."""
    return pg_server.create_database()
