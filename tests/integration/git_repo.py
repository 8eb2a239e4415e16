"""A real git repository for tests, made with the git command line (fixed author and
dates, no user configuration read)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str, author: str = "Ada Lovelace") -> str:
    env = {
        "GIT_AUTHOR_NAME": author,
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": author,
        "GIT_COMMITTER_EMAIL": "ada@example.com",
        "GIT_AUTHOR_DATE": "2026-03-04T10:00:00+02:00",
        "GIT_COMMITTER_DATE": "2026-03-04T10:00:00+02:00",
        "HOME": str(repo),
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()
