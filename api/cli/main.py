"""The `waypoint` command line: one typer app, each area registers its own commands."""

from __future__ import annotations

import importlib
import logging
import sys

import typer

app = typer.Typer(
    name="waypoint",
    help="Waypoint: agentic research over your organisation's knowledge, with cited answers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Each module defines `register(app)`; one line per area.
_AREAS = [
    "api.cli.index",
    "api.cli.eval",
    "api.cli.research",
    "api.cli.serve",
]


def _register_all() -> None:
    for name in _AREAS:
        importlib.import_module(name).register(app)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    _register_all()
    try:
        app(standalone_mode=True)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
