// The overview page: a history at a glance, for a range of UTC days, one agent, one
// project (kept in the address). Everything comes from GET /api/overview, the dict
// `huddle overview --json` prints; each table's CSV from /api/overview.csv.
import { agentDot, el, fmtTokens, getJSON, loadAgents, SOURCE_LABEL, typing } from "./common.js";
import { bars, costChart, heatLegend, heatmap, punchcard } from "./overview-charts.js";

const $ = (id) => document.getElementById(id);
const DAY = 86400000;
const TZ = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
const f = { days: 30, from: "", to: "", agent: "", project: "", top: "tokens", by: "model" };
const TOOLS_SHOWN = 12;
let last = null;
let allTools = false;

const iso = (t) => new Date(t).toISOString().slice(0, 10);
const usd = (v) =>
  v === null || v === undefined
    ? "?"
    : v > 0 && v < 0.01
      ? "<$0.01"
      : `$${v.toLocaleString([], { minimumFractionDigits: v < 100 ? 2 : 0, maximumFractionDigits: v < 100 ? 2 : 0 })}`;
const count = (n) => (n || 0).toLocaleString();
const tokens = (n) => (n >= 1e9 ? `${(n / 1e9).toFixed(n < 1e10 ? 2 : 1)}B` : fmtTokens(n));

function span(seconds) {
  const m = Math.round((seconds || 0) / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  return h < 48 ? `${h} h ${String(m % 60).padStart(2, "0")}` : `${Math.round(h / 24)} days`;
}

// -- the address ----------------------------------------------------------------------

function read() {
  const p = new URLSearchParams(location.search);
  f.from = p.get("from") || "";
  f.to = p.get("to") || "";
  const d = p.get("days");
  f.days = f.from || f.to ? null : d === null ? 30 : Number(d) || 0;
  f.agent = p.get("agent") || "";
  f.project = p.get("project") || "";
  f.top = ["tokens", "duration", "cost"].includes(p.get("top")) ? p.get("top") : "tokens";
  f.by = ["model", "agent", "project"].includes(p.get("by")) ? p.get("by") : "model";
}

function write() {
  const p = new URLSearchParams();
  if (f.from) p.set("from", f.from);
  if (f.to) p.set("to", f.to);
  if (!f.from && !f.to && f.days !== 30) p.set("days", String(f.days || 0));
  if (f.agent) p.set("agent", f.agent);
  if (f.project) p.set("project", f.project);
  if (f.top !== "tokens") p.set("top", f.top);
  if (f.by !== "model") p.set("by", f.by);
  history.replaceState(null, "", `/overview${p.toString() ? `?${p}` : ""}`);
}

// What the API is asked: whole UTC days (`to` is the last day shown, `until` the day after it).
function query() {
  const p = new URLSearchParams({ tz: TZ });
  if (f.from || f.to) {
    if (f.from) p.set("since", f.from);
    if (f.to) p.set("until", iso(Date.parse(f.to) + DAY));
  } else if (f.days) p.set("days", String(f.days));
  if (f.agent) p.set("agent", f.agent);
  if (f.project) p.set("project", f.project);
  return p;
}

// -- drawing --------------------------------------------------------------------------

function stats(d) {
  const s = d.stats;
  const card = (value, label, title) => el("div", { class: "stat", title: title || "" }, el("b", { text: value }), el("span", { text: label }));
  $("stats").replaceChildren(
    card(count(s.sessions), "sessions"),
    card(count(s.messages), "messages", `${count(s.prompts)} prompts, ${count(s.replies)} replies`),
    card(count(s.active_days), s.active_days === 1 ? "active day" : "active days"),
    card(usd(s.cost_usd) + (d.unpriced.length ? "+?" : ""), "cost", d.unpriced.length ? `unpriced: ${d.unpriced.map((u) => u.model).join(", ")}` : ""),
    card(tokens(s.tokens), "tokens", count(s.tokens)),
    card(count(s.tool_calls), "tool calls", `${count(s.tool_errors)} failed`),
  );
}

function rangeDays(d) {
  const known = d.heatmap.map((x) => x.day);
  const since = d.filters.since ? d.filters.since.slice(0, 10) : known[0];
  const until = d.filters.until ? iso(Date.parse(d.filters.until) - DAY) : [iso(Date.now()), ...known].sort().pop();
  return [since || iso(Date.now()), until];
}

function table(box, head, rows) {
  if (!rows.length) {
    box.replaceChildren(el("p", { class: "faint", text: "Nothing in this range." }));
    return;
  }
  box.replaceChildren(
    el(
      "table",
      { class: "u-table ov-table" },
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          head.map(([h, cls]) => el("th", { text: h, class: cls || "" })),
        ),
      ),
      el("tbody", {}, rows),
    ),
  );
}

