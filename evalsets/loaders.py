"""Loaders for the evaluation formats: multi-hop QA, BEIR and the project's own set.

Loaders read files in place (``../shared/data`` is never copied) and turn them into
:class:`EvalQuestion` rows plus a corpus of :class:`Record` s. Gold evidence is always
expressed at document level (``Record.doc_id``), so one matching rule serves every format.

A bad row is reported with its line number and skipped; the run goes on.

Questions are split into two stable halves (:func:`question_split`): ``tune`` (what a
policy's constants may be chosen on) and ``report`` (what the scoreboard reports). The
corpus is never split: only which questions are asked.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrieval.records import PUBLIC_GROUP, Meta, Record, chunk_id, content_hash

# Folders of the project's own set and the source name each is ingested under.
ACME_SOURCES = ("wiki", "slack", "tickets", "code")
# Public benchmark passages carry no time; a fixed stamp keeps their content hash (and so
# the reuse of their index) stable from run to run.
UNDATED = datetime(2000, 1, 1, tzinfo=UTC)


class EvalInputError(ValueError):
    """The input cannot be evaluated at all (missing file, unknown format)."""


# -- the tune / report halves -------------------------------------------------------------

SPLITS = ("tune", "report", "all")
SPLIT_RULE = "sha256(question id, UTF-8) first byte even -> tune, odd -> report"


def question_split(qid: str) -> str:
    """The half a question belongs to, from its id alone (:data:`SPLIT_RULE`): stable
    across runs, machines, file order and the other rows of the file."""
    return "tune" if hashlib.sha256(qid.encode("utf-8")).digest()[0] % 2 == 0 else "report"


def check_split(split: str) -> str:
    name = split.strip().lower()
    if name not in SPLITS:
        raise EvalInputError(f"unknown split {split!r}; valid: {', '.join(SPLITS)}")
    return name


def in_split(qid: str, split: str) -> bool:
    return split == "all" or question_split(qid) == split


@dataclass(frozen=True)
class SkippedRow:
    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass
class EvalQuestion:
    id: str
    question: str
    answer: str
    aliases: list[str] = field(default_factory=list)
    type: str = "unknown"
    gold: list[str] = field(default_factory=list)  # gold document ids
    user: str = "eval"
    groups: list[str] = field(default_factory=list)
    expect: str = "answer"  # "answer" | "refuse"

    @property
    def answers(self) -> list[str]:
        return [a for a in [self.answer, *self.aliases] if a]


@dataclass
class EvalSet:
    """Questions, their corpus and what was skipped on the way."""

    dataset: str
    questions: list[EvalQuestion]
    records: list[Record]
    skipped: list[SkippedRow] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # corpus items a connector rejected
    kind: str = "multihop"  # "multihop" | "acme" | "beir"
    split: str = "all"  # which half of the questions (the corpus is always whole)

    def select(self, split: str) -> EvalSet:
        """Keep the questions of ``split`` only; the corpus is left whole."""
        split = check_split(split)
        self.questions = [q for q in self.questions if in_split(q.id, split)]
        self.split = split
        return self


def dataset_name(path: Path) -> str:
    """A short, stable source name: the folder for generic file names (``dev.jsonl``)."""
    stem = path.name.split(".")[0]
    generic = {"dev", "test", "train", "questions", "queries", "corpus", "validation"}
    name = path.resolve().parent.name if stem.lower() in generic else stem
    return re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-") or "eval"


def _open_text(path: Path) -> Any:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def _require_file(path: Path) -> None:
    if not path.is_file():
        raise EvalInputError(f"no such file: {path}")


def iter_jsonl(path: Path, skipped: list[SkippedRow]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, row)``; undecodable lines are reported and skipped."""
    _require_file(path)
    with _open_text(path) as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                skipped.append(SkippedRow(str(path), n, f"invalid JSON ({exc.msg})"))
                continue
            if not isinstance(row, dict):
                skipped.append(SkippedRow(str(path), n, "not a JSON object"))
                continue
            yield n, row


# -- multi-hop (HotpotQA / MuSiQue / 2WikiMultiHopQA) ------------------------------------


def paragraph_id(source: str, title: str, text: str) -> str:
    digest = hashlib.sha1((title + text).encode("utf-8")).hexdigest()[:16]
    return f"{source}:{digest}"


