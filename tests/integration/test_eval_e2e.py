"""End-to-end `waypoint eval` through the real CLI, real engines and the real embedder.

Uses the project's own set (evalsets/acme) when it is present; otherwise a small
multi-hop file cut at test time from ../shared/data/hotpotqa (written to tmp, never to
the repository).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalsets.metrics import METRICS

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ACME_QUESTIONS = REPO / "evalsets" / "acme" / "questions.jsonl"
HOTPOT = REPO.parent / "shared" / "data" / "hotpotqa" / "dev.jsonl"
RATIOS = [m for m in METRICS if m not in ("mean_rounds", "mean_tool_calls", "p50_s", "p95_s")]
SINGLE_ROUND = ("lexical", "dense", "hybrid")


def _questions_file(tmp_path: Path) -> Path:
    if ACME_QUESTIONS.is_file() and (ACME_QUESTIONS.parent / "corpus").is_dir():
        return ACME_QUESTIONS
    if not HOTPOT.is_file():
        pytest.skip("neither evalsets/acme nor ../shared/data/hotpotqa is available")
    rows = HOTPOT.read_text(encoding="utf-8").splitlines()[:24]
    path = tmp_path / "mini" / "dev.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _waypoint(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WAYPOINT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "api.cli.main", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def eval_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    tmp = tmp_path_factory.mktemp("eval")
    questions = _questions_file(tmp)
    out = tmp / "r.json"
    plot = tmp / "r.png"
    proc = _waypoint(
        tmp / "home",
        "eval",
        str(questions),
        "--mode",
        ",".join(SINGLE_ROUND),
        "--out",
        str(out),
        "--plot",
        str(plot),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return tmp, questions, json.loads(out.read_text())


def test_report_has_exactly_the_documented_shape(eval_run: tuple[Path, Path, dict]) -> None:
    _, _, report = eval_run
    assert set(report) == {
        "dataset",
        "split",
        "questions",
        "corpus_passages",
        "budget",
        "modes",
        "skipped_rows",
    }
    assert report["budget"] == 10
    assert report["questions"] > 0 and report["corpus_passages"] > report["questions"]
    assert list(report["modes"]) == list(SINGLE_ROUND)
    for values in report["modes"].values():
        assert set(METRICS) <= set(values)
        assert values["by_type"], "a breakdown by question type is expected"
        for sub in values["by_type"].values():
            assert set(METRICS) <= set(sub)


def test_figures_are_ratios_and_single_round_gives_no_answer(
    eval_run: tuple[Path, Path, dict],
) -> None:
    _, _, report = eval_run
    for mode, values in report["modes"].items():
        for metric in RATIOS:
            v = values[metric]
            assert v is None or 0.0 <= v <= 1.0, (mode, metric, v)
        assert values["support_recall"] is not None
        assert values["em"] is None and values["f1"] is None
        assert values["citation_precision"] is None
        assert values["mean_rounds"] == 1.0
        assert values["p95_s"] >= values["p50_s"] >= 0.0


def test_modes_do_not_all_agree(eval_run: tuple[Path, Path, dict]) -> None:
    _, _, report = eval_run
    keyed = {
        mode: tuple(v[m] for m in ("support_recall_all", "support_recall", "mrr"))
        for mode, v in report["modes"].items()
    }
    assert len(set(keyed.values())) > 1, keyed


def test_plot_written(eval_run: tuple[Path, Path, dict]) -> None:
    tmp, _, _ = eval_run
    assert (tmp / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_second_run_reuses_the_index(eval_run: tuple[Path, Path, dict]) -> None:
    tmp, questions, _ = eval_run
    proc = _waypoint(tmp / "home", "eval", str(questions), "--mode", "lexical", "--limit", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ingestion skipped" in proc.stdout


def test_usage_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    bad_mode = _waypoint(tmp_path, "eval", str(HOTPOT), "--mode", "lexical,telepathy")
    assert bad_mode.returncode == 2
    assert "telepathy" in bad_mode.stderr and "hybrid" in bad_mode.stderr
    assert "Traceback" not in bad_mode.stderr
    missing = _waypoint(tmp_path, "eval", str(tmp_path / "absent.jsonl"))
    assert missing.returncode == 2
    assert len(missing.stderr.strip().splitlines()) == 1


def test_iterative_mode_answers_and_cites(eval_run: tuple[Path, Path, dict]) -> None:
    tmp, questions, _ = eval_run
    out = tmp / "iterative.json"
    proc = _waypoint(
        tmp / "home",
        "eval",
        str(questions),
        "--mode",
        "iterative",
        "--limit",
        "6",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    values = json.loads(out.read_text())["modes"]["iterative"]
    assert values["errors"] == 0
    assert values["em"] is not None and values["f1"] is not None  # it produces answers
    assert 0.0 <= values["f1"] <= 1.0
    assert values["mean_rounds"] >= 1.0 and values["mean_tool_calls"] >= 1.0
    assert values["support_recall"] is not None and 0.0 <= values["support_recall"] <= 1.0
