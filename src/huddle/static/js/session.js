// One session: loads its detail and timeline, follows the stream, hosts the tabs.

import { answerBox, answerKey, readOnlyNote, settledLine } from "./answer.js";
import { mountCall } from "./call.js";
import { api, el, fmtCost, fmtDuration, fmtTokens, fmtWhen, loadAgents, parseISO, pill, SOURCE_LABEL, stream, typing } from "./common.js";
import { mountConversation } from "./conversation.js";
import { timeline } from "./model.js";
import { mountReplay } from "./replay.js";
import { renderShare } from "./share.js";
import { mountTree } from "./tree.js";
import { mountVoice } from "./voice.js";

const $ = (id) => document.getElementById(id);
const id = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop() || "");

// Shared state of the page: the tabs read it, session.js keeps it current.
const S = { id, detail: null, events: [], timeline: [], epoch: null, lastSeq: -1, listeners: new Set() };
const TABS = { call: mountCall, tree: mountTree, conversation: mountConversation, replay: mountReplay };
const mounted = {};
let current = null;

function header() {
  const d = S.detail;
  $("s-title").textContent = d.title || d.id;
  $("s-title").title = d.title || d.id;
  $("s-state").replaceWith(Object.assign(pill(d.state), { id: "s-state" }));
  document.title = `${d.state === "needs_you" ? "(!) " : ""}${d.title || d.id} · huddle`;
  const meta = $("s-meta");
  const since = parseISO(d.state_since);
  const started = parseISO(d.started_at);
  meta.replaceChildren(
    el("span", { text: SOURCE_LABEL[d.source] || d.source }),
    d.project ? el("span", { text: d.project, title: d.cwd || "" }) : null,
    started ? el("span", { class: "s-started", text: `started ${fmtWhen(started)}`, title: d.started_at }) : null,
    since ? el("span", { text: `${fmtDuration(Date.now() / 1000 - since)} in state` }) : null,
    el("span", { text: d.usage_unknown ? "tokens unknown" : `${fmtTokens(d.tokens ?? 0)} tokens`, title: d.usage_note || "" }),
    el("span", { text: fmtCost(d.cost) }),
  );
  renderShare($("s-share"), d);
  answerPanel(d.source === "hosted" ? d.answer : null, d.state);
  const w = $("s-waiting");
  w.hidden = !(d.state === "needs_you" && d.waiting_for);
  w.textContent = d.waiting_for ? `Needs you: ${d.waiting_for}` : "";
}

// What is pending for this run, answerable here (from the detail, and at once from each
// board row the stream brings); a session huddle only reads says so when it needs you.
let panelKey = null;
function answerPanel(answer, state) {
  const box = $("s-answer");
  const key = JSON.stringify([answer, state]);
  if (key === panelKey) return;
  if (box.contains(document.activeElement) && answer && (answer.pending || []).length) return; // mid-typing
  panelKey = key;
  const part = answer ? answerBox(id, answer) || settledLine(answer) : state === "needs_you" || state === "your_turn" ? readOnlyNote() : null;
  box.replaceChildren(...(part ? [part] : []));
  box.hidden = !part;
}

async function loadDetail() {
  S.detail = await api.session(id);
  header();
}

async function loadEvents() {
  const all = [];
  let after = -1;
  for (;;) {
    const r = await api.events(id, after, 5000);
    all.push(...r.events);
    S.epoch = r.epoch;
    after = r.next_after;
    if (!r.has_more) break;
  }
  S.events = all;
  S.lastSeq = all.length ? all[all.length - 1].seq : -1;
  S.timeline = timeline(S.events);
}

async function loadAll() {
  await Promise.all([loadDetail(), loadEvents()]);
  changed([], true);
}

function changed(fresh, reset) {
  for (const fn of S.listeners) fn(fresh, reset);
  for (const [name, m] of Object.entries(mounted)) if (name === current) m.update();
}

let catchingUp = false;
async function onEvents(d) {
  if (d.session !== id) return;
  if (d.epoch !== S.epoch) {
    await loadAll();
    return;
  }
  const fresh = d.events.filter((e) => e.seq > S.lastSeq);
  if (!fresh.length) return;
  if (fresh[0].seq !== S.lastSeq + 1) {
    if (catchingUp) return;
    catchingUp = true; // a gap: fetch what is missing from the API
    try {
      await loadEvents();
      changed([], true);
    } finally {
      catchingUp = false;
    }
    return;
  }
  S.events.push(...fresh);
  S.lastSeq = fresh[fresh.length - 1].seq;
  S.timeline = timeline(S.events);
  changed(fresh, false);
  scheduleDetail();
}

