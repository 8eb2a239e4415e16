"""The README's "Using it" commands run as written after `make demo` (issue 25).

The demo's ingest lines are read from the Makefile's `demo` recipe and run as it runs them
(into the default home, `<dir>/.waypoint`); then every shell command of the README's
"Using it" section is run, in order, from a directory that looks like the repository's
root (its `evalsets/` and `tests/`), with no WAYPOINT_HOME set, so the default home is the
one the demo filled. Skipped, each with its reason: activating the venv, the servers
(`serve`, `mcp`), and the public evaluation sets (data outside the repository). Each
command must exit 0 and print what the README says it does.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import REPO, WAYPOINT

pytestmark = pytest.mark.e2e

README = REPO / "README.md"
MAKEFILE = REPO / "Makefile"


def readme_commands() -> list[str]:
    """The command lines of the bash blocks of README's "Using it" section."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Using it")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    lines: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", section, re.S):
        for line in block.splitlines():
            if line.strip() and not line.strip().startswith("#"):
                lines.append(line.strip())
    return lines


def demo_recipe() -> list[str]:
    """The `demo` target's recipe lines, as the Makefile has them."""
    recipe: list[str] = []
    inside = False
    for line in MAKEFILE.read_text(encoding="utf-8").splitlines():
        if re.match(r"^demo\s*:", line):
            inside = True
            continue
        if inside:
            if not line.startswith("\t"):
                break
            recipe.append(line.strip())
    return recipe


def demo_question() -> str:
    match = re.search(r"^DEMO_QUESTION \?= (.+)$", MAKEFILE.read_text(), re.M)
    assert match, "the Makefile names its demo question"
    return match.group(1).strip()


def split(line: str) -> tuple[dict[str, str], list[str]]:
    """``VAR=x waypoint a b  # comment`` -> ({"VAR": "x"}, ["waypoint", "a", "b"])."""
    tokens = shlex.split(line, comments=True)
    env: dict[str, str] = {}
    while tokens and re.match(r"^[A-Z_][A-Z0-9_]*=", tokens[0]):
        name, _, value = tokens.pop(0).partition("=")
        env[name] = value
    return env, tokens


def skip_reason(env: dict[str, str], argv: list[str]) -> str | None:
    if argv[0] == "source":
        return "activates the venv: the test runs the venv's waypoint itself"
    assert argv[0] == "waypoint", f"a README command this test does not know: {argv}"
    if argv[1] in ("serve", "mcp"):
        return "a server (tests/e2e/test_service.py and test_mcp*.py start them)"
    if any("../shared/data" in a for a in argv):
        return "a public evaluation set: data outside the repository"
    return None


# What each command must print (stdout), beyond exiting 0.
def _check(argv: list[str], out: str, cwd: Path, state: dict[str, str]) -> None:
    command = argv[1]
    if command == "sources":
        for source in ("wiki", "slack", "tickets", "code"):
            assert source in out
    elif command == "search" and "--json" in argv:
        hits = [h["doc_id"] for h in json.loads(out)["hits"]]
        assert hits, out
        if "--as" in argv and argv[argv.index("--as") + 1] == "ruth":
            assert "wiki:hr/compensation-bands-2026.md" in hits  # an hr-only page, ruth is hr
    elif command == "search":
        assert "results" in out and ("fused (RRF)" in out or "--explain" not in argv)
    elif command == "ingest":
        assert out.startswith("documents: "), out
        if argv[2].startswith("evalsets/acme/corpus/"):  # what the demo ingested already
            assert "0 added" in out and "embeddings computed 0" in out, out
        else:
            assert "0 added" not in out, out
    elif command == "delete":
        assert out.startswith("deleted "), out
    elif command == "reindex":
        assert "switched to generation" in out
    elif command == "ask" and "--json" in argv:
        result = json.loads(out)
        assert result["answer"].strip() and result["run_id"]
        state["run_id"] = result["run_id"]
    elif command == "ask":
        assert "Dana Okafor" in out, out  # the demo corpus answers the README's question
        if "--trace" in argv:
            assert "round 1" in out
        state["run_id"] = re.findall(r"^run ([0-9a-f]{32}) ", out, re.M)[-1]
    elif command == "trace":
        assert state["run_id"] in out and "round 1" in out
    elif command == "eval":
        written = cwd / argv[argv.index("--out") + 1]
        report = json.loads(written.read_text())
        assert report["dataset"] and report["questions"] > 0
        assert set(report["modes"]) == set(argv[argv.index("--mode") + 1].split(","))
        if "--plot" in argv:
            assert (cwd / argv[argv.index("--plot") + 1]).stat().st_size > 0


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory shaped like the repository's root after `make demo`: its `.waypoint`
    holds what the Makefile's demo ingested."""
    root = tmp_path_factory.mktemp("readme")
    for name in ("evalsets", "tests"):
        (root / name).symlink_to(REPO / name)
    env = {**os.environ, "WAYPOINT_HOME": str(root / ".waypoint")}  # as the Makefile exports
    ingests = [line for line in demo_recipe() if " ingest " in line]
    assert len(ingests) >= 4, demo_recipe()
    for line in ingests:
        argv = shlex.split(line.replace("$(BIN)/waypoint", WAYPOINT))
        assert "--index" not in argv, "the demo ingests into the default home"
        proc = subprocess.run(argv, env=env, cwd=root, capture_output=True, text=True, timeout=580)
        assert proc.returncode == 0, f"{line}: {proc.stderr[-2000:]}"
    return root


def _user_env() -> dict[str, str]:
    """A shell with no Waypoint setting: the README's commands must need none."""
    return {k: v for k, v in os.environ.items() if not k.startswith("WAYPOINT_")}


STATE: dict[str, str] = {}
COMMANDS = readme_commands()


def test_the_readme_asks_the_demo_question() -> None:
    asks = [line for line in COMMANDS if split(line)[1][1:2] == ["ask"]]
    assert asks and all(demo_question() in line for line in asks)


def test_the_makefile_demo_ingests_then_searches_and_asks() -> None:
    recipe = " ".join(demo_recipe())
    assert "waypoint search" in recipe and "waypoint ask" in recipe


def test_enough_of_the_readme_runs() -> None:
    run = {split(line)[1][1] for line in COMMANDS if skip_reason(*split(line)) is None}
    assert {"sources", "search", "ingest", "delete", "reindex", "ask", "trace", "eval"} <= run


@pytest.mark.parametrize("line", COMMANDS, ids=[f"{i:02d}" for i in range(len(COMMANDS))])
def test_readme_command_runs_as_written(line: str, demo_dir: Path) -> None:
    env, argv = split(line)
    if (reason := skip_reason(env, argv)) is not None:
        pytest.skip(reason)
    if "RUN_ID" in argv:
        assert "run_id" in STATE, "an earlier `waypoint ask` gives the run id"
        argv = [STATE["run_id"] if a == "RUN_ID" else a for a in argv]
    proc = subprocess.run(
        [WAYPOINT, *argv[1:]],
        env={**_user_env(), **env, "COLUMNS": "200"},
        cwd=demo_dir,
        capture_output=True,
        text=True,
        timeout=580,
    )
    assert proc.returncode == 0, (
        f"{line}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}"
    )
    _check(argv, proc.stdout, demo_dir, STATE)