def passage_record(source: str, doc_id: str, title: str, text: str) -> Record:
    """One passage = one document of one chunk (gold is matched on the document id)."""
    # The title travels in metadata: the lexical engine indexes it as its own (boosted)
    # field and the indexer prefixes it to the embedded text, so it is not repeated here.
    return Record(
        id=chunk_id(doc_id, 0),
        source=source,
        text=text,
        timestamp=UNDATED,
        metadata={
            Meta.TITLE: title,
            Meta.DOC_ID: doc_id,
            Meta.KIND: "passage",
            Meta.CHUNK_INDEX: 0,
            Meta.CHAR_START: 0,
            Meta.CHAR_END: len(text),
            Meta.CONTENT_HASH: content_hash(title + "\n" + text),
            Meta.ACL: [PUBLIC_GROUP],
        },
    )


def paragraph_record(source: str, title: str, text: str) -> Record:
    return passage_record(source, paragraph_id(source, title, text), title, text)


def _paragraphs(row: dict[str, Any]) -> list[dict[str, Any]] | None:
    paras = row.get("paragraphs")
    if not isinstance(paras, list):
        return None
    return [p for p in paras if isinstance(p, dict) and isinstance(p.get("text"), str)]


def _row_problem(row: dict[str, Any]) -> str | None:
    missing = [k for k in ("question", "paragraphs") if not row.get(k)]
    if missing:
        return "missing " + " and ".join(f"'{k}'" for k in missing)
    if _paragraphs(row) is None:
        return "'paragraphs' is not a list"
    return None


def load_multihop(
    questions_path: Path,
    corpus_paths: list[Path] | None = None,
    source: str | None = None,
) -> EvalSet:
    """Questions from ``questions_path``; corpus = union of the paragraphs of every row of
    every corpus file (default: the questions file), deduplicated on (title, text)."""
    source = source or dataset_name(questions_path)
    skipped: list[SkippedRow] = []
    questions: list[EvalQuestion] = []
    records: dict[tuple[str, str], Record] = {}

    def add_paragraphs(row: dict[str, Any]) -> None:
        for p in _paragraphs(row) or []:
            key = (str(p.get("title") or ""), p["text"])
            if key not in records:
                records[key] = paragraph_record(source, *key)

    for n, row in iter_jsonl(questions_path, skipped):
        problem = _row_problem(row)
        if problem:
            skipped.append(SkippedRow(str(questions_path), n, problem))
            continue
        paras = _paragraphs(row) or []
        gold = [
            paragraph_id(source, str(p.get("title") or ""), p["text"])
            for p in paras
            if p.get("is_supporting")
        ]
        answerable = row.get("answerable", True) is not False
        questions.append(
            EvalQuestion(
                id=str(row.get("id") or f"line-{n}"),
                question=str(row["question"]),
                answer=str(row.get("answer") or ""),
                aliases=[str(a) for a in row.get("answer_aliases") or []],
                type=str(row.get("type") or "unknown"),
                gold=list(dict.fromkeys(gold)),
                expect="answer" if answerable else "refuse",
            )
        )
        if not corpus_paths:
            add_paragraphs(row)

    for cpath in corpus_paths or []:
        same_file = cpath.resolve() == questions_path.resolve()
        corpus_skips: list[SkippedRow] = []
        for n, row in iter_jsonl(cpath, corpus_skips):
            if _paragraphs(row) is None or not row.get("paragraphs"):
                corpus_skips.append(SkippedRow(str(cpath), n, "missing 'paragraphs'"))
                continue
            add_paragraphs(row)
        if not same_file:  # the questions pass already reported this file's bad rows
            skipped.extend(corpus_skips)

    return EvalSet(source, questions, list(records.values()), skipped, kind="multihop")


# -- the project's own set (evalsets/acme) ------------------------------------------------


def is_acme_file(path: Path) -> bool:
    """The project's own format: rows carry ``gold_docs`` instead of ``paragraphs``."""
    skipped: list[SkippedRow] = []
    for _, row in iter_jsonl(path, skipped):
        return "gold_docs" in row and "paragraphs" not in row
    return False


def load_acme_questions(path: Path) -> tuple[list[EvalQuestion], list[SkippedRow]]:
    skipped: list[SkippedRow] = []
    questions: list[EvalQuestion] = []
    for n, row in iter_jsonl(path, skipped):
        if not row.get("question"):
            skipped.append(SkippedRow(str(path), n, "missing 'question'"))
            continue
        expect = str(row.get("expect") or "answer")
        if expect not in ("answer", "refuse"):
            skipped.append(SkippedRow(str(path), n, f"unknown expect {expect!r}"))
            continue
        who = row.get("as") or {}
        questions.append(
            EvalQuestion(
                id=str(row.get("id") or f"line-{n}"),
                question=str(row["question"]),
                answer=str(row.get("answer") or ""),
                aliases=[str(a) for a in row.get("answer_aliases") or []],
                type=str(row.get("type") or "unknown"),
                gold=[str(d) for d in row.get("gold_docs") or []],
                user=str(who.get("user") or "eval"),
                groups=[str(g) for g in who.get("groups") or []],
                expect=expect,
            )
        )
    return questions, skipped


