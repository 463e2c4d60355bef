// The board's filters (the words typed, state, project, agent, last active, pinned, archived) and grouping by project.
// Archived sessions (a thread its agent put away: Codex's archived_sessions/) are off the
// default view, as they are off Codex's own resume list; the "archived" box shows them.
// Kept out of board.js: the board asks `passes(row)` and `groupOf(row)`, and draws
// the group headers this module makes. The choice lives in the address (?q=&state=...),
// so a filtered board can be bookmarked or shared.

import { isPinned, pinCount } from "./board-pins.js";
import { el, now, parseISO, SOURCE_LABEL, STATE_LABEL } from "./common.js";

const SPANS = { "": "any time", "1h": "last hour", "24h": "last 24 hours", "7d": "last 7 days", "30d": "last 30 days" };
const SPAN_SECONDS = { "1h": 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400 };
const NO_PROJECT = "(no project)";

const f = { states: new Set(), project: "", agent: "", span: "", group: false, q: "", sort: "", dir: "", archived: false, pinned: false };
// The board's sortable columns: a column's first click sorts the way a person looks for
// most (the newest, the biggest first; names A to Z), the next one the other way.
const SORTS = { state: "asc", last: "desc", tokens: "desc", cost: "desc", agent: "asc", project: "asc" };
let onChange = () => {};
const headers = new Map(); // group -> its <tr>

function read() {
  const p = new URLSearchParams(location.search);
  f.states = new Set((p.get("state") || "").split(",").filter((s) => s in STATE_LABEL));
  f.project = p.get("project") || "";
  f.agent = p.get("agent") || "";
  f.span = p.get("active") in SPANS ? p.get("active") : "";
  f.group = p.get("group") === "project";
  f.pinned = p.get("pinned") === "1";
  f.q = p.get("q") || "";
  f.sort = p.get("sort") in SORTS ? p.get("sort") : "";
  f.dir = f.sort && ["asc", "desc"].includes(p.get("dir")) ? p.get("dir") : f.sort ? SORTS[f.sort] : "";
  f.archived = p.get("archived") === "1";
}

function write() {
  const p = new URLSearchParams(location.search);
  const set = (k, v) => (v ? p.set(k, v) : p.delete(k));
  set("state", [...f.states].join(","));
  set("project", f.project);
  set("agent", f.agent);
  set("active", f.span);
  set("group", f.group ? "project" : "");
  set("pinned", f.pinned ? "1" : "");
  set("q", f.q);
  set("sort", f.sort);
  set("dir", f.sort && f.dir !== SORTS[f.sort] ? f.dir : "");
  set("archived", f.archived ? "1" : "");
  const q = p.toString();
  history.replaceState(null, "", `${location.pathname}${q ? `?${q}` : ""}${location.hash}`);
}

export function active() {
  return f.states.size > 0 || !!f.project || !!f.agent || !!f.span || !!f.q || f.pinned;
}

// The sort: [column, "asc"|"desc"] (the board's own order, needs-you first, when none).
export function sorting() {
  return [f.sort || "state", f.sort ? f.dir : "asc"];
}
export function sortBy(key) {
  if (!(key in SORTS)) return;
  const [cur, dir] = sorting();
  f.dir = cur === key ? (dir === "asc" ? "desc" : "asc") : SORTS[key];
  f.sort = key;
  write();
}

// The words typed in the filter box: kept in the address (?q=) with the other filters.
export function query() {
  return f.q;
}
export function setQuery(q) {
  if (q === f.q) return;
  const was = active();
  f.q = q;
  write();
  if (active() !== was) onChange(); // the Clear button comes or goes
}

// What the board says when no row passes: the words, and that other filters are set.
export function noneText() {
  const others = f.states.size > 0 || !!f.project || !!f.agent || !!f.span || f.pinned;
  const words = f.q ? `“${f.q}”` : "";
  if (!words && !others) return "Every session here is archived: tick “archived” to show them.";
  return `No session matches ${[words, others ? "these filters" : ""].filter(Boolean).join(" and ")}.`;
}

export function passes(r) {
  if (r.archived && !f.archived) return false;
  if (f.pinned && !isPinned(`${r.source}:${r.id}`)) return false;
  if (f.states.size && !f.states.has(r.state || "idle")) return false;
  if (f.project && (r.project || NO_PROJECT) !== f.project) return false;
  if (f.agent && r.source !== f.agent) return false;
  if (f.span) {
    const t = parseISO(r.updated_at);
    if (t === null || now() - t > SPAN_SECONDS[f.span]) return false;
  }
  return true;
}

export function groupOf(r) {
  return f.group ? r.project || NO_PROJECT : null;
}

// Sort key when grouping: projects by their most urgent session, then name.
export function groupOrder(rows) {
  if (!f.group) return null;
  const best = new Map();
  for (const r of rows) {
    const g = groupOf(r);
    best.set(g, Math.min(best.get(g) ?? 9, r.urgency ?? 9));
  }
  return (a, b) => {
    const ga = groupOf(a),
      gb = groupOf(b);
    return ga === gb ? 0 : best.get(ga) - best.get(gb) || ga.localeCompare(gb);
  };
}

