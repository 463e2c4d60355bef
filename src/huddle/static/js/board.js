// The board: every session, needs-you first, live.

import { answerBox, answerKey, readOnlyNote, settledLine } from "./answer.js";
import { groupOf, groupOrder, groupRow, noneText, passes, query, setQuery, setupFilters, sortBy, sorting } from "./board-filters.js";
import { loadPins, pinButton, pinFirst, togglePin } from "./board-pins.js";
import {
  agentDot,
  api,
  el,
  fmtCost,
  fmtDay,
  fmtDuration,
  fmtTokens,
  fmtWhen,
  loadAgents,
  now,
  oneLine,
  parseISO,
  pill,
  SOURCE_LABEL,
  stream,
  typing,
} from "./common.js";
import { copyButtons } from "./share.js";

const rows = new Map(); // "source:id" -> row JSON
const trs = new Map(); // "source:id" -> <tr>
let order = [];
let selected = 0;
let notifyOn = localStorage.getItem("huddle.notify") === "1";
const shown = new Map(); // "source:id" -> its browser notification, closed when the wait ends
let loaded = false;
// A long history's board draws its first rows, and more as its end comes into view: the
// 2,900 rows of two years took the page 4 s to draw (55,000 elements, laid out whole).
const PAGE = 250;
let limit = PAGE; // rows drawn (in the board's order)
const fresh = new Set(); // rows that changed while not drawn: they flash if they come into view

const $ = (id) => document.getElementById(id);
const keyOf = (r) => `${r.source}:${r.id}`;

// Each sortable column's value; ties fall to the board's own order (needs you first, newest).
const newest = (a, b) => String(b.updated_at || "").localeCompare(String(a.updated_at || ""));
const urgent = (a, b) => (a.urgency ?? 9) - (b.urgency ?? 9);
const SORT_KEYS = {
  state: urgent,
  last: (a, b) => -newest(a, b),
  tokens: (a, b) => (a.tokens ?? 0) - (b.tokens ?? 0),
  cost: (a, b) => ((a.cost && a.cost.usd) ?? -1) - ((b.cost && b.cost.usd) ?? -1),
  agent: (a, b) => (SOURCE_LABEL[a.source] || a.source || "").localeCompare(SOURCE_LABEL[b.source] || b.source || ""),
  project: (a, b) => (a.project || "").localeCompare(b.project || ""),
};

function sortRows() {
  const f = query().trim().toLowerCase();
  const all = [...rows.values()];
  const byGroup = groupOrder(all) || (() => 0);
  const [key, dir] = sorting();
  const by = SORT_KEYS[key] || urgent;
  const sign = dir === "desc" ? -1 : 1;
  order = all
    .filter((r) => (!f || haystack(r).includes(f)) && passes(r))
    .sort((a, b) => byGroup(a, b) || pinFirst(a, b) || sign * by(a, b) || urgent(a, b) || newest(a, b));
}

// The headers say which column sorts, and which way (aria-sort); a click sorts by it.
function sortHeads() {
  const [key, dir] = sorting();
  for (const th of document.querySelectorAll("#board th[data-sort]")) {
    if (th.dataset.sort === key) th.setAttribute("aria-sort", dir === "desc" ? "descending" : "ascending");
    else th.removeAttribute("aria-sort");
  }
}

// What the filter box searches: the title, project, agent program ("Mistral Vibe"), id,
// and every agent's name ("Bacon", "Explore").
function haystack(r) {
  const agents = (r.agents || []).filter((a) => !a.quiet).map((a) => `${a.label || ""} ${a.name || ""} ${a.type || ""}`);
  return `${r.title} ${r.project} ${r.source} ${SOURCE_LABEL[r.source] || ""} ${r.id} ${agents.join(" ")}`.toLowerCase();
}

function kindOf(r) {
  const n = (r.agents || []).filter((a) => !a.quiet).length;
  const src = SOURCE_LABEL[r.source] || r.source;
  return n > 1 ? `${src} · ${n} agents` : src;
}

function subline(r) {
  if (r.error) return el("span", { class: "t-err", text: oneLine(r.error, 140) });
  if (r.state === "needs_you" && r.waiting_for) return el("span", { class: "t-sub why", text: oneLine(r.waiting_for, 160) });
  if (r.state === "waiting" && r.waiting_for) return el("span", { class: "t-sub wait", text: `waiting on ${oneLine(r.waiting_for, 140)}` });
  if (r.doing) return el("span", { class: "t-sub", text: oneLine(r.doing, 160) });
  if (r.background && r.background.length) return el("span", { class: "t-sub", text: `in the background: ${r.background.join(", ")}` });
  return null;
}

