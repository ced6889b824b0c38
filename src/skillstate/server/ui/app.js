// The skillstate dashboard: reads /cost, /cost/requests and /state from the gateway that
// serves it and draws them, every 5 seconds. Vanilla JS, no build step, no other host.
// Everything shown is set as text (textContent, attributes): a session id or a model name
// that looks like markup stays text.
"use strict";

const REFRESH_MS = 5000;
const LATEST = 20;
const SVG_NS = "http://www.w3.org/2000/svg";
const MINUS = "\u2212";

let openSession = null; // the session whose detail is shown, or null

// --- building nodes ---------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  setAttributes(node, attrs);
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

function svgEl(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttributes(node, attrs);
  node.append(...children);
  return node;
}

function setAttributes(node, attrs) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value !== null && value !== undefined) node.setAttribute(name, String(value));
  }
}

const $ = (id) => document.getElementById(id);

// --- formatting -------------------------------------------------------------------------

function count(n) {
  return n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US");
}

function share(fraction) {
  return fraction === null || fraction === undefined ? "—" : `${(fraction * 100).toFixed(1)} %`;
}

function dollars(value) {
  const size = Math.abs(value);
  return "$" + (size >= 1 ? size.toFixed(2) : size.toFixed(4));
}

// A recorded or estimated cost: a number, or "unpriced" (never $0) when a price is missing.
function money(value) {
  if (value === null || value === undefined) return el("span", { class: "unpriced" }, "unpriced");
  return el("span", { class: "money" }, (value < 0 ? MINUS : "") + dollars(value));
}

// What a pass-through would have cost less what was recorded: a saving, or a loss (minus).
function saved(value) {
  if (value === null || value === undefined) {
    return el("span", { class: "unpriced", title: "needs a price for every request" }, "—");
  }
  if (value > 0) return el("span", { class: "saving" }, dollars(value) + " saved");
  if (value < 0) return el("span", { class: "loss" }, MINUS + dollars(value) + " lost");
  return el("span", { class: "money" }, dollars(0));
}

function utc(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  return new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 19);
}

function hourLabel(iso) {
  return iso.slice(11, 16);
}

// --- reading the gateway ----------------------------------------------------------------

class Missing extends Error {}

async function getJson(path) {
  const reply = await fetch(path, { headers: { accept: "application/json" }, cache: "no-store" });
  const body = await reply.json().catch(() => null);
  if (reply.status === 404) throw new Missing(path);
  if (!reply.ok) {
    const message = body && body.error ? body.error.message : reply.statusText;
    throw new Error(`${path}: ${reply.status} ${message}`);
  }
  return body;
}

// /state answers 503 on a gateway without a state engine: no sessions to list then.
async function stateList() {
  try {
    return (await getJson("/state")).sessions;
  } catch (error) {
    if (String(error.message).includes(" 503 ")) return [];
    throw error;
  }
}

// --- totals -----------------------------------------------------------------------------

function figure(dl, field, name, value, hint) {
  dl.append(el("dt", {}, name), el("dd", { "data-field": field, title: hint }, value));
}

