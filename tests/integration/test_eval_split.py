"""`waypoint eval --split`: each half asks its own questions over the same, whole corpus."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalsets.loaders import load_multihop, question_split

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
MULTIHOP = REPO / "tests" / "unit" / "evalsets" / "fixtures" / "multihop.jsonl"


def _eval(home: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "api.cli.main", "eval", str(MULTIHOP), "--mode", "lexical"]
        + ["--out", str(out), *args],
        cwd=REPO,
        env={**os.environ, "WAYPOINT_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_halves_share_the_index_and_split_the_questions(tmp_path: Path) -> None:
    ids = [q.id for q in load_multihop(MULTIHOP).questions]
    reports = {}
    for i, split in enumerate(("report", "tune", "all")):
        out = tmp_path / f"{split}.json"
        args = ("--split", split) if i else ()  # the first run takes the default
        proc = _eval(tmp_path / "home", out, *args)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert f"split {split}:" in proc.stdout
        if i:  # same corpus whatever the split: the first run's index is reused
            assert "ingestion skipped" in proc.stdout
        reports[split] = json.loads(out.read_text())
        assert reports[split]["split"] == split
    counts = {s: r["questions"] for s, r in reports.items()}
    assert counts["report"] == sum(question_split(q) == "report" for q in ids)
    assert counts["tune"] + counts["report"] == counts["all"] == len(ids)
    passages = {r["corpus_passages"] for r in reports.values()}
    assert passages == {reports["all"]["corpus_passages"]}


def test_unknown_split_is_a_usage_error(tmp_path: Path) -> None:
    proc = _eval(tmp_path, tmp_path / "x.json", "--split", "test")
    assert proc.returncode == 2
    assert "tune, report, all" in proc.stderr and "Traceback" not in proc.stderr