def load_acme(questions_path: Path, corpus_dir: Path | None = None) -> EvalSet:
    """Questions plus the corpus folders ingested through the real connectors."""
    from evalsets.corpus_spec import load_spec_set
    from retrieval.connectors import load_path

    if corpus_dir is None and (spec_set := load_spec_set(questions_path)) is not None:
        return spec_set  # a corpus.json beside the questions names the corpus folders
    corpus_dir = corpus_dir or questions_path.parent / "corpus"
    if not corpus_dir.is_dir():
        raise EvalInputError(f"no corpus folder next to the questions: {corpus_dir}")
    questions, skipped = load_acme_questions(questions_path)
    records: list[Record] = []
    failures: list[str] = []
    for source in ACME_SOURCES:
        sub = corpus_dir / source
        if not sub.exists():
            continue
        result = load_path(sub, source=source)
        records.extend(result.records)
        failures.extend(f"{p}: {reason}" for p, reason in result.failures)
    return EvalSet(dataset_name(questions_path), questions, records, skipped, failures, kind="acme")


def load_questions(
    questions_path: Path, corpus_paths: list[Path] | None = None, split: str = "all"
) -> EvalSet:
    """Dispatch on the file's format (multi-hop or the project's own), then keep the
    questions of ``split`` (the corpus stays whole: the other half's paragraphs too)."""
    split = check_split(split)
    _require_file(questions_path)
    for c in corpus_paths or []:
        _require_file(c)
    if is_acme_file(questions_path):
        if corpus_paths:
            raise EvalInputError("--corpus applies to multi-hop files; acme reads corpus/")
        return load_acme(questions_path).select(split)
    return load_multihop(questions_path, corpus_paths).select(split)


# -- BEIR ---------------------------------------------------------------------------------


@dataclass
class BeirSet:
    dataset: str
    records: list[Record]
    queries: dict[str, str]  # query id -> text, only queries with qrels, file order
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: relevance}
    skipped: list[SkippedRow] = field(default_factory=list)
    split: str = "all"  # which half of the queries (see question_split); corpus whole


def beir_doc_id(source: str, native_id: str) -> str:
    return f"{source}:{native_id}"


def load_beir(directory: Path, split: str = "test", half: str = "all") -> BeirSet:
    """``corpus.jsonl(.gz)``, ``queries.jsonl``, ``qrels/<split>.tsv``; ids become
    ``<dataset>:<_id>`` so they match the ingested records' doc ids. ``split`` is BEIR's
    own qrels split; ``half`` keeps the queries of one half (``tune`` / ``report`` /
    ``all``, by query id, :func:`question_split`), the corpus staying whole."""
    half = check_split(half)
    if not directory.is_dir():
        raise EvalInputError(f"no such directory: {directory}")
    corpus = next(
        (directory / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (directory / n).is_file()),
        None,
    )
    if corpus is None:
        raise EvalInputError(f"no corpus.jsonl(.gz) in {directory}")
    qrels_path = directory / "qrels" / f"{split}.tsv"
    _require_file(qrels_path)
    source = re.sub(r"^beir[_-]", "", dataset_name(directory / "corpus.jsonl"))
    skipped: list[SkippedRow] = []

    records: list[Record] = []
    for n, row in iter_jsonl(corpus, skipped):
        if "_id" not in row or not isinstance(row.get("text"), str):
            skipped.append(SkippedRow(str(corpus), n, "missing '_id' or 'text'"))
            continue
        did = beir_doc_id(source, str(row["_id"]))
        records.append(passage_record(source, did, str(row.get("title") or ""), row["text"]))

    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            parts = line.rstrip("\r\n").split("\t")
            if n == 1 and parts[0] == "query-id":
                continue
            if len(parts) < 3 or not parts[2].lstrip("-").isdigit():
                if line.strip():
                    skipped.append(SkippedRow(str(qrels_path), n, "expected 3 tab fields"))
                continue
            qrels.setdefault(parts[0], {})[beir_doc_id(source, parts[1])] = int(parts[2])

    queries: dict[str, str] = {}
    for n, row in iter_jsonl(directory / "queries.jsonl", skipped):
        if "_id" not in row or not row.get("text"):
            skipped.append(SkippedRow(str(directory / "queries.jsonl"), n, "missing '_id'"))
            continue
        if str(row["_id"]) in qrels and in_split(str(row["_id"]), half):
            queries[str(row["_id"])] = str(row["text"])
    return BeirSet(source, records, queries, qrels, skipped, split=half)