function drawTotals(cost) {
  const t = cost.totals;
  $("label").textContent = cost.label;
  $("span").textContent = cost.since ? `${cost.since} to ${cost.until}` : "";
  const measured = $("measured");
  measured.replaceChildren();
  figure(measured, "cost_usd", "Recorded cost", money(t.cost_usd), "the sum of each row's cost");
  if (t.unpriced_requests > 0) {
    const note = `${count(t.unpriced_requests)} without a price: their cost is unknown, not $0`;
    figure(measured, "unpriced_requests", "Unpriced requests", el("strong", { class: "unpriced" }, note));
  }
  figure(measured, "requests", "Upstream requests", count(t.requests));
  figure(measured, "client_requests", "Client requests", count(t.client_requests));
  figure(measured, "failed_requests", "Failed", count(t.failed_requests), "status 400 or more");
  figure(measured, "input_tokens", "Input tokens", count(t.input_tokens));
  figure(measured, "cached_input_tokens", "Cached input tokens", count(t.cached_input_tokens));
  figure(measured, "cache_hit_share", "Cache-hit share", share(t.cache_hit_share));
  figure(measured, "cache_write_tokens", "Cache-write tokens", count(t.cache_write_tokens));
  figure(measured, "output_tokens", "Output tokens", count(t.output_tokens));
  figure(measured, "reasoning_tokens", "Reasoning tokens", count(t.reasoning_tokens));
  const overhead = t.overhead_ms_mean === null ? "—" : `${t.overhead_ms_mean.toFixed(2)} ms`;
  figure(measured, "overhead_ms_mean", "Gateway overhead (mean)", overhead);

  $("estimate-note").textContent = cost.estimate;
  const estimated = $("estimated");
  estimated.replaceChildren();
  figure(estimated, "passthrough_cost_usd", "Pass-through cost", money(t.passthrough_cost_usd));
  figure(estimated, "saved_usd", "Saved", saved(t.saved_usd), "pass-through less recorded");
  figure(estimated, "passthrough_input_tokens", "Input tokens", count(t.passthrough_input_tokens));
  const ptCached = count(t.passthrough_cached_input_tokens);
  figure(estimated, "passthrough_cached_input_tokens", "Cached input tokens", ptCached);
}

// --- charts -----------------------------------------------------------------------------

// Cost when every row is priced, else tokens (input + output): never a $0 bar for "unknown".
function measure(rows) {
  const priced = rows.length > 0 && rows.every((row) => row.cost_usd !== null);
  if (priced) return { name: "recorded cost", of: (row) => row.cost_usd, show: dollars };
  return {
    name: "tokens (input + output; costs unpriced)",
    of: (row) => row.input_tokens + row.output_tokens,
    show: (n) => `${count(n)} tokens`,
  };
}

function summary(items, show) {
  const shown = items.slice(0, 6).map((item) => `${item.label} ${show(item.value)}`);
  const more = items.length > 6 ? `, and ${items.length - 6} more` : "";
  return shown.join(", ") + more;
}

function drawModels(rows) {
  const chart = $("chart-models");
  const m = measure(rows);
  const items = rows.map((row) => ({ label: row.model || "(none)", value: m.of(row) }));
  const top = Math.max(...items.map((item) => item.value), 0) || 1;
  const rowHeight = 28;
  const height = Math.max(items.length, 1) * rowHeight + 8;
  chart.replaceChildren();
  setAttributes(chart, { viewBox: `0 0 640 ${height}`, "data-points": items.length });
  items.forEach((item, i) => {
    const y = 4 + i * rowHeight;
    const width = Math.max(1, (item.value / top) * 360);
    chart.append(
      svgEl("text", { x: 170, y: y + 17, class: "axis", "text-anchor": "end" }, item.label),
      svgEl(
        "rect",
        { x: 180, y: y + 3, width, height: rowHeight - 8, class: "bar" },
        svgEl("title", {}, `${item.label}: ${m.show(item.value)}`),
      ),
      svgEl("text", { x: 186 + width, y: y + 17, class: "value" }, m.show(item.value)),
    );
  });
  $("chart-models-text").textContent = items.length
    ? `By model, ${m.name}: ${summary(items, m.show)}.`
    : "No requests yet.";
}

