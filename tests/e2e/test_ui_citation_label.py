"""The /ui page names where a cited passage sits in a paged or tabular file (the locator's
``label``, ``report.pdf p. 4``) in the sources list and above the passage; a citation
without one shows as before."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import ANA, Server, wait_for
from tests.e2e.test_ui import Browser, _open, browser  # noqa: F401 - the fixture

pytestmark = pytest.mark.e2e

_CITATIONS = [
    {
        "n": 1,
        "evidence_id": "docs:report.pdf#3",
        "doc_id": "docs:report.pdf",
        "title": "Quarterly report",
        "text": "Settlement latency fell after the cutover.",
        "locator": {
            "doc_id": "docs:report.pdf",
            "chunk_id": "docs:report.pdf#3",
            "heading_path": ["Results"],
            "page": 4,
            "label": "report.pdf p. 4",
        },
    },
    {
        "n": 2,
        "evidence_id": "docs:guide.md#0",
        "doc_id": "docs:guide.md",
        "title": "Guide",
        "text": "Steps.",
        "locator": {"doc_id": "docs:guide.md", "chunk_id": "docs:guide.md#0", "label": None},
    },
]


def test_ui_shows_the_page_of_a_cited_pdf(server: Server, browser: Browser) -> None:  # noqa: F811
    # The API's citations carry the label the page reads (None for a Markdown page).
    with server.client() as c:
        result = c.post(
            "/v1/answers", json={"question": "Who owns Fraud Gate?"}, headers=ANA
        ).json()
    assert result["citations"] and all("label" in x["locator"] for x in result["citations"])

    _open(browser, f"{server.base}/ui")
    browser.js(f"renderAnswer('Latency fell [1], says the guide [2].', {json.dumps(_CITATIONS)})")
    items = browser.js("[...document.querySelectorAll('#citations li')].map(li => li.textContent)")
    assert items == [
        "Quarterly report, report.pdf p. 4 docs:report.pdf#3",
        "Guide docs:guide.md#0",
    ]
    browser.js("document.querySelector('#answer a.cite').click(); true")
    wait_for(lambda: browser.js("document.getElementById('passage').hidden") is False)
    where = browser.js("document.getElementById('passage-where').textContent")
    assert where == "docs:report.pdf#3 · report.pdf p. 4 · Results"
    assert browser.js("window.__csp") == []
