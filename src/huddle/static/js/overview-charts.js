// The overview's charts, drawn as SVG here (no library): the activity calendar, bars
// (by hour, by weekday), the weekday-by-hour punchcard and cost per day stacked by key.
import { el } from "./common.js";

const NS = "http://www.w3.org/2000/svg";
const DAY = 86400000;
export const KEY_COLOURS = ["#3e63dd", "#30a46c", "#e38c00", "#8e4ec6", "#d6409f", "#0090ff", "#12a594", "#8b8d98"];

export function svg(tag, attrs, ...kids) {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) n.setAttribute(k, String(v));
  for (const c of kids.flat()) if (c !== null && c !== undefined) n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return n;
}

const iso = (t) => new Date(t).toISOString().slice(0, 10);

// Five shades: nothing, then the quartiles of the days that saw anything.
function levels(values) {
  const v = values.filter((x) => x > 0).sort((a, b) => a - b);
  if (!v.length) return () => 0;
  const q = [0.25, 0.5, 0.75].map((p) => v[Math.min(v.length - 1, Math.floor(p * v.length))]);
  return (x) => (x <= 0 ? 0 : x <= q[0] ? 1 : x <= q[1] ? 2 : x <= q[2] ? 3 : 4);
}

// The calendar: a column per week (Monday on top), a cell per day from `first` to `last` (YYYY-MM-DD).
export function heatmap(box, days, first, last) {
  const by = new Map(days.map((d) => [d.day, d]));
  const start = Date.parse(first),
    end = Date.parse(last);
  if (!(start <= end)) {
    box.replaceChildren(el("p", { class: "faint", text: "Nothing happened in this range." }));
    return;
  }
  const shade = levels(days.map((d) => d.activity));
  const lead = (new Date(start).getUTCDay() + 6) % 7; // Monday = 0
  const weeks = Math.ceil((lead + (end - start) / DAY + 1) / 7);
  // cells as big as the card lets them (a few weeks fill it), 12 px at least (a long range scrolls)
  const G = 3,
    L = 28,
    T = 16;
  const C = Math.max(12, Math.min(20, Math.floor(((box.clientWidth || 600) - L) / weeks) - G));
  const W = L + weeks * (C + G),
    H = T + 7 * (C + G);
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": `Activity per day, ${first} to ${last}`, class: "heat" });
  ["Mon", "", "Wed", "", "Fri", "", ""].forEach((d, i) => d && g.append(svg("text", { x: 0, y: T + i * (C + G) + C / 2 + 4, class: "axis" }, d)));
  for (let t = start, i = lead; t <= end; t += DAY, i++) {
    const k = iso(t),
      w = Math.floor(i / 7),
      wd = i % 7;
    const d = by.get(k);
    const x = L + w * (C + G),
      y = T + wd * (C + G);
    if (k.endsWith("-01") || (t === start && Number(k.slice(8)) <= 21)) {
      // a month's name over its first week
      g.append(svg("text", { x, y: T - 5, class: "axis" }, new Date(t).toLocaleDateString([], { month: "short", timeZone: "UTC" })));
    }
    const tip = d
      ? `${k}: ${d.activity.toLocaleString()} actions (${d.messages.toLocaleString()} messages, ${d.tool_calls.toLocaleString()} tool calls) in ${d.sessions} session${d.sessions === 1 ? "" : "s"}`
      : `${k}: nothing`;
    g.append(svg("rect", { x, y, width: C, height: C, rx: 2, class: `lv${d ? shade(d.activity) : 0}`, "data-day": k }, svg("title", {}, tip)));
  }
  box.replaceChildren(g);
  box.scrollLeft = box.scrollWidth; // the latest weeks in view
}

export function heatLegend(box) {
  box.replaceChildren("less ", ...[0, 1, 2, 3, 4].map((i) => el("span", { class: `sw lv${i}`, "aria-hidden": "true" })), " more");
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((m) => m >= v);
}

