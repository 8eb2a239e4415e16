// Waypoint trace viewer: plain JS, no dependencies. Retrieved text is data: it is only
// ever inserted with textContent, never as HTML.
"use strict";

const KEY = "waypoint.key";
const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    // Through the CSSOM: the page's CSP (style-src 'self') refuses style attributes.
    else if (k === "style") node.style.cssText = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function apiKey() { return sessionStorage.getItem(KEY) || ""; }

function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
}

async function api(path, options = {}) {
  const headers = { Authorization: `Bearer ${apiKey()}`, ...(options.headers || {}) };
  const response = await fetch(path, { ...options, headers });
  if (!response.ok) {
    let message = `${response.status}`;
    try { message = (await response.json()).error.message; } catch (_) { /* not JSON */ }
    throw new Error(message);
  }
  return response;
}

// ---------------------------------------------------------------- runs list
async function loadRuns() {
  if (!apiKey()) { $("runs").replaceChildren(el("li", {}, "Enter an API key first.")); return; }
  try {
    const runs = (await (await api("/v1/runs")).json()).items;
    $("runs").replaceChildren(...runs.map((r) => el("li", {
      "data-run": r.run_id,
      onclick: () => { location.hash = `run=${r.run_id}`; },
    }, el("div", {}, r.question), el("div", { class: "status" },
      `${r.kind} · ${r.status} · ${new Date(r.created_at).toLocaleString()}`))));
    if (!runs.length) $("runs").replaceChildren(el("li", {}, "No runs yet."));
    markActive();
  } catch (err) { showError(`Could not list runs: ${err.message}`); }
}

function markActive() {
  const current = currentRunId();
  for (const li of $("runs").children) li.classList.toggle("active", li.dataset.run === current);
}

function currentRunId() {
  const m = location.hash.match(/run=([\w-]+)/);
  return m ? m[1] : null;
}

// ------------------------------------------------------------------ one run
async function loadRun(runId) {
  showError("");
  try {
    const trace = await (await api(`/v1/runs/${encodeURIComponent(runId)}/trace`)).json();
    renderRun(trace);
    markActive();
  } catch (err) { showError(`Could not load run ${runId}: ${err.message}`); }
}

function renderRun(trace) {
  $("run").hidden = false;
  $("run-question").textContent = trace.run.question;
  const result = trace.result;
  $("run-meta").textContent = `${trace.run.run_id} · ${trace.run.status}` + (result
    ? ` · ${result.rounds} round(s), ${result.tool_calls} tool call(s)` +
      (result.bound_hit ? ` · bound hit: ${result.bound_hit}` : "") : "");
  renderAnswer(result ? result.answer : "(no result yet)", result ? result.citations : []);
  $("warnings").replaceChildren(...(result ? result.warnings : []).map((w) => el("li", {}, w)));
  renderTimeline(trace.nodes);
  renderRounds(trace.rounds);
  $("events").textContent = trace.events.map((e) => JSON.stringify(e)).join("\n");
}

function renderAnswer(text, citations) {
  const byN = new Map(citations.map((c) => [c.n, c]));
  const answer = $("answer");
  answer.replaceChildren();
  for (const part of text.split(/(\[\d+\])/)) {
    const m = part.match(/^\[(\d+)\]$/);
    const c = m && byN.get(Number(m[1]));
    if (c) {
      answer.append(el("a", { class: "cite", href: "#", "data-n": c.n, title: c.title,
                              onclick: (ev) => { ev.preventDefault(); showPassage(c); } },
                       `[${c.n}]`));
    } else {
      answer.append(document.createTextNode(part));
    }
  }
  $("citations").replaceChildren(...citations.map((c) => el("li", { value: c.n },
    el("a", { class: "cite", href: "#", "data-n": c.n,
              onclick: (ev) => { ev.preventDefault(); showPassage(c); } }, c.title || c.doc_id),
    // where in a paged or tabular file: "report.pdf p. 4", "deck.pptx slide 3"
    ...(c.locator && c.locator.label ? [el("span", { class: "locator" }, `, ${c.locator.label}`)] : []),
    el("span", { class: "muted" }, ` ${c.evidence_id}`))));
  $("passage").hidden = true;
}