// A run huddle hosts: its pending asks, answerable here; a session it only reads says so
// when it needs you.
function answerPart(r) {
  if (r.answer) return answerBox(r.id, r.answer, { compact: true }) || settledLine(r.answer);
  return r.state === "needs_you" ? readOnlyNote() : null;
}

// A row redrawn while someone types in its answer box keeps that box (the same
// requests pending): what is typed, and where, is not lost to a tick of the board.
function keepTyping(old, tr) {
  const box = old && old.querySelector(".answer");
  const now = tr.querySelector(".answer");
  const focused = document.activeElement;
  if (!box || !now || !box.contains(focused)) return null;
  const reqs = (b) => [...b.querySelectorAll(".ask")].map((x) => x.dataset.request).join(",");
  if (reqs(box) !== reqs(now)) return null;
  now.replaceWith(box);
  return focused;
}

function sinceText(r) {
  const t = parseISO(r.state_since) ?? parseISO(r.updated_at);
  return t ? fmtDuration(now() - t) : "—";
}

function renderRow(r, flash) {
  const key = keyOf(r);
  const tr = el(
    "tr",
    { class: `r-${r.state || "idle"}`, dataset: { key, id: r.id } },
    el("td", { class: "c-state" }, pill(r.state)),
    el(
      "td",
      { class: "c-title" },
      el(
        "div",
        { class: "t-line" }, // the buttons beside the title, never over it
        pinButton(r, repin),
        el("a", { class: "t-title", href: `/session/${encodeURIComponent(r.id)}`, text: r.title || r.id, title: r.title || r.id }),
        el("span", { class: "row-copy" }, copyButtons(r)),
      ),
      subline(r),
      answerPart(r),
    ),
    el("td", { class: "c-kind" }, agentDot(r.source), kindOf(r)),
    el("td", { class: "c-project", text: r.project || "—", title: r.cwd || "" }),
    el("td", { class: "c-since", text: sinceText(r) }),
    el("td", { class: "c-last", text: fmtDay(parseISO(r.updated_at)), title: r.updated_at ? fmtWhen(parseISO(r.updated_at)) : "" }),
    el("td", { class: "c-tokens", text: r.usage_unknown ? "?" : fmtTokens(r.tokens ?? 0), title: r.usage_note || "" }),
    el("td", { class: "c-cost", text: fmtCost(r.cost) }),
  );
  if (flash) tr.classList.add("flash");
  tr.addEventListener("click", (ev) => {
    if (!ev.target.closest("a, button, .answer")) location.href = `/session/${encodeURIComponent(r.id)}`;
  });
  tr.addEventListener("focusin", () => {
    // the keyboard's place is the selection (j/k go on from it)
    const i = order.findIndex((x) => keyOf(x) === key);
    if (i >= 0 && i !== selected) {
      selected = i;
      markSelected();
    }
  });
  const old = trs.get(key);
  const focused = keepTyping(old, tr);
  if (old) old.replaceWith(tr);
  if (focused) focused.focus();
  trs.set(key, tr);
  return tr;
}

// A pin came or went: every row drawn again (its button), pinned ones first.
function repin() {
  for (const key of [...trs.keys()]) if (rows.has(key)) renderRow(rows.get(key), false);
  paint();
  redrawFilters();
}

function paint() {
  sortRows();
  sortHeads();
  const body = $("rows");
  const drawn = order.slice(0, limit);
  const keep = new Set(drawn.map(keyOf));
  for (const [k, tr] of trs)
    if (!keep.has(k)) {
      tr.remove();
      trs.delete(k);
    }
  const want = [];
  let group = null;
  for (const r of drawn) {
    const g = groupOf(r);
    if (g !== null && g !== group) {
      want.push(groupRow(g, order));
      group = g;
    }
    want.push(trs.get(keyOf(r)) || renderRow(r, fresh.has(keyOf(r))));
  }
  fresh.clear();
  if (order.length > drawn.length) want.push(moreRow(order.length - drawn.length));
  want.forEach((tr, i) => {
    if (body.children[i] !== tr) body.insertBefore(tr, body.children[i] || null);
  });
  while (body.children.length > want.length) body.lastChild.remove();
  if (order.length > drawn.length) watchMore();
  else if (seen) seen.disconnect();
  selected = Math.min(selected, Math.max(0, order.length - 1));
  markSelected();
  $("empty").hidden = rows.size > 0 || !loaded;
  const none = rows.size > 0 && !order.length; // (filtered out, or every one archived)
  $("none-match").hidden = !none;
  if (none) $("none-match").textContent = noneText();
  summary();
}