export function groupRow(g, rows) {
  let tr = headers.get(g);
  if (!tr) {
    tr = el("tr", { class: "group-row", dataset: { group: g } }, el("td", { colspan: "8" }));
    headers.set(g, tr);
  }
  const mine = rows.filter((r) => groupOf(r) === g);
  const needs = mine.filter((r) => r.state === "needs_you").length;
  const parts = [el("span", { class: "g-name", text: g }), el("span", { class: "g-count", text: `${mine.length} session${mine.length === 1 ? "" : "s"}` })];
  if (needs) parts.push(el("span", { class: "g-needs", text: `${needs} need${needs === 1 ? "s" : ""} you` }));
  tr.firstChild.replaceChildren(...parts);
  return tr;
}

function select(id, label, options, value, onpick) {
  const s = el(
    "select",
    { class: "btn", id, "aria-label": label },
    options.map(([v, t]) => el("option", { value: v, text: t, selected: v === value })),
  );
  s.addEventListener("change", () => {
    onpick(s.value);
    write();
    onChange();
  });
  return s;
}

// Draw the filter bar into `box`; `rows()` gives the board's rows (for the choices).
export function setupFilters(box, rows, changed) {
  onChange = () => {
    changed();
    draw(true);
  };
  read();
  let drawn = "";
  function draw(force) {
    const every = rows();
    const all = every.filter((r) => f.archived || !r.archived); // what the choices count
    const nArchived = every.length - every.filter((r) => !r.archived).length;
    const sig = JSON.stringify([
      [...f.states],
      f.project,
      f.agent,
      f.span,
      f.group,
      f.archived,
      f.pinned,
      pinCount(),
      every.map((r) => [r.project, r.source, r.state, !!r.archived]),
    ]);
    if (!force && (sig === drawn || box.contains(document.activeElement))) return; // nothing new, or in use
    drawn = sig;
    const projects = [...new Set(all.map((r) => r.project || NO_PROJECT))].sort();
    if (f.project && !projects.includes(f.project)) projects.push(f.project);
    const agents = [...new Set(all.map((r) => r.source))].sort();
    if (f.agent && !agents.includes(f.agent)) agents.push(f.agent);
    const chips = Object.keys(STATE_LABEL).map((s) => {
      const n = all.filter((r) => (r.state || "idle") === s).length;
      const b = el("button", {
        type: "button",
        class: `btn chip-state s-${s}${f.states.has(s) ? " on" : ""}`,
        dataset: { state: s },
        "aria-pressed": f.states.has(s) ? "true" : "false",
        text: `${STATE_LABEL[s]} ${n}`,
      });
      b.addEventListener("click", () => {
        f.states.has(s) ? f.states.delete(s) : f.states.add(s);
        write();
        onChange();
      });
      return b;
    });
    const pinned = el("button", {
      type: "button",
      class: `btn chip-state chip-pinned${f.pinned ? " on" : ""}`,
      id: "f-pinned",
      "aria-pressed": f.pinned ? "true" : "false",
      text: `Pinned ${all.filter((r) => isPinned(`${r.source}:${r.id}`)).length}`,
    });
    pinned.addEventListener("click", () => {
      f.pinned = !f.pinned;
      write();
      onChange();
    });
    const group = el("input", { type: "checkbox", id: "group-project", checked: f.group });
    group.addEventListener("change", () => {
      f.group = group.checked;
      write();
      onChange();
    });
    const archived = el("input", { type: "checkbox", id: "show-archived", checked: f.archived });
    archived.addEventListener("change", () => {
      f.archived = archived.checked;
      write();
      onChange();
    });
    const clear = el("button", { type: "button", class: "btn", id: "clear-filters", text: "Clear", hidden: !active() });
    clear.addEventListener("click", () => {
      f.states.clear();
      f.project = f.agent = f.span = f.q = "";
      f.pinned = false;
      write();
      onChange();
    });
    box.replaceChildren(
      ...[
        el("div", { class: "chips-states", role: "group", "aria-label": "States" }, chips, pinned),
        select("f-project", "Project", [["", "every project"], ...projects.map((p) => [p, p])], f.project, (v) => {
          f.project = v;
        }),
        select("f-agent", "Agent", [["", "every agent"], ...agents.map((a) => [a, SOURCE_LABEL[a] || a])], f.agent, (v) => {
          f.agent = v;
        }),
        select("f-active", "Last active", Object.entries(SPANS), f.span, (v) => {
          f.span = v;
        }),
        el("label", { class: "muted" }, group, " group by project"),
        nArchived || f.archived ? el("label", { class: "muted" }, archived, ` archived (${nArchived})`) : null,
        clear,
      ].filter(Boolean),
    );
  }
  draw(true);
  return () => draw(false);
}
