"""Hops the corpus writes down: the page holding the answer shares no words with the
question (nor its title); only an identifier or a link in a passage the question finds
leads there. ``iterative`` follows it, ``hybrid`` (one search) cannot."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graph.models import Caller, RunOptions
from graph.runner import Researcher
from retrieval.connectors import load_path

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

_FILLER = [
    "The nightly billing export writes invoices for {x} carriers to the archive bucket.",
    "When the nightly billing export for {x} runs late, finance reruns it by hand.",
    "Stalls of the {x} nightly report export were traced to a slow replica.",
    "Who should be contacted about the {x} export schedule? Ask in the channel.",
]


def _corpus(root: Path) -> None:
    (root / "runbooks").mkdir(parents=True)
    (root / "registry").mkdir()
    (root / "misc").mkdir()
    # The passage the question finds: it names an error code the registry defines, and
    # links the page that says who owns the ledger queue.
    (root / "runbooks" / "billing-export.md").write_text(
        "# Billing export runbook\n\n"
        "When the nightly billing export stalls it fails with error code QX-7731. "
        "The stalled jobs sit on the [ledger queue](../registry/queues.md#ledger).\n"
    )
    # Reached only through QX-7731 (its definition line) - no word of the question.
    (root / "registry" / "codes.md").write_text(
        "# Registry\n\n## Codes\n\n- QX-7731: escalate to Mirela Voss of the Heron crew\n"
    )
    # Reached only through the link.
    (root / "registry" / "queues.md").write_text(
        "# Queues\n\n## Ledger\n\nThe ledger queue is drained by Tobiah Quist on weekdays.\n"
    )
    for i in range(24):
        text = _FILLER[i % len(_FILLER)].format(x=f"region {i}")
        (root / "misc" / f"note-{i}.md").write_text(f"# Note {i}\n\n{text}\n")


@pytest.fixture(scope="module")
def researcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Researcher]:
    from retrieval.store import Store

    base = tmp_path_factory.mktemp("structure-hops")
    _corpus(base / "wiki")
    store = Store.open(home=base / "home")
    report = store.ingest(load_path(base / "wiki", source="wiki").records)
    assert report.broken_links == []
    r = Researcher(store)
    yield r
    r.close()
    store.close()


async def _docs(researcher: Researcher, question: str, mode: Any) -> set[str]:
    result = await researcher.run(
        question, Caller(user="u", groups=["eng"]), RunOptions(mode=mode, budget=5, k=5)
    )
    return {e.doc_id for e in result.evidence}


@pytest.mark.parametrize(
    ("question", "target"),
    [
        (
            "Who should be contacted about the error the nightly billing export stalls with?",
            "wiki:registry/codes.md",
        ),
        (
            "Who drains the stalled jobs of the nightly billing export?",
            "wiki:registry/queues.md",
        ),
    ],
    ids=["identifier", "link"],
)
async def test_iterative_follows_the_corpus_structure_hybrid_does_not(
    researcher: Researcher, question: str, target: str
) -> None:
    hybrid = await _docs(researcher, question, "hybrid")
    iterative = await _docs(researcher, question, "iterative")
    assert "wiki:runbooks/billing-export.md" in hybrid  # the passage that names the hop
    assert target not in hybrid
    assert target in iterative
