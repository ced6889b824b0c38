// The dashboard's nodes and formats: building elements (as text, never markup), counts,
// shares, money, savings and local times. Loaded before charts.js and app.js, which use it.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const MINUS = "\u2212";

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

// --- numbers ----------------------------------------------------------------------------

function count(n) {
  return n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US");
}

function share(fraction) {
  return fraction === null || fraction === undefined ? "—" : `${(fraction * 100).toFixed(1)} %`;
}

function plural(n, word) {
  return `${count(n)} ${word}${n === 1 ? "" : "s"}`;
}

// --- money ------------------------------------------------------------------------------

function dollars(value) {
  const size = Math.abs(value);
  if (size < 1) return "$" + size.toFixed(4);
  return "$" + size.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
}

// One row's cost: a number, or "unpriced" (never $0) when its model has no price.
function money(value) {
  if (value === null || value === undefined) return el("span", { class: "unpriced" }, "unpriced");
  return el("span", { class: "money" }, (value < 0 ? MINUS : "") + dollars(value));
}

// One row's cost where its login is a subscription: no per-token price, and not unpriced.
function rowCost(row) {
  if (row.login === "anthropic-subscription") {
    return el("span", { class: "subscription", title: "billed by the subscription" }, "subscription");
  }
  return money(row.cost_usd);
}

// The logins of a group's client requests and what the gateway did with them: "passed
// through untouched (subscription)", or "rewritten" where a lane changed any request.
function loginText(group) {
  const names = Object.keys(group.logins || {});
  if (!names.length) return "—";
  const done = group.rewritten_requests > 0 ? "rewritten" : "passed through untouched";
  const subscription = names.includes("anthropic-subscription") ? " (subscription)" : "";
  return `${names.join(", ")}: ${done}${subscription}`;
}

// How many client requests each login made: "anthropic-subscription 1, api-key 12".
function loginCounts(group) {
  const entries = Object.entries(group.logins || {});
  return entries.length ? entries.map(([name, n]) => `${name} ${count(n)}`).join(", ") : "—";
}

// A group's cost: the priced rows' sum, with its unpriced requests counted beside it
// ("$1.20 + 3 unpriced requests"); "—" only when there is no sum at all (cost null).
function priced(value, unpriced, words = "unpriced requests") {
  const node = el("span", { class: "priced" });
  if (value === null || value === undefined) {
    node.append(el("span", { class: "unpriced", title: "no price for its model" }, "—"));
    if (unpriced > 0) {
      node.append(" ", el("span", { class: "plus" }, `(${count(unpriced)} unpriced)`));
    }
    return node;
  }
  node.append(el("span", { class: "money" }, (value < 0 ? MINUS : "") + dollars(value)));
  if (unpriced > 0) {
    const word = unpriced === 1 ? words.replace(/s$/, "") : words;
    node.append(" ", el("span", { class: "plus" }, `+ ${count(unpriced)} ${word}`));
  }
  return node;
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

// The saving as a share of what a pass-through would have cost, said plainly for a loss.
function savedShare(savedUsd, passthroughUsd) {
  if (savedUsd === null || savedUsd === undefined || !passthroughUsd) return "";
  const part = ((Math.abs(savedUsd) / passthroughUsd) * 100).toFixed(1);
  const of = `the pass-through cost (${dollars(passthroughUsd)}, estimated)`;
  if (savedUsd < 0) return `a loss: ${part} % more than ${of}`;
  return `${part} % of ${of}`;
}

// --- times ------------------------------------------------------------------------------

const pad = (n) => String(n).padStart(2, "0");

// Unix seconds as the browser's local time, to the second: "2026-12-03 17:05:09".
function localTime(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  const d = new Date(Math.floor(seconds) * 1000);
  const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  return `${day} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// An ISO 8601 instant from the gateway (its fraction of a second dropped) as Unix seconds.
function isoSeconds(iso) {
  return Date.parse(iso.replace(/\.\d+/, "")) / 1000;
}

// Unix seconds as ISO 8601 in UTC, whole seconds: what /cost's since and until take.
function isoUtc(seconds) {
  return new Date(Math.floor(seconds) * 1000).toISOString().replace(/\.\d+Z$/, "Z");
}

function zoneName() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
}
