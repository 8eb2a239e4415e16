"""The lock file covers pyproject.toml: every dependency (default, dev and postgres extras)
is pinned, inside its declared range. A dependency added without `make lock` fails here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
# Installed by its exact version before the rest (the local CPU wheel); not in the lock.
NOT_LOCKED = {"torch"}


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        found = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
        if found:
            pins[canonicalize_name(found.group(1))] = found.group(2)
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    specs = [*project["dependencies"], *extras["dev"], *extras["postgres"]]
    return [Requirement(spec) for spec in specs]


def test_every_dependency_is_pinned_within_its_range() -> None:
    pins = _pins()
    wrong = []
    for req in _declared():
        name = canonicalize_name(req.name)
        if name in NOT_LOCKED:
            continue
        pinned = pins.get(name)
        if pinned is None or not req.specifier.contains(pinned, prereleases=True):
            wrong.append(f"{req} (locked: {pinned})")
    assert not wrong, f"run `make lock`: {wrong}"


def test_torch_stays_out_of_the_lock() -> None:
    # A pinned torch from the index would be the CUDA build; the Makefile installs the CPU one.
    assert not NOT_LOCKED & set(_pins())
