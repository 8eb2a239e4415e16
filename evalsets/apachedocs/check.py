"""Validate ``questions.jsonl`` (and, when the corpus is built, its gold pages).

Checks (:mod:`evalsets.doc_corpus`): every row has the acme fields; ids are unique;
refused rows have no answer and no gold pages; answerable rows name gold pages; with the
corpus built, every gold id is a document the files connector produces and the answer (or
an alias) appears literally, case-insensitive, on word edges, in at least one gold page
(yes/no answers exempt).

Usage: ``.venv/bin/python evalsets/apachedocs/check.py`` (exits non-zero on problems).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evalsets.doc_corpus import check_main  # noqa: E402

QUESTIONS = Path(__file__).resolve().parent / "questions.jsonl"

if __name__ == "__main__":
    sys.exit(check_main(QUESTIONS, "apachedocs"))
