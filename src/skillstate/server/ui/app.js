// The skillstate dashboard: reads /cost, /cost/requests and /state from the gateway that
// serves it and draws them, every 5 seconds, under the filters chosen at the top (a time
// range, a model, a session), which the page's address keeps: a reload shows the same.
// Vanilla JS, no build step, no other host (format.js and charts.js are loaded first).
// Everything shown is set as text (textContent, attributes): a session id or a model name
// that looks like markup stays text.
"use strict";

const REFRESH_MS = 5000;
const LATEST = 20;

//: The time ranges offered, in seconds back from now (null: all the ledger keeps).
const RANGES = {
  all: { name: "All", seconds: null },
  "1h": { name: "Last hour", seconds: 3600 },
  "24h": { name: "Last 24 hours", seconds: 86400 },
  "7d": { name: "Last 7 days", seconds: 7 * 86400 },
  "30d": { name: "Last 30 days", seconds: 30 * 86400 },
};

let openSession = null; // the session whose detail is shown, or null
let generation = 0; // each refresh's number: an older one that ends late draws nothing
let timer = null;

// --- the filters, kept in the page's address ------------------------------------------

function readFilters() {
  const query = new URLSearchParams(window.location.search);
  const range = query.get("range");
  return {
    range: Object.hasOwn(RANGES, range) ? range : "all",
    model: query.get("model") || "",
    session: query.get("session") || "",
  };
}

function writeFilters(filters) {
  const query = new URLSearchParams();
  if (filters.range !== "all") query.set("range", filters.range);
  if (filters.model) query.set("model", filters.model);
  if (filters.session) query.set("session", filters.session);
  const text = query.toString();
  window.history.replaceState(null, "", window.location.pathname + (text ? "?" + text : ""));
}

// The query of /cost for the filters (``parts`` picks which apply), at ``now``.
function costQuery(filters, now, parts = ["range", "model", "session"]) {
  const query = new URLSearchParams();
  const span = RANGES[filters.range].seconds;
  if (parts.includes("range") && span !== null) {
    query.set("since", isoUtc(now - span));
    query.set("until", isoUtc(now + 1)); // until is exclusive: this second's rows count
  }
  if (parts.includes("model") && filters.model) query.set("model", filters.model);
  if (parts.includes("session") && filters.session) query.set("session", filters.session);
  return query;
}

// The options of ``select``: "all" (``none``), then ``values``; the chosen one stays listed
// even with no rows. Left as they are when unchanged, so that a list a user has open is not
// redrawn under them by the periodic refresh.
function setChoices(select, values, chosen, none) {
  const listed = values.filter((value) => value !== "");
  if (chosen && !listed.includes(chosen)) listed.unshift(chosen);
  const key = JSON.stringify([none, ...listed]);
  if (select.dataset.choices === key) {
    if (select.value !== chosen) select.value = chosen;
    return;
  }
  select.dataset.choices = key;
  const options = [el("option", { value: "" }, none)];
  for (const value of listed) options.push(el("option", { value }, value));
  select.replaceChildren(...options);
  select.value = chosen;
}

