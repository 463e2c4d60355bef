// The usage page: tokens and cost per day (SVG drawn here, no library), by project,
// model and agent, over a date range; the same reports as `huddle usage --json`.
import { el, fmtTokens, getJSON, typing } from "./common.js";

const $ = (id) => document.getElementById(id);
const NS = "http://www.w3.org/2000/svg";
const DAY = 86400000;
const PARTS = [
  ["input", "Input", "#3e63dd"],
  ["output", "Output", "#30a46c"],
  ["cache_read", "Cache read", "#8e4ec6"],
  ["cache_write", "Cache write", "#e38c00"],
];
const GROUPS = ["day", "project", "model", "agent"];
const LABEL_GAP = 48; // px a day's label takes with room around it (11px "11-30")

function svg(tag, attrs, ...kids) {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) n.setAttribute(k, String(v));
  for (const c of kids.flat()) if (c !== null && c !== undefined) n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return n;
}

const iso = (d) => d.toISOString().slice(0, 10);
const usd = (v) => (v === null || v === undefined ? "?" : v < 0.01 && v > 0 ? "<$0.01" : `$${v.toFixed(v < 100 ? 2 : 0)}`);

function range() {
  const from = $("from").value || null;
  const to = $("to").value || null;
  return { from, to, until: to ? iso(new Date(Date.parse(to) + DAY)) : null };
}

async function report(by, r) {
  const p = new URLSearchParams({ by });
  if (r.from) p.set("since", r.from);
  if (r.until) p.set("until", r.until);
  return getJSON(`/api/usage?${p}`);
}

function days(rows, r) {
  const known = rows.filter((x) => x.key !== "unknown");
  const first = r.from || (known[0] && known[0].key);
  const last = r.to || (known.length && known[known.length - 1].key) || first;
  if (!first) return [];
  const by = new Map(known.map((x) => [x.key, x]));
  const out = [];
  for (let t = Date.parse(first); t <= Date.parse(last) && out.length < 3700; t += DAY) {
    const k = iso(new Date(t));
    out.push(by.get(k) || { key: k, input: 0, output: 0, cache_read: 0, cache_write: 0, total_tokens: 0, cost_usd: 0, empty: true });
  }
  return out;
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((m) => m >= v);
}

// One bar chart: `stacks(row)` gives [[value, colour, label], ...] per day.
function chart(box, rows, stacks, fmt) {
  const W = Math.max(280, box.clientWidth || 900),
    H = 194,
    L = 56,
    B = 26,
    T = 8;
  const max = niceMax(Math.max(0, ...rows.map((r) => stacks(r).reduce((s, [v]) => s + v, 0))));
  const plotW = W - L - 8,
    plotH = H - B - T;
  const bw = rows.length ? plotW / rows.length : plotW;
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", height: H, role: "img", "aria-label": box.dataset.label || "chart", class: "bars" });
  for (let i = 0; i <= 4; i++) {
    const y = T + plotH - (plotH * i) / 4;
    g.append(
      svg("line", { x1: L, x2: W - 8, y1: y, y2: y, class: "grid" }),
      svg("text", { x: L - 6, y: y + 4, class: "axis", "text-anchor": "end" }, fmt((max * i) / 4)),
    );
  }
  // a day's label (MM-DD) every so many bars, so that labels keep clear of each other at any width
  const every = Math.max(1, Math.ceil((rows.length * LABEL_GAP) / plotW));
  rows.forEach((r, i) => {
    const x = L + i * bw;
    let y = T + plotH;
    const parts = stacks(r);
    const total = parts.reduce((s, [v]) => s + v, 0);
    const col = svg("g", { class: "day", "data-day": r.key });
    col.append(
      svg("title", {}, `${r.key}: ${parts.map(([v, , label]) => `${label} ${fmt(v)}`).join(" · ")}${parts.length > 1 ? ` · total ${fmt(total)}` : ""}`),
    );
    for (const [v, colour] of parts) {
      const h = (plotH * v) / max;
      if (h <= 0) continue;
      y -= h;
      const w = Math.max(1, Math.min(bw * 0.76, 56));
      col.append(svg("rect", { x: x + (bw - w) / 2, y, width: w, height: h, fill: colour }));
    }
    col.append(svg("rect", { x, y: T, width: bw, height: plotH, fill: "transparent" }));
    g.append(col);
    if (i % every === 0) g.append(svg("text", { x: x + bw / 2, y: T + plotH + 18, class: "axis", "text-anchor": "middle" }, r.key.slice(5)));
  });
  box.replaceChildren(g);
}

function table(box, data, label) {
  const rows = data.rows;
  if (!rows.length) {
    box.replaceChildren(el("p", { class: "faint", text: "No usage in this range." }));
    return;
  }
  const top = Math.max(...rows.map((r) => r.cost_usd || 0), 0);
  const topTok = Math.max(...rows.map((r) => r.total_tokens || 0), 1);
  box.replaceChildren(
    el(
      "table",
      { class: "u-table" },
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          ["", "Input", "Output", "Cache read", "Cache write", "Total", "Cost"].map((h) => el("th", { text: h })),
        ),
      ),
      el(
        "tbody",
        {},
        rows.map((r) => {
          const share = top > 0 ? (r.cost_usd || 0) / top : (r.total_tokens || 0) / topTok;
          const bar = el("span", { class: "share" });
          bar.style.width = `${Math.round(share * 100)}%`;
          return el(
            "tr",
            {},
            el("td", { class: "u-name", title: label(r) }, el("span", { text: label(r) }), bar),
            ...["input", "output", "cache_read", "cache_write", "total_tokens"].map((k) =>
              el("td", { text: fmtTokens(r[k]), title: (r[k] || 0).toLocaleString() }),
            ),
            el("td", {
              text: usd(r.cost_usd) + (r.unpriced && r.unpriced.length ? "+?" : ""),
              title: r.unpriced && r.unpriced.length ? `unpriced: ${r.unpriced.join(", ")}` : "",
            }),
          );
        }),
      ),
    ),
  );
}

