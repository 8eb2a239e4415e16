"""The CLI run in-process (typer's runner) over real engines."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from api.cli.main import _register_all, app


@pytest.fixture(scope="module")
def cli() -> Any:
    """``cli("ingest", path, ..., env={...})`` -> the runner's result."""
    if not app.registered_commands:
        _register_all()
    runner = CliRunner()

    def run(*args: str, env: dict[str, str] | None = None) -> Any:
        return runner.invoke(app, list(args), env=env)

    return run
