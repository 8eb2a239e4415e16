"""A question set whose corpus lives outside git, named by a ``corpus.json`` beside it.

The acme loader reads ``corpus/`` next to the questions. A set built from documents that
are installed, not committed (``evalsets/pydocs``: the Python HTML docs of the Debian
package ``python3-doc``), names its folders in ``corpus.json`` instead::

    {"sources": [{"path": "../../.waypoint/pydocs-corpus", "source": "pydocs",
                  "env": "WAYPOINT_PYDOCS_CORPUS"}],
     "build": "make pydocs"}

``path`` is relative to the ``corpus.json`` folder (or absolute); the environment
variable named by ``env``, when set, replaces it. Each folder is read through the real
connectors (``retrieval.connectors.load_path``) under its ``source`` name, with an
optional ``acl`` list (default: public), exactly as ``waypoint ingest <path> --source
<source>`` would, so doc ids are ``<source>:<path relative to the folder>``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsets.loaders import EvalInputError, EvalSet, dataset_name, load_acme_questions
from retrieval.records import Record

SPEC_FILE = "corpus.json"


@dataclass(frozen=True)
class SpecSource:
    path: Path
    source: str
    acl: list[str] | None = None


@dataclass(frozen=True)
class CorpusSpec:
    file: Path
    sources: list[SpecSource] = field(default_factory=list)
    build: str | None = None  # the command that builds the corpus, for error messages


def _source(raw: Any, base: Path, spec_file: Path) -> SpecSource:
    if not isinstance(raw, dict) or not raw.get("path") or not raw.get("source"):
        raise EvalInputError(f"{spec_file}: each source needs 'path' and 'source'")
    env = raw.get("env")
    override = os.environ.get(str(env)) if env else None
    path = Path(override or os.path.expanduser(str(raw["path"])))
    acl = raw.get("acl")
    return SpecSource(
        path=path if path.is_absolute() else (base / path).resolve(),
        source=str(raw["source"]),
        acl=[str(g) for g in acl] if isinstance(acl, list) and acl else None,
    )


def read_corpus_spec(questions_path: Path) -> CorpusSpec | None:
    """The ``corpus.json`` next to ``questions_path``, or ``None`` when there is none."""
    spec_file = questions_path.parent / SPEC_FILE
    if not spec_file.is_file():
        return None
    try:
        raw = json.loads(spec_file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EvalInputError(f"{spec_file}: unreadable ({exc})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("sources"), list):
        raise EvalInputError(f"{spec_file}: expected an object with a 'sources' list")
    base = spec_file.parent
    sources = [_source(s, base, spec_file) for s in raw["sources"]]
    if not sources:
        raise EvalInputError(f"{spec_file}: 'sources' is empty")
    build = str(raw["build"]) if raw.get("build") else None
    return CorpusSpec(spec_file, sources, build)


def load_spec_records(spec: CorpusSpec) -> tuple[list[Record], list[str]]:
    """Every source folder through the real connectors: (records, failures)."""
    from retrieval.connectors import load_path

    records: list[Record] = []
    failures: list[str] = []
    for src in spec.sources:
        if not src.path.exists():
            hint = f": build it with `{spec.build}`" if spec.build else ""
            raise EvalInputError(f"corpus folder {src.path} ({spec.file}) does not exist{hint}")
        result = load_path(src.path, source=src.source, acl=src.acl)
        records.extend(result.records)
        failures.extend(f"{p}: {reason}" for p, reason in result.failures)
    return records, failures


def load_spec_set(questions_path: Path) -> EvalSet | None:
    """The acme-format questions with the corpus ``corpus.json`` names; ``None`` when the
    questions have no ``corpus.json`` (the caller reads ``corpus/`` as before)."""
    spec = read_corpus_spec(questions_path)
    if spec is None:
        return None
    records, failures = load_spec_records(spec)
    questions, skipped = load_acme_questions(questions_path)
    return EvalSet(dataset_name(questions_path), questions, records, skipped, failures, kind="acme")