let last = null;

async function load() {
  const r = range();
  const [day, project, model, agent] = await Promise.all(GROUPS.map((g) => report(g, r)));
  last = { r, day, project, model, agent };
  const t = day.totals;
  $("totals").replaceChildren(
    el("div", { class: "stat" }, el("b", { text: usd(t.cost_usd) + (t.unpriced && t.unpriced.length ? "+?" : "") }), el("span", { text: "cost" })),
    el("div", { class: "stat" }, el("b", { text: fmtTokens(t.total_tokens) }), el("span", { text: "tokens" })),
    el("div", { class: "stat" }, el("b", { text: fmtTokens(t.output) }), el("span", { text: "output" })),
    el("div", { class: "stat" }, el("b", { text: (t.responses || 0).toLocaleString() }), el("span", { text: "model responses" })),
    el("div", { class: "stat" }, el("b", { text: (t.sessions || 0).toLocaleString() }), el("span", { text: "sessions" })),
  );
  const rows = days(day.rows, r);
  chart(
    $("cost-chart"),
    rows,
    (x) => [[x.cost_usd || 0, "#3e63dd", "cost"]],
    (v) => usd(v),
  );
  chart(
    $("token-chart"),
    rows,
    (x) => PARTS.map(([k, label, c]) => [x[k] || 0, c, label]),
    (v) => fmtTokens(Math.round(v)),
  );
  $("legend").replaceChildren(
    ...PARTS.map(([, label, c]) => {
      const s = el("span", { class: "sw" });
      s.style.background = c;
      return el("span", { class: "key" }, s, label);
    }),
  );
  table($("by-project"), project, (x) => x.key);
  table($("by-model"), model, (x) => x.key);
  table($("by-agent"), agent, (x) => `${x.source} · ${x.agent}`);
  const unknown = day.rows.find((x) => x.key === "unknown");
  const notes = [...(day.notes || [])];
  if (unknown) notes.push(`${fmtTokens(unknown.total_tokens)} tokens carry no time and sit in no day.`);
  if (day.unpriced && day.unpriced.length)
    notes.push(`Unpriced, not in the cost: ${day.unpriced.map((u) => `${u.model} (${fmtTokens(u.tokens)} tokens)`).join(", ")}.`);
  notes.push(`Prices as of ${day.pricing.as_of}, USD list prices.`);
  $("notes").textContent = notes.join(" ");
  $("cost-note").textContent = t.unpriced && t.unpriced.length ? "(priced models only)" : "";
}

// CSV: one row per day, project, model and agent of the range. A cell that a
// spreadsheet would run as a formula (= + - @) is quoted as text.
function cell(v) {
  let s = v === null || v === undefined ? "" : String(v);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function csv() {
  if (!last) return;
  const head = ["group", "key", "source", "input", "output", "cache_read", "cache_write", "total_tokens", "cost_usd", "responses", "sessions", "unpriced"];
  const lines = [head.join(",")];
  for (const g of GROUPS) {
    for (const r of last[g].rows) {
      lines.push(
        [
          g,
          g === "agent" ? r.agent : r.key,
          r.source || "",
          r.input,
          r.output,
          r.cache_read,
          r.cache_write,
          r.total_tokens,
          r.cost_usd,
          r.responses,
          r.sessions,
          (r.unpriced || []).join(" "),
        ]
          .map(cell)
          .join(","),
      );
    }
  }
  const blob = new Blob([lines.join("\r\n") + "\r\n"], { type: "text/csv" });
  const a = el("a", { href: URL.createObjectURL(blob), download: `huddle-usage-${last.r.from || "all"}-to-${last.r.to || "now"}.csv` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

function preset(daysBack) {
  if (!daysBack) {
    $("from").value = "";
    $("to").value = "";
  } else {
    const today = new Date();
    $("to").value = iso(today);
    $("from").value = iso(new Date(today.getTime() - (daysBack - 1) * DAY));
  }
  for (const b of document.querySelectorAll(".range [data-days]")) b.classList.toggle("on", Number(b.dataset.days) === daysBack);
  save();
  load().catch(fail);
}

function save() {
  const p = new URLSearchParams();
  if ($("from").value) p.set("from", $("from").value);
  if ($("to").value) p.set("to", $("to").value);
  history.replaceState(null, "", `/usage${p.toString() ? `?${p}` : ""}`);
}

function fail(e) {
  $("notes").textContent = `huddle: ${e.message}`;
}

function main() {
  for (const b of document.querySelectorAll(".range [data-days]")) b.addEventListener("click", () => preset(Number(b.dataset.days)));
  for (const id of ["from", "to"])
    $(id).addEventListener("change", () => {
      for (const b of document.querySelectorAll(".range [data-days]")) b.classList.remove("on");
      save();
      load().catch(fail);
    });
  $("csv").addEventListener("click", csv);
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && !typing(ev.target)) location.href = "/";
  });
  let resize = null;
  window.addEventListener("resize", () => {
    clearTimeout(resize);
    resize = setTimeout(() => last && load().catch(fail), 200);
  });
  const p = new URLSearchParams(location.search);
  if (p.has("from") || p.has("to")) {
    $("from").value = p.get("from") || "";
    $("to").value = p.get("to") || "";
    load().catch(fail);
  } else preset(30);
}

main();