// The row after the drawn ones: how many more there are, a button that draws the next
// page, and drawn by itself once within a screen of the view (scrolling just goes on).
let more = null;
let seen = null;
function moreRow(n) {
  if (!more) {
    const b = el("button", { type: "button", class: "btn" });
    b.addEventListener("click", showMore);
    more = el("tr", { class: "more-row" }, el("td", { colspan: "8" }, b));
  }
  more.querySelector("button").textContent = `Show ${Math.min(PAGE, n)} more (${n.toLocaleString()} not shown)`;
  return more;
}

function showMore(upTo) {
  limit = Math.max(limit + PAGE, typeof upTo === "number" ? upTo : 0);
  paint();
}

function watchMore() {
  if (!("IntersectionObserver" in window)) return;
  seen = seen || new IntersectionObserver((es) => es.some((e) => e.isIntersecting) && showMore(), { rootMargin: "800px" });
  seen.disconnect(); // (observed again: its first report says whether it is in view now)
  seen.observe(more);
}

function markSelected() {
  const on = order[selected] ? trs.get(keyOf(order[selected])) : null;
  for (const tr of trs.values()) tr.classList.toggle("sel", tr === on);
}

function summary() {
  const counts = {};
  for (const r of rows.values()) counts[r.state] = (counts[r.state] || 0) + 1;
  const box = $("summary");
  box.replaceChildren();
  for (const s of ["needs_you", "waiting", "working", "your_turn"]) {
    if (counts[s]) box.append(el("span", {}, el("b", { text: counts[s] }), ` ${s.replace("_", " ")}`));
  }
  if (!box.children.length && rows.size) box.append(el("span", { text: `${rows.size} sessions, nothing needs you` }));
  const n = counts.needs_you || 0;
  document.title = n ? `(${n}) huddle · ${n === 1 ? "1 session needs you" : `${n} sessions need you`}` : "huddle";
}

function notify(r) {
  if (!notifyOn || !("Notification" in window) || Notification.permission !== "granted") return;
  const body = r.waiting_for ? oneLine(r.waiting_for, 180) : "It is waiting for you.";
  const n = new Notification(`${oneLine(r.title || r.id, 60)} needs you`, { body, tag: keyOf(r) });
  n.onclick = () => {
    window.focus();
    location.href = `/session/${encodeURIComponent(r.id)}`;
  };
  shown.set(keyOf(r), n);
}

function answered(key) {
  const n = shown.get(key);
  if (n) {
    n.close();
    shown.delete(key);
  }
}

function apply(data) {
  for (const r of data.sessions || []) {
    const key = keyOf(r);
    const before = rows.get(key);
    rows.set(key, r);
    if (loaded && r.state === "needs_you" && (!before || before.state !== "needs_you")) notify(r);
    if (r.state !== "needs_you") answered(key);
    if (trs.has(key)) renderRow(r, loaded);
    else if (loaded) fresh.add(key); // (drawn by paint if it is in view)
  }
  for (const key of data.removed || []) {
    rows.delete(key);
    answered(key);
  }
  paint();
  redrawFilters();
}

async function load() {
  const data = await api.board();
  rows.clear();
  for (const tr of trs.values()) tr.remove();
  trs.clear();
  fresh.clear();
  limit = PAGE;
  loaded = false;
  apply(data);
  loaded = true;
  paint();
  const notes = $("notes");
  notes.hidden = !(data.notes && data.notes.length);
  notes.textContent = (data.notes || []).join(" · ");
  showUnread(data.files || {});
}

// Files under the agents' folders that no session reads (huddle doctor): how many, and
// which and why once opened.
function showUnread(files) {
  const box = $("unread");
  const n = Object.values(files).reduce((sum, c) => sum + (c.not_read || 0), 0);
  box.hidden = n === 0;
  box.querySelector("summary").textContent = `${n} file${n === 1 ? "" : "s"} not read`;
  box.dataset.loaded = "";
}