function drawHourly(rows) {
  const chart = $("chart-hourly");
  const m = measure(rows);
  const items = rows.map((row) => ({ label: hourLabel(row.hour), hour: row.hour, value: m.of(row) }));
  const top = Math.max(...items.map((item) => item.value), 0) || 1;
  const [width, height, left, bottom, plot] = [640, 200, 50, 24, 160];
  const step = (width - left - 10) / Math.max(items.length, 1);
  const bar = Math.min(40, step * 0.8);
  chart.replaceChildren();
  setAttributes(chart, { viewBox: `0 0 ${width} ${height}`, "data-points": items.length });
  const base = height - bottom;
  chart.append(
    svgEl("line", { x1: left, y1: base, x2: width - 10, y2: base, class: "baseline" }),
    svgEl("text", { x: left - 6, y: base - plot + 4, class: "axis", "text-anchor": "end" },
      m.show(top).replace(" tokens", "")),
    svgEl("text", { x: left - 6, y: base + 4, class: "axis", "text-anchor": "end" }, "0"),
  );
  const labelEvery = Math.ceil(items.length / 12);
  items.forEach((item, i) => {
    const x = left + i * step + (step - bar) / 2;
    const h = Math.max(1, (item.value / top) * plot);
    chart.append(
      svgEl(
        "rect",
        { x, y: base - h, width: bar, height: h, class: "bar" },
        svgEl("title", {}, `${item.hour}: ${m.show(item.value)}`),
      ),
    );
    if (i % labelEvery === 0) {
      const at = { x: x + bar / 2, y: base + 16, class: "axis", "text-anchor": "middle" };
      chart.append(svgEl("text", at, item.label));
    }
  });
  $("chart-hourly-text").textContent = items.length
    ? `By hour (UTC), ${m.name}: ${summary(items, m.show)}.`
    : "No requests yet.";
}

// --- tables -----------------------------------------------------------------------------

function cell(content, numeric = false) {
  return el("td", numeric ? { class: "num" } : {}, content);
}

function timeCell(seconds) {
  return el("td", { class: "time" }, utc(seconds));
}

function drawSessions(bySession, listed) {
  const costs = new Map(bySession.map((row) => [row.session, row]));
  const states = new Map(listed.map((line) => [line.session, line]));
  const order = [...states.keys(), ...[...costs.keys()].filter((id) => !states.has(id))];
  const body = $("sessions").tBodies[0];
  body.replaceChildren();
  if (!order.length) body.append(el("tr", {}, el("td", { colspan: 10 }, "No sessions yet.")));
  for (const id of order) {
    const c = costs.get(id);
    const s = states.get(id);
    const row = el("tr", { "data-session": id });
    const name = id
      ? el("button", { type: "button", class: "open", "aria-controls": "detail" }, id)
      : el("span", { class: "unpriced" }, "(no session)");
    row.append(
      el("th", { scope: "row" }, name),
      cell(c ? count(c.requests) : "—", true),
      cell(c ? count(c.input_tokens) : "—", true),
      cell(c ? count(c.output_tokens) : "—", true),
      cell(c ? share(c.cache_hit_share) : "—", true),
      cell(c ? money(c.cost_usd) : "—", true),
      cell(c ? saved(c.saved_usd) : "—", true),
      cell(s ? count(s.step) : "—", true),
      cell(s ? count(s.state_bytes) : "—", true),
      s ? timeCell(s.last_seen) : cell("—"),
    );
    if (id) {
      row.classList.add("clickable");
      if (id === openSession) row.classList.add("open-row");
      row.addEventListener("click", () => showSession(id).catch(failed));
    }
    body.append(row);
  }
}

function drawRequests(rows) {
  const body = $("requests").tBodies[0];
  body.replaceChildren();
  if (!rows.length) body.append(el("tr", {}, el("td", { colspan: 12 }, "No requests yet.")));
  for (const r of rows) {
    const status = el("span", { class: r.status >= 400 ? "loss" : "" }, String(r.status));
    body.append(
      el(
        "tr",
        {},
        timeCell(r.ts),
        cell(r.session || "—"),
        cell(r.model),
        cell(`${r.client_wire} → ${r.upstream}`),
        cell(String(r.round), true),
        cell(status, true),
        cell(count(r.input), true),
        cell(count(r.cached_input), true),
        cell(count(r.output), true),
        cell(money(r.cost_usd), true),
        cell(r.overhead_ms === null ? "—" : r.overhead_ms.toFixed(2), true),
        cell(el("code", {}, r.lanes || "—")),
      ),
    );
  }
}

// --- one session ------------------------------------------------------------------------

async function showSession(id) {
  openSession = id;
  for (const row of $("sessions").tBodies[0].rows) {
    row.classList.toggle("open-row", row.dataset.session === id);
  }
  $("detail").hidden = false;
  $("detail-name").textContent = id;
  await drawDetail(id);
  $("detail").scrollIntoView({ block: "nearest" });
}