function setupFilters() {
  const filters = readFilters();
  const range = $("filter-range");
  range.replaceChildren(
    ...Object.entries(RANGES).map(([key, r]) => el("option", { value: key }, r.name)),
  );
  range.value = filters.range;
  setChoices($("filter-model"), [], filters.model, "All models");
  setChoices($("filter-session"), [], filters.session, "All sessions");
  for (const id of ["filter-range", "filter-model", "filter-session"]) {
    $(id).addEventListener("change", () => {
      writeFilters({
        range: $("filter-range").value,
        model: $("filter-model").value,
        session: $("filter-session").value,
      });
      refresh();
    });
  }
  $("filter-reset").addEventListener("click", () => {
    writeFilters({ range: "all", model: "", session: "" });
    $("filter-range").value = "all";
    setChoices($("filter-model"), [], "", "All models");
    setChoices($("filter-session"), [], "", "All sessions");
    refresh();
  });
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

function withQuery(path, query) {
  const text = query.toString();
  return text ? `${path}?${text}` : path;
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

// --- the headline and the totals --------------------------------------------------------

function figure(dl, field, name, value, hint) {
  dl.append(el("dt", {}, name), el("dd", { "data-field": field, title: hint }, value));
}

function drawHeadline(t) {
  $("cost-figure").replaceChildren(priced(t.cost_usd, t.unpriced_requests));
  const sub = [];
  if (t.unpriced_requests > 0) {
    sub.push(
      `${plural(t.unpriced_requests, "request")} without a price: their cost is unknown, ` +
        'not $0; add [prices."MODEL"] in the config',
    );
  }
  if (t.subscription_requests > 0) {
    sub.push(
      `${plural(t.subscription_requests, "request")} billed by a subscription: tokens ` +
        "counted, no per-token price",
    );
  }
  const cached = share(t.cache_hit_share);
  sub.push(`${plural(t.requests, "upstream request")}, ${cached} of input cached`);
  $("cost-sub").textContent = sub.join(". ") + ".";
  const card = $("card-saved");
  card.classList.toggle("is-loss", t.saved_usd < 0);
  card.classList.toggle("is-saving", t.saved_usd > 0);
  $("saved-figure").replaceChildren(saved(t.saved_usd));
  $("saved-sub").textContent =
    t.saved_usd === null || t.saved_usd === undefined
      ? "Needs a price for the requests' models."
      : savedShare(t.saved_usd, t.passthrough_cost_usd) +
        (t.unpriced_requests > 0 ? "; priced requests only." : ".");
}

function drawNotices(cost) {
  const catalog = cost.catalog;
  const notice = $("catalog-notice");
  notice.hidden = !(catalog && catalog.stale);
  if (!notice.hidden) {
    notice.textContent =
      `price catalog dated ${catalog.date} (${count(catalog.age_days)} days old): prices may ` +
      'be out of date; add [prices."MODEL"] in the config';
  }
}

function drawTotals(cost) {
  const t = cost.totals;
  $("label").textContent = cost.label;
  $("span").textContent = cost.since
    ? `${localTime(isoSeconds(cost.since))} to ${localTime(isoSeconds(cost.until))} (${zoneName()})`
    : "no requests in this range";
  drawHeadline(t);
  drawNotices(cost);
  const measured = $("measured");
  measured.replaceChildren();
  figure(measured, "requests", "Upstream requests", count(t.requests));
  figure(measured, "client_requests", "Client requests", count(t.client_requests));
  figure(measured, "failed_requests", "Failed", count(t.failed_requests), "status 400 or more");
  const carried = "client requests by the credential they carried";
  figure(measured, "logins", "Logins", loginCounts(t), carried);
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
  const ptCost = priced(t.passthrough_cost_usd, t.unpriced_requests);
  figure(estimated, "passthrough_cost_usd", "Pass-through cost", ptCost);
  figure(estimated, "passthrough_input_tokens", "Input tokens", count(t.passthrough_input_tokens));
  const ptCached = count(t.passthrough_cached_input_tokens);
  figure(estimated, "passthrough_cached_input_tokens", "Cached input tokens", ptCached);
}

// --- tables -----------------------------------------------------------------------------

function cell(content, numeric = false) {
  return el("td", numeric ? { class: "num" } : {}, content);
}

function timeCell(seconds) {
  return el("td", { class: "time" }, localTime(seconds));
}

function drawSessions(bySession, listed, filters) {
  const costs = new Map(bySession.map((row) => [row.session, row]));
  // Under a filter, only the sessions with rows in it; else every session /state lists too.
  const filtered = filters.range !== "all" || filters.model || filters.session;
  const states = new Map(listed.map((line) => [line.session, line]));
  const ids = filtered
    ? [...costs.keys()]
    : [...states.keys(), ...[...costs.keys()].filter((id) => !states.has(id))];
  const body = $("sessions").tBodies[0];
  body.replaceChildren();
  if (!ids.length) {
    body.append(el("tr", {}, el("td", { colspan: 11 }, "No sessions in this range.")));
  }
  for (const id of ids) {
    const c = costs.get(id);
    const s = states.get(id);
    const row = el("tr", { "data-session": id });
    const name = id
      ? el("button", { type: "button", class: "open", "aria-controls": "detail" }, id)
      : el("span", { class: "unpriced" }, "(no session)");
    row.append(
      el("th", { scope: "row" }, name),
      el("td", { "data-field": "login" }, c ? loginText(c) : "—"),
      cell(c ? count(c.requests) : "—", true),
      cell(c ? count(c.input_tokens) : "—", true),
      cell(c ? count(c.output_tokens) : "—", true),
      cell(c ? share(c.cache_hit_share) : "—", true),
      cell(c ? sessionCost(c) : "—", true),
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

// A session's cost: "subscription" where a subscription billed all of it, else its sum.
function sessionCost(c) {
  if (c.subscription_requests > 0 && c.subscription_requests === c.requests) {
    return rowCost({ login: "anthropic-subscription" });
  }
  return priced(c.cost_usd, c.unpriced_requests, "unpriced");
}

function drawRequests(rows) {
  const body = $("requests").tBodies[0];
  body.replaceChildren();
  if (!rows.length) {
    body.append(el("tr", {}, el("td", { colspan: 13 }, "No requests in this range.")));
  }
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
        el("td", { "data-field": "login" }, r.login || "—"),
        cell(String(r.round), true),
        cell(status, true),
        cell(count(r.input), true),
        cell(count(r.cached_input), true),
        cell(count(r.output), true),
        cell(rowCost(r), true),
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
  const query = costQuery(readFilters(), Date.now() / 1000, ["range", "model"]);
  query.set("session", id);
  const [cost, state] = await Promise.all([
    getJson(withQuery("/cost", query)),
    getJson("/state?session=" + encodeURIComponent(id)).catch((error) => {
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
    ? `Tokens by where they went: head ${count(tokens.head)}, ` +
      `collapsed ${count(tokens.collapsed)}, verbatim ${count(tokens.verbatim)} (of ${count(tokens.total)}).`
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
    priced(t.cost_usd, t.unpriced_requests),
    "; pass-through ",
    money(t.passthrough_cost_usd),
    ", ",
    saved(t.saved_usd),
    " ",
    el("span", { class: "badge" }, "estimate"),
    ". ",
    el("span", { "data-field": "cache_verdicts" }, verdictText(t.cache_verdicts)),
  );
}

// Each cache verdict with its count, the hits first (docs/cost.md, "Why a cache missed").
function verdictText(verdicts) {
  const said = Object.entries(verdicts || {}).map(([verdict, n]) => `${verdict} ${count(n)}`);
  return said.length ? `Provider cache: ${said.join(", ")}.` : "Provider cache: no verdict yet.";
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

// Read everything under the current filters and draw it; then again in REFRESH_MS. A
// refresh started while one runs (a filter changed) supersedes it.
async function refresh() {
  clearTimeout(timer);
  const mine = ++generation;
  const status = $("status");
  const filters = readFilters();
  const now = Date.now() / 1000;
  const query = costQuery(filters, now);
  const latestQuery = costQuery(filters, now);
  latestQuery.set("limit", String(LATEST));
  // The choices of model and session: every one with rows in the time range.
  const narrowed = filters.model || filters.session;
  try {
    const [cost, choices, listed, latest] = await Promise.all([
      getJson(withQuery("/cost", query)),
      narrowed ? getJson(withQuery("/cost", costQuery(filters, now, ["range"]))) : null,
      stateList(),
      getJson(withQuery("/cost/requests", latestQuery)),
    ]);
    if (mine !== generation) return;
    const all = choices || cost;
    setChoices($("filter-model"), all.by_model.map((row) => row.model), filters.model,
      "All models");
    setChoices($("filter-session"), all.by_session.map((row) => row.session), filters.session,
      "All sessions");
    drawTotals(cost);
    drawModels(cost.by_model);
    drawHourly(cost.hourly);
    drawSessions(cost.by_session, listed, filters);
    drawRequests(latest.requests);
    if (openSession !== null) await drawDetail(openSession);
    status.textContent = `updated ${localTime(Date.now() / 1000).slice(11)}`;
    status.classList.remove("failed");
  } catch (error) {
    if (mine === generation) failed(error);
  } finally {
    if (mine === generation) timer = setTimeout(refresh, REFRESH_MS);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  setupFilters();
  for (const node of document.querySelectorAll(".zone")) node.textContent = zoneName();
  refresh();
});
