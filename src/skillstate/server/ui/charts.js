// The dashboard's two charts, as SVG: a bar per model and a bar per hour. Each chart's
// viewBox is grown to hold everything drawn in it, so no label is ever cut at its edge,
// whatever the width of a model name or of a figure.
"use strict";

const CHAR_UNITS = 7; // about the width of one character of an axis label (12 px)

// Cost when every row is priced, else tokens (input + output): never a $0 bar for "unknown".
function measure(rows) {
  const isPriced = (row) => row.cost_usd !== null && !(row.unpriced_requests > 0);
  if (rows.length > 0 && rows.every(isPriced)) {
    return { name: "recorded cost", of: (row) => row.cost_usd, show: dollars };
  }
  return {
    name: "tokens (input + output; some costs unpriced)",
    of: (row) => row.input_tokens + row.output_tokens,
    show: (n) => `${count(n)} tokens`,
  };
}

function summary(items, show) {
  const shown = items.slice(0, 6).map((item) => `${item.label} ${show(item.value)}`);
  const more = items.length > 6 ? `, and ${items.length - 6} more` : "";
  return shown.join(", ") + more;
}

// A model name that fits ``room`` units: a longer one is shortened (its bar's title and the
// caption say it whole).
function shorten(text, room) {
  const chars = Math.max(8, Math.floor(room / CHAR_UNITS));
  return text.length > chars ? text.slice(0, chars - 1) + "…" : text;
}

// The width to draw ``chart`` at, in user units: its box's width in CSS pixels (at most 640),
// so that a label drawn 12 units high reads 12 pixels high on a phone too.
function drawnWidth(chart) {
  const box = chart.parentNode.clientWidth || 640;
  return Math.max(300, Math.min(640, Math.floor(box)));
}

// Grow the viewBox of ``chart`` (drawn for width x height) to hold all it draws.
function fit(chart, width, height) {
  let box = { x: 0, y: 0, width, height };
  try {
    box = chart.getBBox(); // zero while the chart is not laid out: the drawn size stands
  } catch (error) {
    // not rendered (a hidden page): keep the drawn size
  }
  const x0 = Math.min(0, Math.floor(box.x) - 2);
  const y0 = Math.min(0, Math.floor(box.y) - 2);
  const x1 = Math.max(width, Math.ceil(box.x + box.width) + 2);
  const y1 = Math.max(height, Math.ceil(box.y + box.height) + 2);
  chart.setAttribute("viewBox", `${x0} ${y0} ${x1 - x0} ${y1 - y0}`);
}

function drawModels(rows) {
  const chart = $("chart-models");
  const m = measure(rows);
  const items = rows.map((row) => ({ label: row.model || "(none)", value: m.of(row) }));
  const top = Math.max(...items.map((item) => item.value), 0) || 1;
  const width = drawnWidth(chart);
  const rowHeight = 28;
  const axis = Math.round(width * 0.32);
  const room = width - axis - 130; // the longest bar leaves room for its figure
  const height = Math.max(items.length, 1) * rowHeight + 8;
  chart.replaceChildren();
  setAttributes(chart, { viewBox: `0 0 ${width} ${height}`, "data-points": items.length });
  items.forEach((item, i) => {
    const y = 4 + i * rowHeight;
    const bar = Math.max(1, (item.value / top) * room);
    chart.append(
      svgEl("text", { x: axis - 10, y: y + 17, class: "axis", "text-anchor": "end" },
        shorten(item.label, axis - 10)),
      svgEl(
        "rect",
        { x: axis, y: y + 3, width: bar, height: rowHeight - 8, class: "bar" },
        svgEl("title", {}, `${item.label}: ${m.show(item.value)}`),
      ),
      svgEl("text", { x: axis + bar + 6, y: y + 17, class: "value" }, m.show(item.value)),
    );
  });
  fit(chart, width, height);
  $("chart-models-text").textContent = items.length
    ? `By model, ${m.name}: ${summary(items, m.show)}.`
    : "No requests in this range.";
}

// An hour's label: its local time, with the day when the hours shown span more than one.
function hourLabels(hours) {
  const days = new Set(hours.map((seconds) => localTime(seconds).slice(0, 10)));
  return hours.map((seconds) => {
    const text = localTime(seconds);
    return days.size > 1 ? `${text.slice(5, 10)} ${text.slice(11, 16)}` : text.slice(11, 16);
  });
}

function drawHourly(rows) {
  const chart = $("chart-hourly");
  const m = measure(rows);
  const hours = rows.map((row) => isoSeconds(row.hour));
  const labels = hourLabels(hours);
  const items = rows.map((row, i) => ({ label: labels[i], at: hours[i], value: m.of(row) }));
  const top = Math.max(...items.map((item) => item.value), 0) || 1;
  const width = drawnWidth(chart);
  const [height, left, right, bottom, plot] = [200, 12, 12, 28, 150];
  const base = height - bottom;
  const step = (width - left - right) / Math.max(items.length, 1);
  const bar = Math.min(40, step * 0.8);
  chart.replaceChildren();
  setAttributes(chart, { viewBox: `0 0 ${width} ${height}`, "data-points": items.length });
  chart.append(
    svgEl("line", { x1: left, y1: base, x2: width - right, y2: base, class: "baseline" }),
    svgEl("line", { x1: left, y1: base - plot, x2: width - right, y2: base - plot,
      class: "gridline" }),
    svgEl("text", { x: left, y: base - plot - 6, class: "axis" },
      `top: ${m.show(top)}`),
  );
  const wide = labels.some((label) => label.length > 5) ? 84 : 48; // user units per label
  const labelEvery = Math.max(1, Math.ceil(wide / step));
  items.forEach((item, i) => {
    const x = left + i * step + (step - bar) / 2;
    const h = Math.max(1, (item.value / top) * plot);
    chart.append(
      svgEl(
        "rect",
        { x, y: base - h, width: bar, height: h, class: "bar" },
        svgEl("title", {}, `${localTime(item.at)}: ${m.show(item.value)}`),
      ),
    );
    if (i % labelEvery === 0) {
      const at = { x: x + bar / 2, y: base + 18, class: "axis", "text-anchor": "middle" };
      chart.append(svgEl("text", at, item.label));
    }
  });
  fit(chart, width, height);
  $("chart-hourly-text").textContent = items.length
    ? `By hour (${zoneName()}), ${m.name}: ${summary(items, m.show)}.`
    : "No requests in this range.";
}