function showPassage(c) {
  $("passage-title").textContent = `[${c.n}] ${c.title}`;
  const loc = c.locator || {};
  const where = [loc.chunk_id || c.evidence_id];
  if (loc.label) where.push(loc.label);
  if (loc.heading_path && loc.heading_path.length) where.push(loc.heading_path.join(" › "));
  if (loc.char_start != null) where.push(`chars ${loc.char_start}–${loc.char_end}`);
  $("passage-where").textContent = where.join(" · ");
  $("passage-text").textContent = c.text;
  $("passage").hidden = false;
  $("passage").scrollIntoView({ block: "nearest" });
}

function renderTimeline(nodes) {
  const total = nodes.reduce((s, n) => s + (n.duration_ms || 0), 0) || 1;
  $("timeline").replaceChildren(...nodes.map((n) => el("div", { class: "span" },
    el("span", {}, `r${n.round} ${n.node}`),
    el("div", { class: "bar", style: `width:${Math.max(0.5, 100 * (n.duration_ms || 0) / total)}%` }),
    el("span", { class: "muted" }, `${(n.duration_ms || 0).toFixed(1)} ms`))));
}

function table(headers, rows) {
  return el("table", {}, el("tr", {}, ...headers.map((h) => el("th", {}, h))),
    ...rows.map((r) => el("tr", {}, ...r.map((c) => el("td", {}, c == null ? "" : c)))));
}

function renderRounds(rounds) {
  $("rounds").replaceChildren(...rounds.map((r) => {
    const box = el("div", { class: "round" }, el("h4", {}, `Round ${r.round}`));
    for (const p of r.plan) {
      box.append(el("div", {}, el("strong", {}, "Plan: "),
        (p.calls || []).map((c) => `${c.tool}(${JSON.stringify(c.args)})` +
          (c.reason ? ` — ${c.reason}` : "")).join("; ") || "(nothing new)"));
    }
    for (const t of r.tool_results) {
      const detail = t.detail || {};
      box.append(el("div", {}, el("strong", {}, `${t.tool}`), ` “${t.query || ""}” `,
        t.ok ? `${(t.results || []).length} result(s), ${t.duration_ms} ms`
             : el("span", { class: "left" }, `failed: ${t.error}`)));
      if (detail.rewritten_query && detail.rewritten_query !== detail.original_query) {
        box.append(el("div", { class: "muted" }, `rewritten: ${detail.rewritten_query}`));
      }
      for (const [leg, items] of Object.entries(detail.legs || {})) {
        box.append(el("div", { class: "muted" }, `${leg} leg`),
          table(["#", "id", "title", "score"], items.map((i) => [i.rank, i.id, i.title,
            Number(i.score).toFixed(4)])));
      }
      if (detail.fused) {
        box.append(el("div", { class: "muted" }, "fused (RRF)"),
          table(["#", "id", "score"], detail.fused.map((i) => [i.rank, i.id,
            Number(i.score).toFixed(5)])));
      }
      if (detail.reranked) {
        box.append(el("div", { class: "muted" }, "reranked"),
          table(["#", "id", "score"], detail.reranked.map((i) => [i.rank, i.id,
            Number(i.score).toFixed(4)])));
      }
      if (!detail.legs && t.results) {
        box.append(table(["id", "title", "score"], t.results.map((i) => [i.id, i.title,
          Number(i.score).toFixed(4)])));
      }
    }
    for (const e of r.evidence) {
      if (e.entered) {
        box.append(el("div", { class: "entered" }, `pool +${e.entered.length}: ` +
          e.entered.map((i) => i.title || i.id).join(", ") + ` (pool ${e.pool_size})`));
      }
      if (e.entered_top || e.left_top) {
        box.append(el("div", {}, "top after rerank: ",
          el("span", { class: "entered" }, `entered ${JSON.stringify(e.entered_top || [])} `),
          el("span", { class: "left" }, `left ${JSON.stringify(e.left_top || [])}`)));
      }
    }
    for (const v of r.verdicts) {
      box.append(el("div", { class: "verdict" }, `Verdict: ${v.decision}`,
        el("span", { class: "muted" }, ` — ${v.reason || ""}` +
          (v.missing && v.missing.length ? ` (missing: ${v.missing.join(", ")})` : "") +
          (v.bound_hit ? ` [bound: ${v.bound_hit}]` : ""))));
    }
    return box;
  }));
}