function agentCell(source) {
  const name = SOURCE_LABEL[source] || source;
  return el("td", { class: "ov-agent", title: name }, agentDot(source), el("span", { class: "ov-agent-name", text: name }));
}

function top(d) {
  const rows = d.top_sessions[f.top] || [];
  for (const b of document.querySelectorAll("#top-tabs [role=tab]")) {
    const on = b.dataset.top === f.top;
    b.setAttribute("aria-selected", on ? "true" : "false");
    b.tabIndex = on ? 0 : -1;
  }
  $("top-csv").dataset.table = `top_${f.top}`;
  table(
    $("top"),
    [["Session", "u-left"], ["Agent", "u-left"], ["Project", "u-left hide-narrow"], ["Tokens"], ["Cost"], ["Time active"], ["Messages", "hide-narrow"]],
    rows.map((r) =>
      el(
        "tr",
        {},
        el("td", { class: "u-name ov-title" }, el("a", { href: `/session/${encodeURIComponent(r.id)}`, text: r.title || r.id, title: r.title || r.id })),
        agentCell(r.source),
        el("td", { class: "u-left hide-narrow", text: r.project || "—" }),
        el("td", { text: tokens(r.tokens), title: count(r.tokens) }),
        el("td", { text: usd(r.cost_usd) + (r.unpriced ? "+?" : "") }),
        el("td", { text: span(r.active_s), title: `first ${r.first || "?"}, last ${r.last || "?"}` }),
        el("td", { class: "hide-narrow", text: count(r.messages) }),
      ),
    ),
  );
}

function tools(d) {
  const all = d.tools;
  const shown = allTools ? all : all.slice(0, TOOLS_SHOWN);
  const most = Math.max(1, ...all.map((r) => r.calls));
  table(
    $("tools"),
    [["Tool", "u-left"], ["Agent", "u-left"], ["Calls"], ["Failed"], ["Failed %", "hide-narrow"], ["Sessions", "hide-narrow"]],
    shown.map((r) => {
      const bar = el("span", { class: "share" });
      bar.style.width = `${Math.round((100 * r.calls) / most)}%`;
      return el(
        "tr",
        {},
        el("td", { class: "u-name" }, el("span", { text: r.tool }), bar),
        agentCell(r.agent),
        el("td", { text: count(r.calls) }),
        el("td", { text: count(r.errors), class: r.errors ? "ov-bad" : "" }),
        el("td", { class: "hide-narrow", text: r.calls ? `${((100 * r.errors) / r.calls).toFixed(1)}%` : "—" }),
        el("td", { class: "hide-narrow", text: count(r.sessions) }),
      );
    }),
  );
  $("tools-more").hidden = allTools || all.length <= TOOLS_SHOWN;
  $("tools-more").textContent = `Show all ${all.length} tools`;
}

function cost(d) {
  for (const b of document.querySelectorAll("#cost-tabs [role=tab]")) {
    const on = b.dataset.by === f.by;
    b.setAttribute("aria-selected", on ? "true" : "false");
    b.tabIndex = on ? 0 : -1;
  }
  $("cost-csv").dataset.table = `cost_${f.by}`;
  const series = d.cost_over_time[f.by];
  const [first, lastDay] = rangeDays(d);
  costChart($("cost-chart"), $("cost-legend"), series, first, lastDay, usd);
  $("cost-unit").textContent = `per UTC ${$("cost-chart").dataset.unit}, as huddle usage counts it`;
  const name = (k) => (f.by === "agent" ? SOURCE_LABEL[k] || k : k);
  table(
    $("cost-table"),
    [[f.by === "model" ? "Model" : f.by === "agent" ? "Agent" : "Project", "u-left"], ["Cost"], ["Tokens"], ["Responses", "hide-narrow"], ["Sessions"]],
    series.map((r) =>
      el(
        "tr",
        {},
        el("td", { class: "u-name", text: name(r.key), title: r.key }),
        el("td", { text: usd(r.cost_usd) + (r.unpriced.length ? "+?" : "") }),
        el("td", { text: tokens(r.total_tokens), title: count(r.total_tokens) }),
        el("td", { class: "hide-narrow", text: count(r.responses) }),
        el("td", { text: count(r.sessions) }),
      ),
    ),
  );
}

function csvLinks() {
  const p = query();
  for (const a of document.querySelectorAll("a.csv")) {
    p.set("table", a.dataset.table);
    a.href = `/api/overview.csv?${p}`;
    a.setAttribute("download", `huddle-${a.dataset.table}.csv`);
    a.title = `This table as CSV (${a.dataset.table})`;
  }
}