async function listUnread() {
  const box = $("unread");
  if (!box.open || box.dataset.loaded) return;
  box.dataset.loaded = "1";
  const list = box.querySelector("ul");
  try {
    const d = await api.doctor();
    list.replaceChildren(
      ...d.agents.flatMap((a) =>
        a.not_read_files.map((f) => el("li", {}, el("span", { class: "muted", text: `${a.label}: ` }), el("code", { text: f.path }), ` ${f.reason}`)),
      ),
    );
  } catch (e) {
    list.replaceChildren(el("li", { text: `huddle doctor: ${e.message}` }));
  }
}

function setupNotify() {
  const b = $("notify");
  const show = () => {
    b.classList.toggle("on", notifyOn);
    b.textContent = notifyOn ? "Notifying" : "Notify me";
  };
  if (!("Notification" in window)) {
    b.hidden = true;
    return;
  }
  show();
  b.addEventListener("click", async () => {
    if (!notifyOn && Notification.permission !== "granted") {
      const p = await Notification.requestPermission();
      if (p !== "granted") return;
    }
    notifyOn = !notifyOn;
    localStorage.setItem("huddle.notify", notifyOn ? "1" : "0");
    show();
  });
}

function keys(ev) {
  if (ev.key === "/" && !typing(ev.target)) {
    ev.preventDefault();
    $("filter").focus();
    return;
  }
  if (ev.key === "Escape" && ev.target === $("filter")) {
    $("filter").value = "";
    setQuery("");
    $("filter").blur();
    paint();
    return;
  }
  if (typing(ev.target)) return;
  const sel = order[selected] ? trs.get(keyOf(order[selected])) : null;
  if (!ev.ctrlKey && !ev.metaKey && !ev.altKey && answerKey(ev, sel)) {
    ev.preventDefault();
    return;
  }
  if (ev.key === "j" || ev.key === "ArrowDown") {
    selected = Math.min(order.length - 1, selected + 1);
    if (selected >= limit) showMore(selected + 1); // (the next page drawn, the selection on it)
    markSelected();
    ev.preventDefault();
  } else if (ev.key === "k" || ev.key === "ArrowUp") {
    selected = Math.max(0, selected - 1);
    markSelected();
    ev.preventDefault();
  } else if (ev.key === "p" && !ev.ctrlKey && !ev.metaKey && !ev.altKey && order[selected]) {
    ev.preventDefault();
    togglePin(order[selected])
      .then(repin)
      .catch(() => {});
  } else if (ev.key === "Enter" && order[selected] && !ev.target.closest("a, button")) location.href = `/session/${encodeURIComponent(order[selected].id)}`; // (a link or a button does its own)
}

function tick() {
  for (const [key, tr] of trs) {
    const r = rows.get(key);
    if (!r) continue;
    const cell = tr.querySelector(".c-since");
    const t = sinceText(r);
    if (cell && cell.textContent !== t) cell.textContent = t;
    const lastCell = tr.querySelector(".c-last");
    const day = fmtDay(parseISO(r.updated_at)); // (today turns to yesterday at midnight)
    if (lastCell && lastCell.textContent !== day) lastCell.textContent = day;
  }
}

let redrawFilters = () => {};

async function main() {
  await loadAgents();
  setupNotify();
  $("unread").addEventListener("toggle", listUnread);
  redrawFilters = setupFilters(
    $("filters"),
    () => [...rows.values()],
    () => {
      $("filter").value = query();
      paint();
    },
  );
  $("filter").value = query();
  for (const th of document.querySelectorAll("#board th[data-sort]")) {
    th.querySelector("button").addEventListener("click", () => {
      sortBy(th.dataset.sort);
      paint();
    });
  }
  $("filter").addEventListener("input", () => {
    setQuery($("filter").value);
    paint();
  });
  document.addEventListener("keydown", keys);
  api
    .info()
    .then((i) => {
      $("demo-badge").hidden = !i.demo;
    })
    .catch(() => {});
  const ready = loadPins()
    .catch(() => {})
    .then(load);
  // Registered on the server at `hello`: reload once then, so no change falls between.
  stream(null, {
    hello: () => {
      ready.then(load).catch(() => {});
    },
    board: (d) => {
      if (loaded) apply(d);
    },
    reset: () => load().catch(() => {}), // (the server restarting: its next hello loads again)
  });
  await ready;
  setInterval(tick, 1000);
}

main().catch((e) => {
  document.body.append(el("p", { class: "error-box", text: `huddle: ${e.message}` }));
});
