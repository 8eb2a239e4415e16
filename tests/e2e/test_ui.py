"""The /ui page in headless Chromium, driven over the DevTools protocol (websockets)."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from tests.e2e.conftest import ANA, Server, wait_for

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """A minimal CDP client: enough to navigate, evaluate JS and read the DOM."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self._ids = itertools.count(1)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        msg_id = next(self._ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def js(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"JS error: {result['exceptionDetails']}")
        return result["result"].get("value")


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    if CHROMIUM is None:
        pytest.fail("chromium is not installed (apt-get install -y chromium)")
    profile = tmp_path / "profile"
    proc = subprocess.Popen(
        [
            CHROMIUM,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        wait_for(port_file.exists, timeout=60)
        port = int(wait_for(lambda: port_file.read_text().split("\n")[0], timeout=10))
        pages = wait_for(
            lambda: [
                t
                for t in httpx.get(f"http://127.0.0.1:{port}/json/list").json()
                if t["type"] == "page"
            ],
            timeout=30,
        )
        with connect(pages[0]["webSocketDebuggerUrl"], max_size=None) as ws:
            b = Browser(ws)
            b.call("Page.enable")
            b.call("Runtime.enable")
            # Every Content-Security-Policy refusal on the page, for the tests to check:
            # the page must work under its own policy.
            b.call(
                "Page.addScriptToEvaluateOnNewDocument",
                source="window.__csp = []; document.addEventListener("
                "'securitypolicyviolation', (e) => window.__csp.push("
                "`${e.violatedDirective} ${e.blockedURI}`));",
            )
            yield b
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _open(browser: Browser, url: str) -> None:
    """Navigate and wait until the page has rendered its key form."""
    browser.call("Page.navigate", url=url)
    wait_for(
        lambda: (
            browser.js("document.readyState") == "complete"
            and browser.js("!!document.getElementById('key-input')")
        )
    )


def test_ui_shows_a_finished_run_and_a_cited_passage(server: Server, browser: Browser) -> None:
    with server.client() as c:
        result = c.post(
            "/v1/answers",
            json={"question": "Who leads the team that owns the Payments Service?"},
            headers=ANA,
        ).json()
    assert result["citations"], "the run needs a citation for this test to mean anything"
    run_id = result["run_id"]
    _open(browser, f"{server.base}/ui#run={run_id}")
    browser.js(
        "document.getElementById('key-input').value = 'key-ana';"
        "document.getElementById('key-save').click(); true"
    )
    # the runs list is the caller's, and the run loads with its answer, timeline and rounds
    wait_for(
        lambda: (
            run_id
            in (
                browser.js("[...document.querySelectorAll('#runs li')].map(li => li.dataset.run)")
                or []
            )
        )
    )
    wait_for(lambda: browser.js("document.querySelectorAll('#answer a.cite').length") > 0)
    assert browser.js("document.getElementById('run-question').textContent") == result["question"]
    assert browser.js("document.querySelectorAll('#timeline .span').length") > 0
    assert browser.js("document.querySelectorAll('#rounds .round').length") == result["rounds"]
    assert browser.js("document.getElementById('passage').hidden") is True
    # a click on a citation shows its passage
    n = browser.js("document.querySelector('#answer a.cite').dataset.n")
    browser.js("document.querySelector('#answer a.cite').click(); true")
    wait_for(lambda: browser.js("document.getElementById('passage').hidden") is False)
    cited = next(c for c in result["citations"] if str(c["n"]) == n)
    assert browser.js("document.getElementById('passage-text').textContent") == cited["text"]
    assert cited["evidence_id"] in browser.js(
        "document.getElementById('passage-where').textContent"
    )
    # under the page's CSP: the timeline's bars are sized, and nothing was refused
    assert browser.js("document.querySelector('#timeline .bar').style.width").endswith("%")
    assert browser.js("window.__csp") == []


def test_ui_question_box_streams_a_new_answer(server: Server, browser: Browser) -> None:
    _open(browser, f"{server.base}/ui")
    browser.js(
        "document.getElementById('key-input').value = 'key-ana';"
        "document.getElementById('key-save').click();"
        "document.getElementById('question').value = 'Who owns Fraud Gate?';"
        "document.getElementById('ask').click(); true"
    )
    wait_for(lambda: browser.js("document.getElementById('ask-status').textContent") == "done")
    assert browser.js("document.getElementById('error').hidden") is True
    run_id = browser.js("location.hash").removeprefix("#run=")
    with server.client() as c:
        run = c.get(f"/v1/runs/{run_id}/trace", headers=ANA).json()
    wait_for(
        lambda: browser.js("document.getElementById('run-meta').textContent").startswith(run_id)
    )
    assert (
        browser.js("document.getElementById('answer').textContent").strip()
        == run["result"]["answer"].strip()
    )
    assert browser.js("window.__csp") == []