async function drawDetail(id) {
  const query = "?session=" + encodeURIComponent(id);
  const [cost, state] = await Promise.all([
    getJson("/cost" + query),
    getJson("/state" + query).catch((error) => {
      if (error instanceof Missing) return null;
      throw error;
    }),
  ]);
  if (id !== openSession) return; // another session was opened meanwhile
  drawCostLine(cost.totals);
  $("detail-missing").hidden = state !== null;
  $("detail-state").hidden = state === null;
  if (state === null) return;
  $("detail-step").textContent =
    `step ${state.step}, version ${state.version}, ${count(state.state_bytes)} bytes`;
  $("detail-sigma").textContent = JSON.stringify(state.state, null, 2);
  const tokens = state.context && state.context.tokens;
  $("detail-tokens").textContent = tokens
    ? `Tokens by where they went: head ${count(tokens.head)}, collapsed ${count(tokens.collapsed)}, ` +
      `verbatim ${count(tokens.verbatim)} (of ${count(tokens.total)}).`
    : "No per-turn index: the last request was not in hybrid mode.";
  const turns = $("detail-turns").tBodies[0];
  turns.replaceChildren(
    ...state.turns.map((turn) =>
      el(
        "tr",
        {},
        cell(String(turn.index), true),
        cell(turn.kind),
        cell(count(turn.tokens), true),
        cell(el("span", { class: `where where-${turn.where}` }, turn.where)),
      ),
    ),
  );
  $("detail-epoch").textContent = epochText(state.epoch);
  const archive = $("detail-archive").tBodies[0];
  archive.replaceChildren(
    ...state.archive.map((entry) =>
      el(
        "tr",
        {},
        cell(el("code", {}, entry.ref)),
        cell(`${entry.first_turn}–${entry.last_turn}`, true),
        cell(count(entry.size), true),
        cell(entry.summary || "—"),
      ),
    ),
  );
  if (!state.archive.length) archive.append(el("tr", {}, el("td", { colspan: 4 }, "None yet.")));
}

function drawCostLine(t) {
  const line = $("detail-cost");
  line.replaceChildren(
    `${count(t.requests)} upstream requests, ${count(t.input_tokens)} input tokens ` +
      `(${share(t.cache_hit_share)} cached), ${count(t.output_tokens)} output tokens; ` +
      "recorded cost ",
    money(t.cost_usd),
    "; pass-through ",
    money(t.passthrough_cost_usd),
    ", ",
    saved(t.saved_usd),
    " ",
    el("span", { class: "badge" }, "estimate"),
  );
}

function epochText(epoch) {
  if (!epoch) return "No boundary yet: the whole history is sent verbatim.";
  const spans = epoch.spans.map((span) => span.ref).join(", ");
  return (
    `Epoch ${epoch.number}: the head ends at message ${epoch.head}, the verbatim window ` +
    `starts at message ${epoch.cut}` + (spans ? `; archived spans ${spans}.` : ".")
  );
}

// --- the loop ---------------------------------------------------------------------------

function failed(error) {
  $("status").textContent = `could not refresh: ${error.message}`;
  $("status").classList.add("failed");
}

async function refresh() {
  const status = $("status");
  try {
    const [cost, listed, latest] = await Promise.all([
      getJson("/cost"),
      stateList(),
      getJson(`/cost/requests?limit=${LATEST}`),
    ]);
    drawTotals(cost);
    drawModels(cost.by_model);
    drawHourly(cost.hourly);
    drawSessions(cost.by_session, listed);
    drawRequests(latest.requests);
    if (openSession !== null) await drawDetail(openSession);
    status.textContent = `updated ${utc(Date.now() / 1000)} UTC`;
    status.classList.remove("failed");
  } catch (error) {
    failed(error);
  } finally {
    setTimeout(refresh, REFRESH_MS);
  }
}

document.addEventListener("DOMContentLoaded", refresh);