// Bars: `rows` [{label, parts: [[value, colour, name]], tip}], value axis formatted by `fmt`.
export function bars(box, rows, fmt, opts = {}) {
  const W = Math.max(260, box.clientWidth || 600),
    H = opts.height || 170,
    L = 44,
    B = 22,
    T = 8;
  const max = niceMax(Math.max(0, ...rows.map((r) => r.parts.reduce((s, [v]) => s + v, 0))));
  const plotW = W - L - 6,
    plotH = H - B - T;
  const bw = rows.length ? plotW / rows.length : plotW;
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", height: H, role: "img", "aria-label": box.dataset.label || "chart", class: "bars" });
  for (let i = 0; i <= 4; i += 2) {
    const y = T + plotH - (plotH * i) / 4;
    g.append(
      svg("line", { x1: L, x2: W - 6, y1: y, y2: y, class: "grid" }),
      svg("text", { x: L - 6, y: y + 4, class: "axis", "text-anchor": "end" }, fmt((max * i) / 4)),
    );
  }
  const every = Math.max(1, Math.ceil((rows.length * (opts.labelGap || 26)) / plotW));
  rows.forEach((r, i) => {
    const x = L + i * bw;
    let y = T + plotH;
    const col = svg("g", { class: "day" }, svg("title", {}, r.tip));
    for (const [v, colour] of r.parts) {
      const h = (plotH * v) / max;
      if (h <= 0) continue;
      y -= h;
      const w = Math.max(1, Math.min(bw * 0.76, 40));
      col.append(svg("rect", { x: x + (bw - w) / 2, y, width: w, height: h, fill: colour }));
    }
    col.append(svg("rect", { x, y: T, width: bw, height: plotH, fill: "transparent" }));
    g.append(col);
    if (i % every === 0) g.append(svg("text", { x: x + bw / 2, y: T + plotH + 16, class: "axis", "text-anchor": "middle" }, r.label));
  });
  box.replaceChildren(g);
}

// Weekday by hour: a cell per hour of each weekday, shaded like the calendar.
export function punchcard(box, grid, names) {
  const shade = levels(grid.flat());
  const C = 14,
    G = 2,
    L = 30,
    T = 14;
  const W = L + 24 * (C + G),
    H = T + 7 * (C + G);
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "Activity by weekday and hour", class: "heat" });
  for (let h = 0; h < 24; h += 3) g.append(svg("text", { x: L + h * (C + G), y: T - 4, class: "axis" }, String(h).padStart(2, "0")));
  grid.forEach((row, wd) => {
    g.append(svg("text", { x: 0, y: T + wd * (C + G) + C - 3, class: "axis" }, names[wd]));
    row.forEach((v, h) =>
      g.append(
        svg(
          "rect",
          { x: L + h * (C + G), y: T + wd * (C + G), width: C, height: C, rx: 2, class: `lv${shade(v)}` },
          svg("title", {}, `${names[wd]} ${String(h).padStart(2, "0")}:00: ${v.toLocaleString()} actions`),
        ),
      ),
    );
  });
  box.replaceChildren(g);
}

// Cost per UTC day stacked by the costliest keys (the rest as "other"), from `first` to `last`.
export function costChart(box, legend, series, first, last, usd) {
  const keys = series.slice(0, KEY_COLOURS.length - 1).map((s) => s.key);
  const rest = series.slice(KEY_COLOURS.length - 1);
  const named = [...keys.map((k, i) => [k, KEY_COLOURS[i]]), ...(rest.length ? [["other", KEY_COLOURS[KEY_COLOURS.length - 1]]] : [])];
  // a bar per day; per week (from its Monday) past four months; per month past two years
  const n = (Date.parse(last) - Date.parse(first)) / DAY + 1;
  const unit = n > 730 ? "month" : n > 120 ? "week" : "day";
  const bucket = (t) => {
    if (unit === "day") return iso(t);
    if (unit === "month") return iso(t).slice(0, 7);
    return iso(t - ((new Date(t).getUTCDay() + 6) % 7) * DAY);
  };
  const sums = new Map();
  for (let t = Date.parse(first); t <= Date.parse(last) && sums.size < 3700; t += DAY) {
    const day = iso(t),
      b = bucket(t);
    const got = sums.get(b) || sums.set(b, new Array(keys.length + 1).fill(0)).get(b);
    keys.forEach((k, i) => {
      got[i] += series[i].days[day] || 0;
    });
    got[keys.length] += rest.reduce((s, x) => s + (x.days[day] || 0), 0);
  }
  const rows = [...sums].map(([b, v]) => {
    const parts = keys.map((k, i) => [v[i], KEY_COLOURS[i], k]);
    if (rest.length) parts.push([v[keys.length], KEY_COLOURS[KEY_COLOURS.length - 1], "other"]);
    const total = parts.reduce((s, [x]) => s + x, 0);
    const what = unit === "week" ? `week of ${b}` : b;
    return {
      label: unit === "month" ? b : b.slice(5),
      parts,
      tip: `${what}: ${usd(total)}${parts
        .filter(([x]) => x > 0)
        .map(([x, , k]) => ` · ${k} ${usd(x)}`)
        .join("")}`,
    };
  });
  box.dataset.unit = unit;
  bars(box, rows, usd, { height: 200, labelGap: 48 });
  legend.replaceChildren(
    ...named.map(([k, c]) => {
      const s = el("span", { class: "sw" });
      s.style.background = c;
      return el("span", { class: "key" }, s, k);
    }),
  );
}
