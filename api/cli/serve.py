"""`waypoint serve` (the HTTP service) and `waypoint mcp` (retrieval tools over MCP)."""

from __future__ import annotations

import ipaddress
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from api.cli.common import AsUserOption, IndexOption, fail, resolve_caller


def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port (default 8000).")] = None,
    index: IndexOption = None,
    dev: Annotated[
        bool,
        typer.Option(
            "--dev",
            help="Development: start even without API keys (every /v1 request then gets "
            "401). Also WAYPOINT_ENV=development.",
        ),
    ] = False,
) -> None:
    """Serve the HTTP API, the /ui trace viewer and OpenAPI docs at /docs.

    Needs API keys (WAYPOINT_AUTH_FILE) unless --dev or WAYPOINT_ENV=development."""
    import uvicorn
    from pydantic import ValidationError

    from api.app import create_app
    from api.auth import AuthFileError, KeyRing, request_reload
    from api.logging import configure_logging
    from api.settings import ApiSettings
    from api.sources import SourcesFileError, load_sources_file
    from api.startup_checks import (
        HomeError,
        fatal_line,
        hand_over,
        home_findings,
        open_store_explained,
    )
    from api.tasks.store import TasksUrlError, check_tasks_url
    from retrieval.store import StoreError

    try:
        settings = ApiSettings()
    except ValidationError as exc:
        fail(f"bad WAYPOINT_ setting: {' '.join(str(exc).split())[:300]}")
    updates: dict[str, object] = {}
    if host is not None:
        updates["host"] = host
    if port is not None:
        updates["port"] = port
    if index is not None:
        updates["home"] = index
    settings = settings.model_copy(update=updates)
    # Check the configuration files up front: a bad file is one line and exit 2, not a
    # traceback from inside the server's startup.
    try:
        keys = KeyRing.from_file(settings.auth_file)
        load_sources_file(settings.sources_file)
        check_tasks_url(settings.resolved_tasks_url())
    except (AuthFileError, SourcesFileError, TasksUrlError) as exc:
        fail(str(exc))
    # Each store of the home: a damaged one is one line naming the file and its repair,
    # not a traceback from inside the server's start-up (a missing leg starts degraded).
    findings = home_findings(settings.home, None, settings)
    fatal = fatal_line(findings)
    if fatal is not None:
        fail(fatal)
    for finding in findings:
        print(f"warning: {finding.line()}", file=sys.stderr)
    if not len(keys):
        # A service without keys answers 401 to every request: refuse to start, unless
        # in development, where it may run to look at /docs or /healthz.
        development = dev or os.environ.get("WAYPOINT_ENV", "").strip() == "development"
        where = (
            f"auth file {settings.auth_file} holds no key"
            if settings.auth_file is not None
            else "no API keys (WAYPOINT_AUTH_FILE is not set)"
        )
        if not development:
            fail(
                f"{where}: set WAYPOINT_AUTH_FILE to a JSON file "
                '{"keys": {"<key>": {"user": "...", "groups": ["..."]}}} '
                "(or pass --dev to start without keys)"
            )
        print(f"warning: {where}: every /v1 request gets 401 (--dev)", file=sys.stderr)
    configure_logging(settings.log_level, settings.log_json)
    settings.home.mkdir(parents=True, exist_ok=True)
    try:
        # Opened here, not in the server's lifespan: an index that does not open is one
        # line naming it (and a lock held by another process names that process).
        store = open_store_explained(settings.home, command="serve")
    except (HomeError, StoreError) as exc:
        fail(str(exc))
    hand_over(settings.home, store, findings)  # the service's lifespan takes both over
    app = create_app(settings)
    if hasattr(signal, "SIGHUP"):
        # Re-read the auth file (its keys also reload within a second of a change to the
        # file). The handler only flags it: the key ring reads the file at its next use.
        # Uvicorn handles SIGINT/SIGTERM only; SIGHUP would otherwise end the process.
        signal.signal(signal.SIGHUP, lambda _signum, _frame: request_reload())
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=True,
        timeout_graceful_shutdown=5,
    )


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps a server reachable from this machine only."""
    if host.casefold() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any address
        return False


def mcp(
    transport: Annotated[
        Literal["stdio", "http"], typer.Option(help="stdio, or streamable HTTP.")
    ] = "stdio",
    host: Annotated[str, typer.Option(help="Bind address for --transport http.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port for --transport http.")] = 8001,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            help="Let --transport http bind a non-loopback --host. The MCP endpoint has no "
            "authentication: anyone who reaches it reads with the caller's ACL.",
        ),
    ] = False,
    as_user: AsUserOption = None,
    project: Annotated[str | None, typer.Option(help="Scope (default: the caller's).")] = None,
    index: IndexOption = None,
) -> None:
    """Serve search_knowledge, lookup_entity, get_document and get_neighbors over MCP,
    under the ACL of $WAYPOINT_MCP_API_KEY's principal (or --as USER)."""
    from api.auth import AuthFileError, KeyRing
    from api.logging import configure_logging
    from api.mcp_server import build_mcp_server
    from api.settings import ApiSettings
    from api.startup_checks import HomeError, open_checked_store
    from retrieval.store import StoreError

    remote = transport == "http" and not is_loopback(host)
    if remote and not allow_remote:
        fail(
            f"MCP over HTTP has no authentication: binding {host} lets anyone who can reach "
            "it read with this caller's ACL; bind 127.0.0.1 (the default) or pass --allow-remote"
        )
    settings = ApiSettings()
    if as_user is not None:
        caller = resolve_caller(as_user, project)
    elif settings.mcp_api_key:
        try:
            principal = KeyRing.from_file(settings.auth_file).lookup(settings.mcp_api_key)
        except AuthFileError as exc:
            fail(str(exc))
        if principal is None:
            fail("WAYPOINT_MCP_API_KEY is not a key in WAYPOINT_AUTH_FILE")
        caller = principal.caller(project)
    else:
        fail("say whose ACL the tools use: set WAYPOINT_MCP_API_KEY or pass --as USER")
    # stdout is the protocol channel on stdio: logs go to stderr only.
    configure_logging(settings.log_level, settings.log_json)
    home = Path(index) if index is not None else settings.home
    try:
        store, degraded = open_checked_store(home, command="mcp")
        server = build_mcp_server(store, caller)
    except (HomeError, StoreError) as exc:
        fail(str(exc))
    for finding in degraded:
        print(f"warning: {finding.line()}", file=sys.stderr)
    try:
        if transport == "stdio":
            server.run("stdio")
        else:
            if remote:
                print(
                    f"warning: MCP over HTTP bound to {host}: anyone who can reach it reads "
                    f"as {caller.user}",
                    file=sys.stderr,
                )
            server.run("streamable-http", host=host, port=port)
    finally:
        store.close()


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.command("mcp")(mcp)