let detailTimer = null;
function scheduleDetail() {
  if (detailTimer) return;
  detailTimer = setTimeout(async () => {
    detailTimer = null;
    try {
      await loadDetail();
      changed([], false);
    } catch {
      /* next change retries */
    }
  }, 250);
}

// The hash names the tab, and may carry where to open it: `#conversation?agent=A&ref=R&q=words`
// (a search result) opens that agent's conversation at that message, the words marked.
function route() {
  const raw = location.hash.slice(1);
  const i = raw.indexOf("?");
  const p = new URLSearchParams(i < 0 ? "" : raw.slice(i + 1));
  S.focus = p.get("ref") ? { agent: p.get("agent") || null, ref: p.get("ref"), q: p.get("q") || "" } : null;
  return i < 0 ? raw : raw.slice(0, i);
}

// With no tab named: the call while the session lives, its conversation once it ended
// (an ended call is an empty room; the conversation is what there is to read).
function defaultTab() {
  return S.detail && S.detail.state === "ended" ? "conversation" : "call";
}

function show(name) {
  if (!TABS[name]) name = defaultTab();
  current = name;
  for (const a of document.querySelectorAll(".tabs [role=tab]")) {
    const on = a.dataset.tab === name;
    a.classList.toggle("on", on);
    a.setAttribute("aria-selected", on ? "true" : "false");
    a.tabIndex = on ? 0 : -1; // one tab stop; the arrow keys move between the tabs
  }
  for (const t of Object.keys(TABS)) $(`tab-${t}`).hidden = t !== name;
  if (!mounted[name]) mounted[name] = TABS[name]($(`tab-${name}`), S);
  if (S.detail) mounted[name].show();
}

// The tabs as ARIA tabs: Left/Right (round), Home/End move to a tab and show it.
function tabKeys(ev) {
  const tabs = [...document.querySelectorAll(".tabs [role=tab]")];
  const i = tabs.indexOf(ev.target);
  if (i < 0) return;
  const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[ev.key];
  if (to === undefined) return;
  ev.preventDefault();
  ev.stopPropagation(); // (the replay's own arrow keys are not for a tab)
  const t = tabs[(to + tabs.length) % tabs.length];
  location.hash = t.dataset.tab;
  t.focus();
}

function keys(ev) {
  if (typing(ev.target) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (answerKey(ev, $("s-answer"))) {
    ev.preventDefault();
    return;
  }
  const tabs = { 1: "call", 2: "tree", 3: "conversation", 4: "replay" };
  if (tabs[ev.key]) {
    location.hash = tabs[ev.key];
    ev.preventDefault();
  } else if (ev.key === "Escape") location.href = "/";
}

// The stream is registered on the server when its `hello` arrives: whatever was
// written between the page's first load and that moment is fetched then.
async function catchUp() {
  const r = await api.events(id, S.lastSeq, 5000);
  await onEvents({ session: id, epoch: r.epoch, events: r.events });
  scheduleDetail();
}

async function main() {
  await loadAgents();
  window.addEventListener("hashchange", () => show(route()));
  document.addEventListener("keydown", keys);
  document.querySelector(".tabs .tablist").addEventListener("keydown", tabKeys);
  const ready = loadAll();
  const es = stream(id, {
    hello: () => {
      ready.then(catchUp).catch(() => {});
    },
    events: (d) => {
      // (a fetch this needs may fail: the server restarting. The stream's next hello catches up.)
      ready.then(() => onEvents(d)).catch(() => {});
    },
    board: (d) => {
      const row = (d.sessions || []).find((r) => r.id === id);
      if (!row) return;
      if (row.answer) answerPanel(row.answer, row.state);
      scheduleDetail();
    },
    reset: (d) => {
      if (!d.session || d.session === id) loadAll().catch(() => {});
    },
  });
  mountVoice(S, es, $("s-share")); // (opt-in: a disabled button while voices are off)
  await ready;
  show(route());
}

main().catch((e) => {
  const b = $("s-error");
  b.hidden = false;
  b.textContent = `huddle: ${e.message}`;
  $("s-title").textContent = "Session not found";
});
