"""Validate the acme evaluation set (stdlib only).

Checks that every JSON file parses, that every gold doc id resolves to a document under
the id rules of the connectors, that each answer (or an alias) is literally present in at
least one gold document, that callers can see their gold evidence, and that a refused
permission question's answer is invisible to the refused caller. Prints a summary and
exits non-zero when anything is wrong.

    python evalsets/acme/check.py
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
PUBLIC = "public"
TYPES = {"single_hop", "bridge", "comparison", "temporal", "permission", "unanswerable"}
EXPECTS = {"answer", "refuse"}
YES_NO = {"yes", "no"}
MAX_CORPUS_BYTES = 400_000
MAX_DOC_WORDS = 500


class Doc:
    def __init__(self, doc_id: str, text: str, acl: list[str], updated: str = "") -> None:
        self.doc_id = doc_id
        self.text = text
        self.acl = acl or [PUBLIC]
        self.updated = updated  # ISO date from front matter (wiki only)

    def visible_to(self, groups: list[str]) -> bool:
        return PUBLIC in self.acl or bool(set(self.acl) & set(groups))


def _front_matter(text: str) -> dict[str, Any]:
    """The tiny subset of YAML the wiki pages use: `key: value` and `key: [a, b]`."""
    if not text.startswith("---\n"):
        return {}
    end = text.find("\n---", 4)
    if end < 0:
        return {}
    meta: dict[str, Any] = {}
    for line in text[4:end].splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or ":" not in line:
            continue
        key, value = (part.strip() for part in line.split(":", 1))
        if value.startswith("[") and value.endswith("]"):
            meta[key] = [v.strip() for v in value[1:-1].split(",") if v.strip()]
        else:
            meta[key] = value.strip('"')
    return meta


def _load_json(path: Path, problems: list[str]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        problems.append(f"{path.relative_to(HERE)}: does not parse ({exc})")
        return None


def load_wiki(problems: list[str]) -> dict[str, Doc]:
    docs: dict[str, Doc] = {}
    root = CORPUS / "wiki"
    for path in sorted(root.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        meta = _front_matter(text)
        if not meta.get("title"):
            problems.append(f"wiki {path.relative_to(root)}: front matter without a title")
        acl = meta.get("acl") or []
        if isinstance(acl, str):
            problems.append(f"wiki {path.relative_to(root)}: acl must be a list")
            acl = [acl]
        doc_id = f"wiki:{path.relative_to(root).as_posix()}"
        docs[doc_id] = Doc(doc_id, text, acl, str(meta.get("updated", "")))
    return docs


def load_slack(problems: list[str]) -> dict[str, Doc]:
    root = CORPUS / "slack"
    channels = _load_json(root / "channels.json", problems) or []
    users = _load_json(root / "users.json", problems) or []
    user_ids = {u.get("id") for u in users}
    docs: dict[str, Doc] = {}
    for channel in channels:
        name = channel["name"]
        acl = list(channel.get("acl") or [])
        if channel.get("is_private") and not acl:
            problems.append(f"slack channel {name}: private without an acl")
        threads: dict[str, list[dict[str, Any]]] = {}
        for day in sorted((root / name).glob("*.json")):
            messages = _load_json(day, problems) or []
            for m in messages:
                if m.get("user") not in user_ids:
                    problems.append(f"slack {name}/{day.name}: unknown user {m.get('user')}")
                key = m.get("thread_ts") or m["ts"]
                threads.setdefault(key, []).append(m)
        for ts, messages in threads.items():
            if not any(m["ts"] == ts for m in messages):
                problems.append(f"slack {name}: replies to {ts} without a parent message")
            parent = next((m for m in messages if m["ts"] == ts), None)
            if parent and parent.get("reply_count", 0) != len(messages) - 1:
                problems.append(f"slack {name}/{ts}: reply_count does not match the replies")
            text = "\n".join(m["text"] for m in sorted(messages, key=lambda m: float(m["ts"])))
            doc_id = f"slack:{name}/{ts}"
            docs[doc_id] = Doc(doc_id, text, acl)
    return docs


def _ticket_text(fields: dict[str, Any]) -> str:
    parts = [fields.get("summary", ""), fields.get("description", "")]
    for key in ("status", "priority"):
        parts.append((fields.get(key) or {}).get("name", ""))
    for key in ("assignee", "reporter"):
        parts.append((fields.get(key) or {}).get("displayName", ""))
    parts += [c["name"] for c in fields.get("components", [])]
    parts += list(fields.get("labels", []))
    for c in (fields.get("comment") or {}).get("comments", []):
        parts += [c["author"]["displayName"], c["body"]]
    return "\n".join(p for p in parts if p)


def load_tickets(problems: list[str]) -> dict[str, Doc]:
    tickets = _load_json(CORPUS / "tickets" / "tickets.json", problems) or []
    docs: dict[str, Doc] = {}
    for t in tickets:
        key, fields = t.get("key"), t.get("fields")
        if not key or not isinstance(fields, dict):
            problems.append(f"tickets: entry without key/fields: {str(t)[:60]}")
            continue
        for required in ("summary", "description", "status", "created", "updated"):
            if required not in fields:
                problems.append(f"tickets:{key}: missing field {required}")
        doc_id = f"tickets:{key}"
        if doc_id in docs:
            problems.append(f"{doc_id}: duplicate key")
        docs[doc_id] = Doc(doc_id, _ticket_text(fields), [])
    return docs


def load_code() -> dict[str, Doc]:
    docs: dict[str, Doc] = {}
    for path in sorted((CORPUS / "code").glob("*/README.md")):
        doc_id = f"code:{path.parent.name}/README.md"
        docs[doc_id] = Doc(doc_id, path.read_text(encoding="utf-8"), [])
    return docs


def _contains(text: str, needle: str) -> bool:
    """Case-insensitive containment that respects word edges ("5 minutes" is not in
    "15 minutes"), so a stale value never passes for the current one."""
    needle = needle.strip()
    if not needle:
        return False
    start = r"(?<!\w)" if needle[0].isalnum() else ""
    end = r"(?!\w)" if needle[-1].isalnum() else ""
    return re.search(start + re.escape(needle) + end, text, re.IGNORECASE) is not None


def check_questions(
    docs: dict[str, Doc], users: dict[str, Any], problems: list[str], path: Path
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            problems.append(f"{path.name}:{n}: does not parse ({exc})")
    seen: set[str] = set()
    for r in rows:
        rid = r.get("id", "?")
        if rid in seen:
            problems.append(f"{rid}: duplicate id")
        seen.add(rid)
        for key in ("question", "answer", "answer_aliases", "type", "gold_docs", "as", "expect"):
            if key not in r:
                problems.append(f"{rid}: missing {key}")
        if r.get("type") not in TYPES:
            problems.append(f"{rid}: unknown type {r.get('type')}")
        if r.get("expect") not in EXPECTS:
            problems.append(f"{rid}: unknown expect {r.get('expect')}")
        caller = r.get("as") or {"user": "alice", "groups": ["eng"]}
        profile = users.get(caller.get("user", ""))
        if profile is None:
            problems.append(f"{rid}: caller {caller.get('user')} not in users.json")
        elif sorted(profile["groups"]) != sorted(caller.get("groups", [])):
            problems.append(f"{rid}: caller groups differ from users.json")
        groups = caller.get("groups", [])
        gold = r.get("gold_docs", [])
        if r.get("expect") == "refuse":
            if r.get("answer") or gold:
                problems.append(f"{rid}: refuse rows need answer '' and gold_docs []")
            continue
        if not gold:
            problems.append(f"{rid}: answer row without gold_docs")
        missing = [g for g in gold if g not in docs]
        for g in missing:
            problems.append(f"{rid}: gold doc {g} does not resolve")
        hidden = [g for g in gold if g in docs and not docs[g].visible_to(groups)]
        for g in hidden:
            problems.append(f"{rid}: gold doc {g} is not visible to {caller.get('user')}")
        answer = r.get("answer", "")
        if not answer:
            problems.append(f"{rid}: empty answer on an answer row")
        elif answer.casefold() not in YES_NO:
            needles = [answer, *r.get("answer_aliases", [])]
            texts = [docs[g].text for g in gold if g in docs]
            if not any(_contains(t, n) for t in texts for n in needles):
                problems.append(f"{rid}: answer {answer!r} not found in its gold docs")
        _check_stale(r, docs, problems)
    _check_refused_permission(rows, docs, problems)
    return rows


def _check_stale(r: dict[str, Any], docs: dict[str, Doc], problems: list[str]) -> None:
    """Temporal rows name the superseded versions: they must exist, be older than every
    gold document, and not contain the current answer (or the row tests nothing)."""
    rid, stale = r["id"], r.get("stale_docs", [])
    if r.get("type") == "temporal" and not stale:
        problems.append(f"{rid}: temporal row without stale_docs")
    needles = [r["answer"], *r.get("answer_aliases", [])]
    for s in stale:
        doc = docs.get(s)
        if doc is None:
            problems.append(f"{rid}: stale doc {s} does not resolve")
            continue
        if s in r.get("gold_docs", []):
            problems.append(f"{rid}: {s} is both gold and stale")
        if any(_contains(doc.text, n) for n in needles):
            problems.append(f"{rid}: stale doc {s} already contains the current answer")
        for g in r.get("gold_docs", []):
            if g in docs and not (doc.updated and doc.updated < docs[g].updated):
                problems.append(f"{rid}: stale doc {s} is not older than gold doc {g}")


def _check_refused_permission(
    rows: list[dict[str, Any]], docs: dict[str, Doc], problems: list[str]
) -> None:
    """A refused permission row must have an answered twin whose answer the refused
    caller cannot see anywhere (otherwise the refusal would be wrong)."""
    answered = {
        r["question"]: r for r in rows if r.get("type") == "permission" and r["expect"] == "answer"
    }
    for r in rows:
        if r.get("type") != "permission" or r.get("expect") != "refuse":
            continue
        twin = answered.get(r["question"])
        if twin is None:
            problems.append(f"{r['id']}: refused permission row without an answered twin")
            continue
        groups = r["as"]["groups"]
        needles = [twin["answer"], *twin.get("answer_aliases", [])]
        for doc in docs.values():
            if doc.visible_to(groups) and any(_contains(doc.text, n) for n in needles):
                problems.append(f"{r['id']}: answer leaks to the refused caller via {doc.doc_id}")


def main() -> int:
    problems: list[str] = []
    warnings: list[str] = []
    docs: dict[str, Doc] = {}
    per_source: Counter[str] = Counter()
    for loaded in (
        load_wiki(problems),
        load_slack(problems),
        load_tickets(problems),
        load_code(),
    ):
        for doc_id, doc in loaded.items():
            per_source[doc_id.split(":", 1)[0]] += 1
            words = len(re.findall(r"\S+", doc.text))
            if words > MAX_DOC_WORDS:
                warnings.append(f"{doc_id}: {words} words (> {MAX_DOC_WORDS})")
        docs.update(loaded)
    users_doc = _load_json(HERE / "users.json", problems) or {}
    users = users_doc.get("users", {})
    # Every question file of the set (questions.jsonl, questions_fresh.jsonl) is checked
    # against the same corpus; ids are unique across them.
    per_file = [
        check_questions(docs, users, problems, path)
        for path in sorted(HERE.glob("questions*.jsonl"))
    ]
    rows = [row for file_rows in per_file for row in file_rows]
    in_files = Counter(rid for file_rows in per_file for rid in {r.get("id") for r in file_rows})
    problems += [f"{rid}: id used in two question files" for rid, n in in_files.items() if n > 1]

    size = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    if size > MAX_CORPUS_BYTES:
        problems.append(f"corpus is {size} bytes (> {MAX_CORPUS_BYTES})")
    restricted = Counter(g for d in docs.values() for g in d.acl if g != PUBLIC)

    by_source = ", ".join(f"{s} {n}" for s, n in sorted(per_source.items()))
    print(f"documents: {len(docs)} ({by_source})")
    print(f"restricted documents by group: {dict(sorted(restricted.items()))}")
    print(f"corpus size: {size} bytes")
    types = Counter(r.get("type") for r in rows)
    print(f"questions: {len(rows)} ({', '.join(f'{t} {n}' for t, n in sorted(types.items()))})")
    expects = Counter(r.get("expect") for r in rows)
    print(f"expect: {dict(sorted(expects.items()))}")
    for w in warnings:
        print(f"warning: {w}")
    for p in problems:
        print(f"PROBLEM: {p}")
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