// ------------------------------------------------------------ streaming ask
function* parseSSE(buffer) {
  // Yields [event, rest]: complete events parsed from the front of the buffer.
  let idx;
  while ((idx = buffer.search(/\r?\n\r?\n/)) !== -1) {
    const block = buffer.slice(0, idx);
    buffer = buffer.slice(idx).replace(/^\r?\n\r?\n/, "");
    const ev = { event: "message", data: "", id: null };
    for (const line of block.split(/\r?\n/)) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const name = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (name === "data") ev.data += (ev.data ? "\n" : "") + value;
      else if (name === "event") ev.event = value;
      else if (name === "id") ev.id = value;
    }
    yield [ev, buffer];
  }
  yield [null, buffer];
}

async function ask(question) {
  showError("");
  $("ask").disabled = true;
  $("ask-status").textContent = "thinking…";
  $("run").hidden = false;
  $("run-question").textContent = question;
  $("run-meta").textContent = "";
  $("answer").textContent = "";
  $("citations").replaceChildren();
  $("warnings").replaceChildren();
  $("passage").hidden = true;
  let runId = null;
  try {
    const response = await api("/v1/answers", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ question }),
    });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (const [ev, rest] of parseSSE(buffer)) {
        buffer = rest;
        if (!ev) break;
        const data = ev.data ? JSON.parse(ev.data) : {};
        if (ev.event === "metadata") {
          runId = data.run_id;
          $("run-meta").textContent = runId;
        } else if (ev.event === "token") {
          $("answer").append(document.createTextNode((data.data || {}).text || ""));
        } else if (ev.event === "round") {
          $("ask-status").textContent = `round ${data.round}: ${(data.data || {}).decision}`;
        } else if (ev.event === "done") {
          renderAnswer(data.answer, data.citations);
          $("warnings").replaceChildren(...data.warnings.map((w) => el("li", {}, w)));
        } else if (ev.event === "error") {
          showError(`Run failed: ${data.message}`);
        }
      }
    }
    $("ask-status").textContent = "done";
    if (runId) {
      history.replaceState(null, "", `#run=${runId}`);
      await loadRuns();
      await loadRun(runId);
    }
  } catch (err) {
    showError(err.message);
    $("ask-status").textContent = "";
  } finally {
    $("ask").disabled = false;
  }
}

// --------------------------------------------------------------------- wire
function onKeyChanged() {
  $("key-status").textContent = apiKey() ? "key set for this tab" : "no key";
  loadRuns();
  const runId = currentRunId();
  if (runId && apiKey()) loadRun(runId);
}

$("key-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const key = $("key-input").value.trim();
  if (key) sessionStorage.setItem(KEY, key);
  $("key-input").value = "";
  onKeyChanged();
});
$("key-clear").addEventListener("click", () => { sessionStorage.removeItem(KEY); onKeyChanged(); });
$("runs-refresh").addEventListener("click", loadRuns);
$("ask-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const q = $("question").value.trim();
  if (q) ask(q);
});
window.addEventListener("hashchange", () => { const id = currentRunId(); if (id) loadRun(id); });
onKeyChanged();