function choices(d) {
  for (const [id, list, label, value] of [
    ["agent", d.choices.agents, "every agent", f.agent],
    ["project", d.choices.projects, "every project", f.project],
  ]) {
    const opts = list.includes(value) || !value ? list : [...list, value];
    $(id).replaceChildren(
      el("option", { value: "", text: label }),
      ...opts.map((v) => el("option", { value: v, text: id === "agent" ? SOURCE_LABEL[v] || v : v, selected: v === value })),
    );
  }
}

function draw(d) {
  stats(d);
  const [first, lastDay] = rangeDays(d);
  heatmap($("heatmap"), d.heatmap, first, lastDay);
  heatLegend($("heat-legend"));
  $("heat-note").textContent = `days and hours in ${d.filters.tz}`;
  const part = (r) => [
    [r.messages, "#3e63dd", "messages"],
    [r.tool_calls, "#30a46c", "tool calls"],
  ];
  const tip = (label, r) => `${label}: ${count(r.activity)} actions (${count(r.messages)} messages, ${count(r.tool_calls)} tool calls)`;
  bars(
    $("hours"),
    d.hours.map((r) => ({ label: String(r.hour).padStart(2, "0"), parts: part(r), tip: tip(`${String(r.hour).padStart(2, "0")}:00`, r) })),
    (v) => fmtTokens(Math.round(v)),
  );
  bars(
    $("weekdays"),
    d.weekdays.map((r) => ({ label: r.name, parts: part(r), tip: tip(r.name, r) })),
    (v) => fmtTokens(Math.round(v)),
  );
  punchcard(
    $("punchcard"),
    d.week_hours,
    d.weekdays.map((r) => r.name),
  );
  top(d);
  tools(d);
  cost(d);
  choices(d);
  csvLinks();
  const notes = [...d.notes];
  if (d.unpriced.length) notes.push(`Unpriced, not in the cost: ${d.unpriced.map((u) => `${u.model} (${fmtTokens(u.tokens)} tokens)`).join(", ")}.`);
  notes.push(`Prices as of ${d.pricing.as_of}, USD list prices. Tokens and cost as huddle usage counts them.`);
  $("notes").textContent = notes.join(" ");
}

let seq = 0;
async function load() {
  write();
  for (const b of document.querySelectorAll(".range [data-days]")) b.classList.toggle("on", !f.from && !f.to && Number(b.dataset.days) === f.days);
  $("from").value = f.from;
  $("to").value = f.to;
  const mine = ++seq;
  const slow = setTimeout(() => {
    if (mine === seq) $("status").textContent = "Counting… (the first time, huddle reads every session once)";
  }, 800);
  try {
    const d = await getJSON(`/api/overview?${query()}`);
    if (mine !== seq) return;
    last = d;
    $("status").textContent = "";
    draw(d);
    requestAnimationFrame(() => {
      if (!performance.getEntriesByName("overview-painted").length) performance.mark("overview-painted");
      document.body.dataset.ready = "1";
    });
  } catch (e) {
    if (mine === seq) $("status").textContent = `huddle: ${e.message}`;
  } finally {
    clearTimeout(slow);
  }
}

function tabs(box, key, redraw) {
  const list = [...box.querySelectorAll("[role=tab]")];
  for (const b of list) {
    b.addEventListener("click", () => {
      f[key] = b.dataset[key === "top" ? "top" : "by"];
      write();
      if (last) redraw(last);
    });
    b.addEventListener("keydown", (ev) => {
      const i = list.indexOf(b);
      const j = ev.key === "ArrowRight" ? (i + 1) % list.length : ev.key === "ArrowLeft" ? (i + list.length - 1) % list.length : -1;
      if (j < 0) return;
      ev.preventDefault();
      list[j].focus();
      list[j].click();
    });
  }
}

async function main() {
  await loadAgents();
  read();
  for (const b of document.querySelectorAll(".range [data-days]")) {
    b.addEventListener("click", () => {
      f.days = Number(b.dataset.days);
      f.from = f.to = "";
      load();
    });
  }
  for (const id of ["from", "to"])
    $(id).addEventListener("change", () => {
      f[id] = $(id).value;
      f.days = null;
      load();
    });
  $("agent").addEventListener("change", () => {
    f.agent = $("agent").value;
    load();
  });
  $("project").addEventListener("change", () => {
    f.project = $("project").value;
    load();
  });
  tabs($("top-tabs"), "top", top);
  tabs($("cost-tabs"), "by", (d) => {
    cost(d);
    csvLinks();
  });
  $("top-tabs").addEventListener("click", () => csvLinks());
  $("tools-more").addEventListener("click", () => {
    allTools = true;
    if (last) tools(last);
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && !typing(ev.target) && !document.querySelector(".palette[open]")) location.href = "/";
  });
  let resize = null;
  window.addEventListener("resize", () => {
    clearTimeout(resize);
    resize = setTimeout(() => last && draw(last), 200);
  });
  await load();
}

main();
